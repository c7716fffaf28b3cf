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
from datetime import UTC, datetime, timedelta

from lens.core.background import Background, BackgroundEntry, BackgroundSection
from lens.core.render import entry_line
from memory.report import Drop, DropReason, ReportStats, RoutingReport
from memory.routing import (
    OverlayPlan,
    PlacedRecord,
    RoutingSpec,
    spec_reconcile,
    spec_render_entry,
)

DEFAULT_BUDGET_CHARS = 3000


@dataclass(frozen=True)
class _Candidate:
    """One composed-entry-to-be: the winning record plus any corroborating ones."""

    winner: PlacedRecord
    memory_ids: tuple[str, ...]
    entry: BackgroundEntry
    cost: int  # code points of the rendered line, prefix and newline included


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def _micros(moment: datetime) -> int:
    # Exact integer microseconds: a float timestamp loses precision at this scale.
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return (aware - _EPOCH) // _MICROSECOND


def _newest_first(record: PlacedRecord) -> tuple[int, str]:
    # Newest created_at first; ties to the smaller id (plain string order).
    return (-_micros(record.created_at), record.id)


def _sort_key(record: PlacedRecord) -> tuple[int, str]:
    return (_micros(record.created_at), record.id)


def _reconcile(
    group: list[PlacedRecord], spec: RoutingSpec | None, drops: list[Drop]
) -> tuple[PlacedRecord, tuple[str, ...]]:
    """The winner of one placement_key and the ids it carries; losers are dropped."""
    ordered = sorted(group, key=_newest_first)
    winner, ids = ordered[0], [ordered[0].id]
    decide = spec_reconcile(spec)
    for challenger in ordered[1:]:
        verdict = decide(winner.routable(), challenger.routable()) if decide else "a"
        if verdict == "both":
            ids.append(challenger.id)  # corroboration: the newest value, both ids
        elif verdict == "b":
            drops.extend(Drop(memory_id=mid, reason="reconciled") for mid in ids)
            winner, ids = challenger, [challenger.id]
        else:
            drops.append(Drop(memory_id=challenger.id, reason="reconciled"))
    return winner, tuple(sorted(ids))


def apply_memory_overlay(
    background: Background,
    placed: Iterable[PlacedRecord],
    spec: RoutingSpec | None = None,
    budget_chars: int = DEFAULT_BUDGET_CHARS,
) -> tuple[Background, RoutingReport]:
    """Compose ``placed`` into ``background``; report every record left out and why."""
    records = sorted({record.id: record for record in placed}.values(), key=lambda r: r.id)
    drops: list[Drop] = []
    declared = {section.id: section for section in background.sections}

    # 1. Re-check each committed placement against the current declarations.
    survivors: dict[str, list[PlacedRecord]] = defaultdict(list)
    for record in records:
        section = declared.get(record.section)
        reason: DropReason | None = None
        if section is None:
            reason = "undeclared-section"
        elif section.promotion == "locked":
            reason = "locked-section"
        elif section.promotion == "earned":
            reason = "earned-inert"
        elif section.entry(record.key) is not None:
            reason = "authored-wins"
        if reason is None:
            survivors[record.placement_key].append(record)
        else:
            drops.append(Drop(memory_id=record.id, reason=reason))

    # 2. One entry per address: reconcile, or newest wins (ties to the smaller id).
    candidates: list[_Candidate] = []
    for address in sorted(survivors):
        winner, ids = _reconcile(survivors[address], spec, drops)
        entry = BackgroundEntry.model_construct(
            key=winner.key, value=spec_render_entry(spec, winner), memory_ids=ids
        )
        candidates.append(_Candidate(winner, ids, entry, len(entry_line(entry))))

    # 3. The spec's finalize hook may leave placed records out (default: keep all).
    finalize = getattr(spec, "finalize", None)
    if finalize is not None:
        interim = RoutingReport(drops=tuple(drops))
        plan: OverlayPlan = finalize(tuple(records), interim)
        kept: list[_Candidate] = []
        for candidate in candidates:
            if set(candidate.memory_ids) & plan.drop:
                drops.extend(Drop(memory_id=m, reason="reconciled") for m in candidate.memory_ids)
            else:
                kept.append(candidate)
        candidates = kept

    # 4. Budget: whole entries only, in keep priority (more ids, newer, smaller id).
    used = 0
    composed: list[_Candidate] = []
    priority = sorted(
        candidates,
        key=lambda c: (-len(c.memory_ids), *_newest_first(c.winner)),
    )
    for candidate in priority:
        if used + candidate.cost <= budget_chars:
            used += candidate.cost
            composed.append(candidate)
        else:
            drops.extend(Drop(memory_id=m, reason="over-budget") for m in candidate.memory_ids)

    # 5. Memory entries follow their section's authored entries, oldest first.
    by_section: dict[str, list[_Candidate]] = defaultdict(list)
    for candidate in sorted(composed, key=lambda c: _sort_key(c.winner)):
        by_section[candidate.winner.section].append(candidate)
    sections = tuple(
        section
        if section.id not in by_section
        else BackgroundSection.model_construct(
            id=section.id,
            title=section.title,
            promotion=section.promotion,
            entries=section.entries + tuple(c.entry for c in by_section[section.id]),
        )
        for section in background.sections
    )

    drops.sort(key=lambda d: (d.memory_id, d.reason))
    stats = ReportStats(
        placed=len(records),
        composed=sum(len(c.memory_ids) for c in composed),
        drops_by_reason=dict(sorted(Counter(d.reason for d in drops).items())),
        chars_used={"background": used},
    )
    return Background.model_construct(sections=sections), RoutingReport(
        drops=tuple(drops), stats=stats
    )
