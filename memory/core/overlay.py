"""The overlay fold: approved memories into the authored Background. Pure and total.

``apply_memory_overlay`` never raises on data and gives the same result for every
permutation of ``placed``: every order-sensitive step sorts on a total key first.
It deliberately does not use ``Background.merge``: merging would let a memory replace
an authored entry, and authored entries always win.
"""

from __future__ import annotations

import gc
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import UTC, datetime
from operator import attrgetter, itemgetter

from lens.core.background import Background, BackgroundEntry, BackgroundSection
from lens.core.identity import key_skeleton
from lens.core.render import ENTRY_LINE_OVERHEAD
from lens.core.text import collapse
from memory.core.outcome import tier_block
from memory.core.report import Drop, DropReason, ReportStats, RoutingReport
from memory.core.routing import (
    OverlayPlan,
    PlacedRecord,
    RoutingSpec,
    spec_reconcile,
    spec_render_entry,
)

DEFAULT_BUDGET_CHARS = 3000
# Each record is dropped at most once, so its id alone orders the drops totally.
_DROP_ORDER = attrgetter("memory_id")


def _when(moment: datetime) -> float:
    """A sort key for ``created_at``. Float seconds are exact enough: before 2106,
    adjacent doubles are 2**-22 s apart, finer than the microseconds stored, and
    rounding is monotonic, so distinct instants keep their order.
    """
    return (moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)).timestamp()


# (-created_at, winner id, winner, memory_ids): a tuple, so that it is its own sort
# key and costs one allocation per address.
_Candidate = tuple[float, str, PlacedRecord, tuple[str, ...]]
_OLDEST_FIRST = itemgetter(0, 1)


def _renderer(spec: RoutingSpec | None) -> Callable[[PlacedRecord], str]:
    """The entry value of a placed record: the spec's render_entry, or its content."""
    if getattr(spec, "render_entry", None) is None:
        return attrgetter("content")
    return lambda placed: spec_render_entry(spec, placed)


def entry_cost(placed: PlacedRecord, spec: RoutingSpec | None) -> int:
    """The characters a placed record's entry line takes from the memory budget."""
    return len(collapse(placed.key)) + len(collapse(_renderer(spec)(placed))) + ENTRY_LINE_OVERHEAD


# A key has at least one character; a value may be empty.
_SHORTEST_LINE = ENTRY_LINE_OVERHEAD + 1


def _reconcile(
    group: list[tuple[float, PlacedRecord]], spec: RoutingSpec | None, drops: list[Drop]
) -> tuple[float, PlacedRecord, tuple[str, ...]]:
    """The winner of one address and the ids it carries; losers are dropped.

    ``group`` is sorted newest first, ties to the smaller id (plain string order).
    """
    when, winner = group[0]
    ids = [winner.id, *winner.sightings]
    decide = spec_reconcile(spec)
    for challenger_when, challenger in group[1:]:
        verdict = decide(winner.routable(), challenger.routable()) if decide else "a"
        if verdict == "both":
            # corroboration: the newest value, both ids (and their sightings)
            ids.extend((challenger.id, *challenger.sightings))
        elif verdict == "b":
            drops.extend(Drop(mid, "reconciled") for mid in ids)
            when, winner = challenger_when, challenger
            ids = [challenger.id, *challenger.sightings]
        else:
            drops.extend(Drop(mid, "reconciled") for mid in (challenger.id, *challenger.sightings))
    return when, winner, tuple(sorted(ids))


def _identity(record: PlacedRecord) -> tuple[str, str, str, float, float]:
    until = record.valid_until
    return (
        record.section,
        record.key,
        record.content,
        _when(record.created_at),
        _when(until) if until is not None else float("inf"),
    )


def _recheck(record: PlacedRecord, declared: dict[str, BackgroundSection]) -> DropReason:
    """Why a committed placement no longer lands, against the current declarations
    (called only for placements that do not land).
    """
    section = declared.get(record.section)
    return tier_block(section.promotion if section is not None else None) or "authored-wins"


def apply_memory_overlay(
    background: Background,
    placed: Iterable[PlacedRecord],
    spec: RoutingSpec | None = None,
    budget_chars: int = DEFAULT_BUDGET_CHARS,
    *,
    now: datetime | None = None,
) -> tuple[Background, RoutingReport]:
    """Compose ``placed`` into ``background``; report every record left out and why.

    ``now`` is the fold's time: a record whose ``valid_until`` is at or before it is
    dropped ``expired``, before any other check, and so is a sighting whose own window
    (``sighting_windows``) has closed: it leaves its holder's line, which stays. The fold reads no clock, so every
    composer passes it (its moment, for a composition as of a moment); without it (a
    pure computation with no time of its own, such as a test) nothing expires.
    """
    # The fold allocates a few small objects per record and creates no reference
    # cycles, so reference counting frees all of it. Pausing the cyclic collector stops
    # it rescanning the whole heap mid-fold: half the time at 10,000 records.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _fold(background, placed, spec, budget_chars, now)
    finally:
        if collecting:
            gc.enable()


