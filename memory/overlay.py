"""The overlay fold: approved memories into the authored Background. Pure and total.

``apply_memory_overlay`` never raises on data and gives the same result for every
permutation of ``placed``: every order-sensitive step sorts on a total key first.
It deliberately does not use ``Background.merge``: merging would let a memory replace
an authored entry, and authored entries always win.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from operator import attrgetter

from lens.core.background import Background, BackgroundEntry, BackgroundSection
from lens.core.text import collapse
from memory.report import Drop, DropReason, ReportStats, RoutingReport
from memory.routing import OverlayPlan, PlacedRecord, RoutingSpec, spec_reconcile, spec_render_entry

DEFAULT_BUDGET_CHARS = 3000
_DROP_ORDER = attrgetter("memory_id", "reason")


def _when(moment: datetime) -> float:
    """A sort key for ``created_at``. Float seconds are exact enough: before 2106,
    adjacent doubles are 2**-22 s apart, finer than the microseconds stored, and
    rounding is monotonic, so distinct instants keep their order.
    """
    return (moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)).timestamp()


@dataclass(frozen=True, slots=True)
class _Candidate:
    """One composed-entry-to-be: the winning record plus any corroborating ones."""

    winner: PlacedRecord
    when: float  # the winner's created_at
    memory_ids: tuple[str, ...]


def _line_cost(key: str, value: str) -> int:
    """Code points of the rendered line: len(lens.core.render.entry_line(...))."""
    return len(collapse(key)) + len(collapse(value)) + _LINE_OVERHEAD


_LINE_OVERHEAD = len("- ****: \n")
# A key has at least one character; a value may be empty.
_SHORTEST_LINE = _LINE_OVERHEAD + 1


def _reconcile(
    group: list[tuple[float, PlacedRecord]], spec: RoutingSpec | None, drops: list[Drop]
) -> tuple[float, PlacedRecord, tuple[str, ...]]:
    """The winner of one address and the ids it carries; losers are dropped.

    ``group`` is sorted newest first, ties to the smaller id (plain string order).
    """
    when, winner = group[0]
    ids = [winner.id]
    decide = spec_reconcile(spec)
    for challenger_when, challenger in group[1:]:
        verdict = decide(winner.routable(), challenger.routable()) if decide else "a"
        if verdict == "both":
            ids.append(challenger.id)  # corroboration: the newest value, both ids
        elif verdict == "b":
            drops.extend(Drop(mid, "reconciled") for mid in ids)
            when, winner, ids = challenger_when, challenger, [challenger.id]
        else:
            drops.append(Drop(challenger.id, "reconciled"))
    return when, winner, tuple(sorted(ids))


def _identity(record: PlacedRecord) -> tuple[str, str, str, float]:
    return (record.section, record.key, record.content, _when(record.created_at))


def _recheck(record: PlacedRecord, declared: dict[str, BackgroundSection]) -> DropReason | None:
    """Re-check a committed placement against the current declarations."""
    section = declared.get(record.section)
    if section is None:
        return "undeclared-section"
    if section.promotion == "locked":
        return "locked-section"
    if section.promotion == "earned":
        return "earned-inert"
    if section.entry(record.key) is not None:
        return "authored-wins"
    return None


def apply_memory_overlay(
    background: Background,
    placed: Iterable[PlacedRecord],
    spec: RoutingSpec | None = None,
    budget_chars: int = DEFAULT_BUDGET_CHARS,
) -> tuple[Background, RoutingReport]:
    """Compose ``placed`` into ``background``; report every record left out and why."""
    records: dict[str, PlacedRecord] = {}
    for record in placed:
        # Ids are unique in practice; should two records share one, keep the same one
        # whatever the input order, so the fold stays order-independent.
        seen = records.get(record.id)
        if seen is None or _identity(record) < _identity(seen):
            records[record.id] = record
    drops: list[Drop] = []
    declared = {section.id: section for section in background.sections}
    # Sections memory may fill, with the keys their authored entries hold.
    open_keys = {
        s.id: {e.key for e in s.entries}
        for s in background.sections
        if s.promotion in ("auto", "guarded")
    }

    # 1. Placements whose section or tier no longer admits them, or whose key an
    #    authored entry holds, are reported; the rest are grouped by address.
    survivors: dict[tuple[str, str], list[tuple[float, PlacedRecord]]] = defaultdict(list)
    for record in records.values():
        authored = open_keys.get(record.section)
        if authored is not None and record.key not in authored:
            # (section, key) is the address: the same pair placement_key encodes.
            survivors[(record.section, record.key)].append((_when(record.created_at), record))
        else:
            drops.append(Drop(record.id, _recheck(record, declared) or "authored-wins"))

    # 2. One entry per address: reconcile, or newest wins (ties to the smaller id).
    candidates: list[_Candidate] = []
    for group in survivors.values():
        if len(group) == 1:
            when, winner = group[0]
            candidates.append(_Candidate(winner, when, (winner.id,)))
            continue
        group.sort(key=lambda item: (-item[0], item[1].id))
        when, winner, ids = _reconcile(group, spec, drops)
        candidates.append(_Candidate(winner, when, ids))

    # 3. The spec's finalize hook may leave placed records out (default: keep all).
    finalize = getattr(spec, "finalize", None)
    if finalize is not None:
        interim = RoutingReport.model_construct(drops=tuple(drops), stats=ReportStats())
        ordered = tuple(sorted(records.values(), key=lambda r: r.id))
        plan: OverlayPlan = finalize(ordered, interim)
        kept = []
        for candidate in candidates:
            if plan.drop.intersection(candidate.memory_ids):
                drops.extend(Drop(mid, "reconciled") for mid in candidate.memory_ids)
            else:
                kept.append(candidate)
        candidates = kept

    # 4. Budget: whole entries only, in keep priority (more ids, newer, smaller id).
    #    Entries are rendered lazily: once the budget cannot fit even the shortest
    #    line, the rest are over budget without rendering them at all.
    used = 0
    composed: list[tuple[_Candidate, str]] = []
    candidates.sort(key=lambda c: (-len(c.memory_ids), -c.when, c.winner.id))
    for candidate in candidates:
        if budget_chars - used >= _SHORTEST_LINE:
            value = spec_render_entry(spec, candidate.winner)
            cost = _line_cost(candidate.winner.key, value)
            if used + cost <= budget_chars:
                used += cost
                composed.append((candidate, value))
                continue
        drops.extend(Drop(mid, "over-budget") for mid in candidate.memory_ids)

    # 5. Memory entries follow their section's authored entries, oldest first.
    composed.sort(key=lambda item: (item[0].when, item[0].winner.id))
    by_section: dict[str, list[BackgroundEntry]] = defaultdict(list)
    for candidate, value in composed:
        by_section[candidate.winner.section].append(
            BackgroundEntry.model_construct(
                key=candidate.winner.key, value=value, memory_ids=candidate.memory_ids
            )
        )
    sections = tuple(
        section
        if section.id not in by_section
        else section.model_copy(update={"entries": section.entries + tuple(by_section[section.id])})
        for section in background.sections
    )

    drops.sort(key=_DROP_ORDER)
    stats = ReportStats(
        placed=len(records),
        composed=sum(len(c.memory_ids) for c, _value in composed),
        drops_by_reason=dict(sorted(Counter(d.reason for d in drops).items())),
        chars_used={"background": used},
    )
    composed_background = Background.model_construct(sections=sections)
    return composed_background, RoutingReport.model_construct(drops=tuple(drops), stats=stats)
