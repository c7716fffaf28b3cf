"""Where a placement leads: the one rule from a section's tier to a promotion outcome.

Saving (the committed outcome), the fold's re-check of committed placements, and the
routing preview all ask this module, so the tier → reason mapping has one home. So does
the rule that the system never approves a memory that reads as an instruction to the
model (``screened``, SPEC §19.4): saving, the preview, re-promotion and migration ask it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from lens.core.background import Tier
from memory.core.report import DeclineReason
from memory.core.routing import Placement, RoutingContext
from memory.core.screening import Screen, screen

OutcomeStatus = Literal["approved", "pending", "declined"]
# Why a memory the system would have approved waits for a person instead.
HoldReason = Literal["instruction-shaped"]
INSTRUCTION_SHAPED: HoldReason = "instruction-shaped"
# Why a memory waits for its sightings (SPEC §19.1).
PendingReason = Literal["earning"]


def tier_block(tier: Tier | None) -> DeclineReason | None:
    """Why memory may not fill a section of ``tier`` (None: no such section), or None.

    An earned section admits the memories that earned their place (and those a person
    approved): its gate is at saving, where a save waits for its sightings."""
    if tier is None:
        return "undeclared-section"
    if tier == "locked":
        return "locked-section"
    return None


@dataclass(frozen=True, slots=True)
class Outcome:
    """The promotion a fresh save gets: its status, the decline reason, and the tier."""

    status: OutcomeStatus
    reason: DeclineReason | PendingReason | HoldReason | None = None
    tier: Tier | None = None


def route_outcome(placement: Placement | None, ctx: RoutingContext) -> Outcome:
    """The outcome of a placement against the current declarations (SPEC §5.4)."""
    if placement is None:
        return Outcome("declined", "spec-declined")
    section = ctx.section(placement.section)
    tier = section.promotion if section is not None else None
    if (reason := tier_block(tier)) is not None:
        return Outcome("declined", reason, tier)
    if tier == "earned":
        # Waits for sightings in other sessions (SPEC §19.1), out of the queue's default view.
        return Outcome("pending", "earning", tier)
    return Outcome("approved" if tier == "auto" else "pending", None, tier)


def system_may_approve(found: Screen) -> bool:
    """The one rule (SPEC §19.4): the system never approves a memory screened as an
    instruction to the model; only a person may. Every path where the system would
    approve (an auto section, an earned section's sightings, re-promotion) asks this."""
    return found.verdict != "instruction"


def screened(
    outcome: Outcome,
    content: str,
    found: Screen | None = None,
    *,
    screener: Callable[[str], Screen] = screen,
) -> Outcome:
    """``outcome`` with the screen applied: an approval the system would make for an
    instruction-shaped ``content`` (at once, or on sightings) becomes ``pending`` with
    reason ``instruction-shaped`` (into the human queue); every other outcome is
    unchanged. Pass ``found`` when the content was screened already; ``screener`` (the
    screen by default) is asked only when the outcome is an approval to check."""
    # An approval the system makes now (auto), or one its sightings would make later
    # (earned, SPEC §19.1): either way a person decides an instruction instead.
    if outcome.status != "approved" and outcome.reason != "earning":
        return outcome
    if system_may_approve(found if found is not None else screener(content)):
        return outcome
    return Outcome("pending", INSTRUCTION_SHAPED, outcome.tier)