_Address = tuple[str, str]  # (section, key): what placement_key encodes
_Composed = tuple[float, str, PlacedRecord, tuple[str, ...], str]


def _fold(
    background: Background,
    placed: Iterable[PlacedRecord],
    spec: RoutingSpec | None,
    budget_chars: int,
    now: datetime | None,
) -> tuple[Background, RoutingReport]:
    records = _unique(placed)
    sighted = _claim_sightings(records)
    drops: list[Drop] = []
    if sighted and now is not None:
        # Sightings whose own window has closed leave their holder's line first, and
        # stay ``expired`` whatever becomes of the holder.
        sighted -= _lapsed_sightings(records, _when(now), drops)
    survivors = _admitted(background, records, drops, now)
    buckets = _candidates(survivors, spec, drops)
    _finalize(spec, records, buckets, drops)
    composed, used = _within_budget(buckets, spec, budget_chars, drops)
    if sighted:
        # A sighting left out with its holder is reported as such (SPEC §5.6).
        drops = [Drop(d.memory_id, "corroborating") if d.memory_id in sighted else d for d in drops]
    drops.sort(key=_DROP_ORDER)
    stats = ReportStats(
        placed=len(records),
        composed=sum(len(item[3]) for item in composed),
        drops_by_reason=dict(sorted(Counter(d.reason for d in drops).items())),
        chars_used={"background": used},
    )
    return _assemble(background, composed), RoutingReport.model_construct(
        drops=tuple(drops), stats=stats
    )


def _admitted(
    background: Background,
    records: dict[str, PlacedRecord],
    drops: list[Drop],
    now: datetime | None,
) -> dict[_Address, list[tuple[float, PlacedRecord]]]:
    """1. Records whose window has closed at ``now`` are dropped ``expired`` (first:
    SPEC §5.6 judges expiry before the rest); then placements whose section or tier no
    longer admits them, or whose key an authored entry holds; the rest are grouped by
    address.
    """
    moment = None if now is None else _when(now)
    declared = {section.id: section for section in background.sections}
    open_keys = _open_keys(background)
    survivors: dict[_Address, list[tuple[float, PlacedRecord]]] = {}
    for record in records.values():
        if (
            moment is not None
            and record.valid_until is not None
            and _when(record.valid_until) <= moment
        ):
            drops.append(Drop(record.id, "expired"))
            # Its sightings leave with it (reported ``corroborating``, as in every
            # other drop of a holder): none is in a fragment, so none may go unreported.
            drops.extend(Drop(mid, "expired") for mid in record.sightings)
            continue
        authored = open_keys.get(record.section)
        if authored is not None and not (authored and key_skeleton(record.key) in authored):
            address = (record.section, record.key)
            item = (_when(record.created_at), record)
            group = survivors.get(address)
            if group is None:
                survivors[address] = [item]
            else:
                group.append(item)
        else:
            reason = _recheck(record, declared)
            drops.append(Drop(record.id, reason))
            drops.extend(Drop(mid, reason) for mid in record.sightings)
    return survivors


# Each Background's open sections and their authored keys, by the Background they were
# read from (as ``lens.core.render`` keeps lines): a stored config is validated once and
# reused, and what-if folds one agent's Background dozens of times.
_OPEN_KEYS: dict[int, tuple[Background, dict[str, frozenset[str]]]] = {}
_OPEN_KEYS_MAX = 1 << 8


def _open_keys(background: Background) -> dict[str, frozenset[str]]:
    """Sections memory may fill, with the keys their authored entries hold, compared as
    names (confusable skeletons): an authored "Name" or Cyrillic "nаme" holds the
    memory key "name" too, since both lines would read the same."""
    found = _OPEN_KEYS.get(id(background))
    if found is not None and found[0] is background:
        return found[1]
    keys = {
        s.id: frozenset(key_skeleton(e.key) for e in s.entries)
        for s in background.sections
        if tier_block(s.promotion) is None
    }
    if len(_OPEN_KEYS) >= _OPEN_KEYS_MAX:
        _OPEN_KEYS.clear()
    _OPEN_KEYS[id(background)] = (background, keys)
    return keys


def _candidates(
    survivors: dict[_Address, list[tuple[float, PlacedRecord]]],
    spec: RoutingSpec | None,
    drops: list[Drop],
) -> dict[int, list[_Candidate]]:
    """2. One candidate entry per address: reconcile, or newest wins (ties to the
    smaller id). A candidate, (-created_at, winner id, winner, memory_ids), is its own
    sort key within its bucket (ids are unique, so records are never compared); buckets
    hold candidates by how many memories support them.
    """
    buckets: dict[int, list[_Candidate]] = defaultdict(list)
    for group in survivors.values():
        if len(group) == 1:
            when, winner = group[0]
            if winner.sightings:
                ids = tuple(sorted((winner.id, *winner.sightings)))
                buckets[len(ids)].append((-when, winner.id, winner, ids))
            else:
                buckets[1].append((-when, winner.id, winner, (winner.id,)))
            continue
        group.sort(key=lambda item: (-item[0], item[1].id))
        when, winner, ids = _reconcile(group, spec, drops)
        buckets[len(ids)].append((-when, winner.id, winner, ids))
    return buckets


