"""Where a placement leads: the one rule from a section's tier to a promotion outcome.

Saving (the committed outcome), the fold's re-check of committed placements, and the
routing preview all ask this module, so the tier → reason mapping has one home.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from lens.core.background import Tier
from memory.core.report import DeclineReason
from memory.core.routing import Placement, RoutingContext

OutcomeStatus = Literal["approved", "pending", "declined"]
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
    reason: DeclineReason | PendingReason | None = None
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
