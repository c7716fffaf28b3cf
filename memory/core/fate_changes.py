"""Which memories a change of declarations moves into, out of or around the prompt
(SPEC §14). Pure.

Two compositions of one agent's memories as they are now, under the config in force and
under a proposed one, can differ in which memories they compose and where. A memory's
fate changes when it enters the prompt, leaves it, or shows under another section than
before; each side is said in the lens's own words (``memory.core.explain``, SPEC §5.6).

Only approved, placed memories can change fate: every other reason to be left out
(pending, rejected, superseded, declined at save time...) comes from the memory's own
promotion row, which declarations never touch. So the placed records both compositions
were folded from hold every memory that can appear here, with its content.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from lens.core.text import value_text
from memory.core.composition import Composition
from memory.core.explain import UNREADABLE, Explanation, Facts, explain
from memory.core.impact import named
from memory.core.overlay import entry_cost
from memory.core.routing import PlacedRecord, RoutingSpec

Change = Literal["dropped", "composed", "moved"]
# Leaving the prompt first: it is what a reviewer most needs to see.
_ORDER: dict[Change, int] = {"dropped": 0, "composed": 1, "moved": 2}

_Address = tuple[str, str]  # (section id, key)
_Place = tuple[str, str, str]  # (section id, section title, key)


@dataclass(frozen=True)
class Side:
    """One of the two compositions compared, with the routing spec that folded it (an
    entry's cost and the spec named in the words are that spec's)."""

    composition: Composition
    spec: RoutingSpec | None


@dataclass(frozen=True, slots=True)
class FateChange:
    """One memory whose fate differs between the two sides: where it is or why it is
    left out, before and after."""

    memory_id: str
    change: Change
    kind: str
    words: str  # the memory named in a sentence: “label: content”, cut
    before: Explanation
    after: Explanation


@dataclass(frozen=True)
class Fates:
    """The first fate changes (at most the limit asked for) and how many there are."""

    changes: tuple[FateChange, ...]
    total: int
    # How many of each change there are, of all of them.
    counts: dict[Change, int]

    @property
    def more(self) -> int:
        return self.total - len(self.changes)


def fate_changes(
    before: Side,
    after: Side,
    placed: Sequence[PlacedRecord],
    *,
    agent: str,
    budget: int,
    limit: int,
) -> Fates:
    """Every memory composed on one side and not the other, or under another section,
    counted; the first ``limit`` of them (leaving first, then entering, then moving;
    by memory id within each) explained on both sides.

    ``placed`` are the records both sides were folded from; ``budget`` is the memory
    budget in characters they were folded with. Linear in the memories: an agent of
    thousands costs one pass, and only the changes shown are put in words.
    """
    was, now = _composed(before.composition), _composed(after.composition)
    found: list[tuple[int, str, Change]] = []
    for memory_id in was.keys() | now.keys():
        old, new = was.get(memory_id), now.get(memory_id)
        if new is None:
            change: Change = "dropped"
        elif old is None:
            change = "composed"
        elif old[:2] != new[:2]:
            change = "moved"  # another section, or the same one under another title
        else:
            continue
        found.append((_ORDER[change], memory_id, change))
    found.sort()
    counts: dict[Change, int] = dict.fromkeys(_ORDER, 0)
    for _order, _memory_id, change in found:
        counts[change] += 1
    shown = found[: max(limit, 0)]
    if not shown:
        return Fates((), len(found), counts)
    # One pass over the records: a reconciled memory's sentence names the holder of its
    # address, which is any placed record.
    records = {record.id: record for record in placed}
    sides = (_Said(before, was, budget, agent, records), _Said(after, now, budget, agent, records))
    changes = []
    for _order, memory_id, change in shown:
        record = records.get(memory_id)
        if record is None:  # composed, so placed: never happens, but never raise on data
            continue
        changes.append(
            FateChange(
                memory_id,
                change,
                record.kind,
                named(record.label, record.content),
                sides[0].explain(record),
                sides[1].explain(record),
            )
        )
    return Fates(tuple(changes), len(found), counts)


def _composed(composition: Composition) -> dict[str, _Place]:
    """Each composed memory's place: section id, section title, key."""
    return {
        memory_id: (section.id, section.title, entry.key)
        for section in composition.background.sections
        for entry in section.entries
        for memory_id in entry.memory_ids
    }


class _Said:
    """What one side's sentences draw on: its sections, authored entries, the holder of
    each address and what is left of the budget."""

    def __init__(
        self,
        side: Side,
        composed: dict[str, _Place],
        budget: int,
        agent: str,
        records: dict[str, PlacedRecord],
    ) -> None:
        composition = side.composition
        self.spec = side.spec
        self.composed = composed
        self.agent = agent
        self.records = records
        self.budget = budget
        self.left = budget - composition.report.stats.chars_used.get("background", 0)
        background = composition.background
        self.sections = {section.id: section for section in background.sections}
        self.authored: dict[_Address, str] = {
            (section.id, entry.key): value_text(entry.value)
            for section in background.sections
            for entry in section.entries
            if not entry.memory_ids
        }
        self.holders: dict[_Address, str] = {}
        for memory_id, (section_id, _title, key) in sorted(composed.items()):
            self.holders.setdefault((section_id, key), memory_id)
        self.reasons = {drop.memory_id: drop.reason for drop in composition.report.drops}

    def explain(self, record: PlacedRecord) -> Explanation:
        place = self.composed.get(record.id)
        section, key = record.section, record.key
        declared = self.sections.get(section)
        title = declared.title if declared is not None else None
        tier = declared.promotion if declared is not None else None
        if place is not None:
            section, title, key = place
            return explain(
                Facts(record.id, None, record.kind, self.agent, section, title, key, tier)
            )
        reason = self.reasons.get(record.id, UNREADABLE)
        facts = Facts(
            record.id,
            reason,
            record.kind,
            self.agent,
            section,
            title,
            key,
            tier,
            **self._detail(reason, record),
        )
        return explain(facts)

    def _detail(self, reason: str, record: PlacedRecord) -> dict[str, Any]:
        """The facts only ``reason``'s sentence needs (the fold's reasons: the others
        never differ between two configs)."""
        address = (record.section, record.key)
        match reason:
            case "authored-wins":
                return {"authored_value": self.authored.get(address)}
            case "reconciled":
                holder = self.holders.get(address)
                if holder is None:
                    return {}
                found = self.records.get(holder)
                words = (found.content.strip() or found.label) if found is not None else None
                return {"other_id": holder, "other_words": words}
            case "over-budget":
                return {
                    "needed": entry_cost(record, self.spec),
                    "left": max(self.left, 0),
                    "budget": self.budget,
                }
        return {}