def _finalize(
    spec: RoutingSpec | None,
    records: dict[str, PlacedRecord],
    buckets: dict[int, list[_Candidate]],
    drops: list[Drop],
) -> None:
    """3. The spec's finalize hook may leave placed records out (default: keep all)."""
    finalize = getattr(spec, "finalize", None)
    if finalize is None:
        return
    interim = RoutingReport.model_construct(drops=tuple(drops), stats=ReportStats())
    ordered = tuple(sorted(records.values(), key=lambda r: r.id))
    plan: OverlayPlan = finalize(ordered, interim)
    for size, bucket in buckets.items():
        kept = []
        for candidate in bucket:
            if plan.drop.intersection(candidate[3]):
                drops.extend(Drop(mid, "reconciled") for mid in candidate[3])
            else:
                kept.append(candidate)
        buckets[size] = kept


def _within_budget(
    buckets: dict[int, list[_Candidate]],
    spec: RoutingSpec | None,
    budget_chars: int,
    drops: list[Drop],
) -> tuple[list[_Composed], int]:
    """4. Budget: whole entries only, walked in keep priority — more supporting ids,
    then newer, then the smaller id — keeping each that still fits and skipping each
    that does not. Once not even the shortest line fits, the rest are not rendered.
    Returns the kept entries and the characters they use.
    """
    render = _renderer(spec)
    used = 0
    composed: list[_Composed] = []
    for size in sorted(buckets, reverse=True):
        bucket = buckets[size]
        bucket.sort()  # a float first: CPython's fast path for tuple keys
        for neg_when, winner_id, winner, ids in bucket:
            if budget_chars - used >= _SHORTEST_LINE:
                value = render(winner)
                cost = len(collapse(winner.key)) + len(collapse(value)) + ENTRY_LINE_OVERHEAD
                if used + cost <= budget_chars:
                    used += cost
                    composed.append((-neg_when, winner_id, winner, ids, value))
                    continue
            if size == 1:
                drops.append(Drop(winner_id, "over-budget"))
            else:
                drops.extend(Drop(mid, "over-budget") for mid in ids)
    return composed, used


def _assemble(background: Background, composed: list[_Composed]) -> Background:
    """5. Memory entries follow their section's authored entries, oldest first."""
    composed.sort(key=_OLDEST_FIRST)
    by_section: dict[str, list[BackgroundEntry]] = defaultdict(list)
    for *_order, winner, ids, value in composed:
        by_section[winner.section].append(
            BackgroundEntry.model_construct(key=winner.key, value=value, memory_ids=ids)
        )
    sections = tuple(
        section
        if section.id not in by_section
        else section.model_copy(update={"entries": section.entries + tuple(by_section[section.id])})
        for section in background.sections
    )
    return Background.model_construct(sections=sections)


def _claim_sightings(records: dict[str, PlacedRecord]) -> set[str]:
    """The ids of every sighting, each kept by one holder only: a sighting is never a
    placed record itself, and one claimed by two holders stays with the smaller id, so
    every memory is counted once whatever the input order. Rewrites ``records`` only
    when something had to be removed."""
    claimed: dict[str, str] = {}
    sighted = False
    for record in records.values():
        if not record.sightings:
            continue
        sighted = True
        for sighting in record.sightings:
            if sighting in records or sighting == record.id:
                continue
            holder = claimed.get(sighting)
            if holder is None or record.id < holder:
                claimed[sighting] = record.id
    if not sighted:
        return set()
    for rid, record in list(records.items()):
        if record.sightings:
            mine = tuple(sorted({s for s in record.sightings if claimed.get(s) == rid}))
            if mine != record.sightings:
                records[rid] = replace(record, sightings=mine)
    return set(claimed)


def _lapsed_sightings(
    records: dict[str, PlacedRecord], moment: float, drops: list[Drop]
) -> set[str]:
    """Drop ``expired`` each claimed sighting whose own window has closed at ``moment``
    and take it out of its holder's sightings (rewriting ``records``); answer their ids."""
    lapsed: set[str] = set()
    for rid, record in list(records.items()):
        if not record.sighting_windows or not record.sightings:
            continue
        mine = set(record.sightings)
        gone = {
            sid for sid, until in record.sighting_windows if sid in mine and _when(until) <= moment
        }
        if gone:
            drops.extend(Drop(sid, "expired") for sid in gone)
            lapsed |= gone
            kept = tuple(sid for sid in record.sightings if sid not in gone)
            records[rid] = replace(record, sightings=kept)
    return lapsed


def _unique(placed: Iterable[PlacedRecord]) -> dict[str, PlacedRecord]:
    """Records by id. Ids are unique in practice; should two records share one, keep
    the same one whatever the input order, so the fold stays order-independent.
    """
    items = list(placed)
    records = {record.id: record for record in items}
    if len(records) != len(items):
        for record in items:
            if _identity(record) < _identity(records[record.id]):
                records[record.id] = record
    return records
