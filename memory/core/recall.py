"""Recall assembly (SPEC §6.4, §19.3): the ``### Recalled Memories`` block. Pure.

Four tiers, in order: profile memories (newest first, within their own sub-budget),
pinned candidates (placed by routing but not composed), spilled memories (approved but
left out of the Background by its budget, newest first, within their own sub-budget),
then search hits for the message. A memory already composed into the Background is never
repeated, and none appears twice: an earlier tier keeps it. Whole lines only, each
``- {collapse(content)}``, the heading counted in the budget; a line that does not fit
is skipped and the walk goes on.

No tier brings a memory that reads as an instruction to the model (SPEC §19.4) unless a
person approved it: such a memory would reach the model through recall as surely as
through the prompt. Each candidate that would otherwise take a line is screened (the
screen is pure and linear in the content, and a candidate is screened at most once, so
the work is bounded by the candidates given, never the store); one held back takes no
budget and is named in ``Recall.held``.
The shell (``memory/recall.py``) never offers a superseded, erased or expired memory
(SPEC §19.2: a memory whose validity window has closed leaves recall as it leaves the
prompt).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from lens.core.text import collapse
from memory.core.screening import Screen, screen

HEADING = "### Recalled Memories\n"
DEFAULT_BUDGET_CHARS = 4000
PROFILE_BUDGET_CHARS = 1500
# Spill has a sub-budget of its own, well below the whole, so that an agent with many
# over-budget memories still has room left for what the message's words find.
SPILL_BUDGET_CHARS = 1000

RecallTier = Literal["profile", "pinned", "spilled", "hits"]
# Every tier, in the order the block takes them (and answers list them).
TIERS: tuple[RecallTier, ...] = ("profile", "pinned", "spilled", "hits")


@dataclass(frozen=True, slots=True)
class Candidate:
    id: str
    content: str
    # A person approved this memory (its promotion is approved and names who decided):
    # recalled whatever it reads like. The system's approvals (an auto section, earned
    # sightings) never vouch for a memory's content this way.
    vouched: bool = False


@dataclass(frozen=True, slots=True)
class RecallLine:
    memory_id: str
    tier: RecallTier
    text: str  # the whole line, bullet and newline included


@dataclass(frozen=True, slots=True)
class HeldLine:
    """A line recall left out because its memory reads as an instruction to the model
    and no person approved it: the tier that would have brought it, and why."""

    memory_id: str
    tier: RecallTier
    content: str  # as screened: the screen's signals are spans of it
    screen: Screen


@dataclass(frozen=True)
class Recall:
    lines: tuple[RecallLine, ...] = ()
    # Left out as instructions (SPEC §19.4), in the order the walk met them: for the
    # pages that explain recall; the block and its ids never hold them.
    held: tuple[HeldLine, ...] = ()

    @property
    def text(self) -> str:
        """The block as the prompt gets it; empty when nothing was recalled."""
        return HEADING + "".join(line.text for line in self.lines) if self.lines else ""

    @property
    def memory_ids(self) -> tuple[str, ...]:
        return tuple(line.memory_id for line in self.lines)

    @property
    def tiers(self) -> tuple[tuple[RecallTier, tuple[str, ...]], ...]:
        """Every tier in order with the ids it brought, an empty tier included: a
        reader tells "nothing spilled" from "no such tier" without knowing the list."""
        return tuple(
            (tier, tuple(line.memory_id for line in self.lines if line.tier == tier))
            for tier in TIERS
        )


def line_of(content: str) -> str:
    # collapse: no content can begin a line of the prompt, whoever wrote it.
    return f"- {collapse(content)}\n"


def assemble_recall(
    profile: Iterable[Candidate],
    pinned: Iterable[Candidate],
    hits: Iterable[Candidate],
    composed_ids: frozenset[str] | set[str] = frozenset(),
    budget_chars: int = DEFAULT_BUDGET_CHARS,
    profile_budget_chars: int = PROFILE_BUDGET_CHARS,
    *,
    spilled: Iterable[Candidate] = (),
    spill_budget_chars: int = SPILL_BUDGET_CHARS,
) -> Recall:
    """The recall block from the four tiers, each already in its own order."""
    left = budget_chars - len(HEADING)
    if left <= len(line_of("")):
        return Recall()
    seen = set(composed_ids)
    lines: list[RecallLine] = []
    held: list[HeldLine] = []
    # The tiers with a sub-budget of their own, and what is left of it.
    tier_left: dict[RecallTier, int] = {
        "profile": profile_budget_chars,
        "spilled": spill_budget_chars,
    }
    tiers: tuple[tuple[RecallTier, Iterable[Candidate]], ...] = (
        ("profile", profile),
        ("pinned", pinned),
        ("spilled", spilled),
        ("hits", hits),
    )
    for tier, candidates in tiers:
        for candidate in candidates:
            if candidate.id in seen:
                continue
            text = line_of(candidate.content)
            cost = len(text)
            own = tier_left.get(tier)
            if cost > left or (own is not None and cost > own):
                continue
            # Screened only now, when it would take a line: once a memory is seen it is
            # neither screened nor offered again, held or recalled.
            seen.add(candidate.id)
            if not candidate.vouched:
                found = screen(candidate.content)
                if found.verdict == "instruction":
                    held.append(HeldLine(candidate.id, tier, candidate.content, found))
                    continue
            left -= cost
            if own is not None:
                tier_left[tier] = own - cost
            lines.append(RecallLine(candidate.id, tier, text))
    return Recall(tuple(lines), tuple(held))
