"""Properties of the overlay fold (SPEC §5.5) over generated backgrounds and records: pure,
total, order-independent, budgeted, and never a merge.
"""

from __future__ import annotations

import copy
import zlib
from collections import Counter, defaultdict
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lens.core.background import TIERS, Background
from memory.core.overlay import DEFAULT_BUDGET_CHARS, apply_memory_overlay
from memory.core.routing import PlacedRecord, RoutableRecord
from tests.samples import (
    NOTES,
    FinalizeSpec,
    ReconcileSpec,
    RenderSpec,
    at,
    composed_ids,
    line_cost,
    memory_chars,
    memory_entries,
    placed,
    reasons,
    section,
)

ID_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


SECTION_POOL = ("a", "b", "c", "d")


KEY_POOL = ("k0", "k1", "k2", "k3")


FOLD_REASONS = {
    "undeclared-section",
    "locked-section",
    "corroborating",
    "authored-wins",
    "reconciled",
    "over-budget",
}


def mixed_verdict(a: RoutableRecord, b: RoutableRecord) -> str:
    # Deterministic in the pair, so the fold must stay order-independent with it.
    return ("a", "b", "both")[zlib.crc32(f"{a.id}|{b.id}".encode()) % 3]


def spec_by_name(name: str) -> Any:
    return {
        "none": None,
        "both": ReconcileSpec(verdict=lambda a, b: "both"),
        "b": ReconcileSpec(verdict=lambda a, b: "b"),
        "mixed": ReconcileSpec(verdict=mixed_verdict),
        "render": RenderSpec(),
        "finalize": FinalizeSpec(drop=frozenset({"0", "1", "a", "b", "c"})),
    }[name]


SPEC_NAMES = st.sampled_from(["none", "both", "b", "mixed", "render", "finalize"])


OFFSETS = st.sampled_from(
    [UTC, timezone(timedelta(hours=2)), timezone(timedelta(hours=-5, minutes=-30))]
)


FEW_MOMENTS = st.builds(lambda s, tz: at(s, tz), st.integers(0, 4), OFFSETS)


MOMENTS = st.one_of(
    # Mostly a handful of instants (seen from several zones) so ties are common.
    FEW_MOMENTS,
    FEW_MOMENTS,
    st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1), timezones=OFFSETS),
)


# Tiers weighted towards the ones memory may fill, so most records reach the later steps.
TIER_CHOICES = st.sampled_from(("auto", "auto", "guarded", *TIERS))


RECORD_IDS = st.text(alphabet=ID_ALPHABET, min_size=1, max_size=3)


CONTENT = st.one_of(
    st.text(
        alphabet=st.one_of(
            st.sampled_from("ab #-*>`\n\r\t\x0b\x85\u2028\u2029"), st.characters(codec="utf-8")
        ),
        max_size=40,
    ),
    st.text(alphabet="xy \n", min_size=20, max_size=120),
)


@st.composite
def backgrounds(draw: st.DrawFn) -> Background:
    sections = []
    some = st.lists(st.sampled_from(SECTION_POOL), unique=True, max_size=4)
    for section_id in draw(st.one_of(st.permutations(SECTION_POOL), some)):
        keys = draw(st.lists(st.sampled_from(KEY_POOL), unique=True, max_size=2))
        tier = draw(TIER_CHOICES)
        sections.append(section(section_id, tier, *((key, f"authored {key}") for key in keys)))
    return Background(sections=tuple(sections))


@st.composite
def placed_lists(draw: st.DrawFn, max_size: int = 14) -> list[PlacedRecord]:
    return [
        PlacedRecord(
            id=record_id,
            kind=draw(st.sampled_from(["fact", "profile", "state"])),
            content=draw(CONTENT),
            label=draw(st.one_of(st.none(), st.text(max_size=5))),
            created_at=draw(MOMENTS),
            section=draw(
                st.one_of(
                    st.sampled_from(SECTION_POOL),
                    st.sampled_from(SECTION_POOL),
                    st.sampled_from(SECTION_POOL),
                    st.just("gone"),
                    st.text(max_size=4),
                )
            ),
            # Committed placements always have a key (Placement validates min_length=1).
            key=draw(
                st.one_of(
                    st.sampled_from(KEY_POOL),
                    st.sampled_from(("m0", "m1")),
                    st.text(min_size=1, max_size=6),
                )
            ),
            key_source=draw(st.sampled_from(["label", "content"])),
        )
        for record_id in draw(st.lists(RECORD_IDS, unique=True, max_size=max_size))
    ]


BUDGETS = st.one_of(st.integers(0, 300), st.integers(20, 120), st.just(DEFAULT_BUDGET_CHARS))


def check_reason(background_: Background, record: PlacedRecord) -> str | None:
    """The fold's first four checks, in SPEC order."""
    declared = background_.section(record.section)
    if declared is None:
        return "undeclared-section"
    if declared.promotion == "locked":
        return "locked-section"
    if declared.entry(record.key) is not None:
        return "authored-wins"
    return None


def newest_first(record: PlacedRecord) -> tuple[datetime, str]:
    return (record.created_at, record.id)


# --- property tests ----------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(backgrounds(), placed_lists(), BUDGETS, SPEC_NAMES)
def test_the_fold_is_pure_total_budgeted_and_accounts_for_every_record(
    authored: Background, records: list[PlacedRecord], budget: int, spec_name: str
) -> None:
    authored_before = copy.deepcopy(authored)
    records_before = copy.deepcopy(records)
    composed, report = apply_memory_overlay(authored, records, spec_by_name(spec_name), budget)

    # Pure: inputs unchanged, the same output twice.
    assert authored == authored_before
    assert records == records_before
    again = apply_memory_overlay(authored, records, spec_by_name(spec_name), budget)
    assert again[0].model_dump() == composed.model_dump()
    assert again[1] == report

    # Every placed record is in exactly one entry's memory_ids or in exactly one drop.
    in_entries = Counter(composed_ids(composed))
    in_drops = Counter(drop.memory_id for drop in report.drops)
    assert set(in_entries) | set(in_drops) == {record.id for record in records}
    assert not set(in_entries) & set(in_drops)
    assert all(count == 1 for count in (in_entries + in_drops).values())
    assert {drop.reason for drop in report.drops} <= FOLD_REASONS
    for _, entry in memory_entries(composed):
        assert list(entry.memory_ids) == sorted(entry.memory_ids)

    # Budget over whole memory lines; the stats add up.
    used = memory_chars(composed)
    assert used <= budget
    assert report.stats.chars_used["background"] == used
    assert report.stats.placed == len(records)
    assert report.stats.composed == sum(in_entries.values())
    assert report.stats.drops_by_reason == dict(Counter(d.reason for d in report.drops))

    # Authored entries untouched and first; sections keep their order and declarations.
    assert [s.id for s in composed.sections] == [s.id for s in authored.sections]
    for before, after in zip(authored.sections, composed.sections, strict=True):
        assert (after.title, after.promotion) == (before.title, before.promotion)
        assert after.entries[: len(before.entries)] == before.entries
        added = after.entries[len(before.entries) :]
        assert all(entry.memory_ids for entry in added)
        assert {e.key for e in added}.isdisjoint(e.key for e in before.entries)
        assert before.promotion in {"auto", "guarded", "earned"} or not added


@settings(max_examples=100, deadline=None)
@given(backgrounds(), placed_lists(), BUDGETS, SPEC_NAMES, st.data())
def test_any_permutation_of_placed_gives_an_identical_result(
    authored: Background,
    records: list[PlacedRecord],
    budget: int,
    spec_name: str,
    data: st.DataObject,
) -> None:
    shuffled = data.draw(st.permutations(records))
    one = apply_memory_overlay(authored, records, spec_by_name(spec_name), budget)
    two = apply_memory_overlay(authored, shuffled, spec_by_name(spec_name), budget)
    assert one[0].model_dump() == two[0].model_dump()
    assert one[1] == two[1]


@settings(max_examples=120, deadline=None)
@given(backgrounds(), placed_lists(), BUDGETS)
def test_without_hooks_the_fold_follows_the_spec_rules_exactly(
    authored: Background, records: list[PlacedRecord], budget: int
) -> None:
    composed, report = apply_memory_overlay(authored, records, None, budget)
    dropped = reasons(report)
    by_id = {record.id: record for record in records}

    # Checks in SPEC order; survivors grouped by address.
    survivors: dict[tuple[str, str], list[PlacedRecord]] = defaultdict(list)
    for record in records:
        expected = check_reason(authored, record)
        if expected is None:
            survivors[(record.section, record.key)].append(record)
        else:
            assert dropped[record.id] == expected

    # Newest created_at wins each address, ties to the smaller id; losers reconciled.
    winners = []
    for group in survivors.values():
        newest = max(r.created_at for r in group)
        winner_id = min(r.id for r in group if r.created_at == newest)
        winners.append(by_id[winner_id])
        assert dropped.get(winner_id) in (None, "over-budget")
        assert all(dropped[r.id] == "reconciled" for r in group if r.id != winner_id)

    # Budget: walk in keep priority (newer first, then smaller id), skip what does not fit.
    used = 0
    by_smaller_id = sorted(winners, key=lambda r: r.id)
    for winner in sorted(by_smaller_id, key=lambda r: r.created_at, reverse=True):  # stable
        cost = line_cost(winner.key, winner.content)
        if used + cost <= budget:
            used += cost
            assert winner.id not in dropped
        else:
            assert dropped[winner.id] == "over-budget"
    assert used == report.stats.chars_used["background"]

    # Memory entries follow the authored ones, ordered by (created_at, id) ascending.
    for out in composed.sections:
        ids = [entry.memory_ids[0] for entry in out.entries if entry.memory_ids]
        ordered = sorted(ids, key=lambda mid: newest_first(by_id[mid]))
        assert ids == ordered
        for entry in out.entries:
            if entry.memory_ids:
                assert len(entry.memory_ids) == 1
                assert entry.value == by_id[entry.memory_ids[0]].content


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.text(alphabet="xy\n ", max_size=60)),
        min_size=1,
        max_size=10,
    ),
    st.integers(0, 200),
)
def test_the_budget_walk_skips_what_does_not_fit_and_keeps_walking(
    items: list[tuple[int, str]], budget: int
) -> None:
    records = [
        placed(f"r{i:02d}", key=f"k{i}", content=content, seconds=seconds)
        for i, (seconds, content) in enumerate(items)
    ]
    composed, report = apply_memory_overlay(NOTES, records, None, budget)
    kept, dropped = set(composed_ids(composed)), reasons(report)
    used = 0
    by_smaller_id = sorted(records, key=lambda r: r.id)
    for record in sorted(by_smaller_id, key=lambda r: r.created_at, reverse=True):  # stable
        cost = line_cost(record.key, record.content)
        if used + cost <= budget:
            used += cost
            assert record.id in kept
        else:
            assert dropped[record.id] == "over-budget"
    assert used == memory_chars(composed) == report.stats.chars_used["background"]


@settings(max_examples=30, deadline=None)
@given(backgrounds(), placed_lists(), BUDGETS, SPEC_NAMES)
def test_the_fold_never_calls_background_merge(
    authored: Background, records: list[PlacedRecord], budget: int, spec_name: str
) -> None:
    original = Background.merge

    def forbidden(self: Background, other: Background) -> Background:
        raise AssertionError("the overlay must never merge")

    Background.merge = forbidden  # type: ignore[method-assign]  # patched: merge must never run
    try:
        apply_memory_overlay(authored, records, spec_by_name(spec_name), budget)
    finally:
        Background.merge = original  # type: ignore[method-assign]  # restoring the patched method


@st.composite
def sighted_lists(draw: st.DrawFn) -> list[PlacedRecord]:
    """Placed records, some with sightings (SPEC §19.1): ids of their own, or now and
    then one that is another record's id or another holder's sighting too."""
    records = draw(placed_lists(max_size=10))
    ids = [record.id for record in records]
    pool = st.one_of(
        st.sampled_from([f"s{n}" for n in range(8)]), *([st.sampled_from(ids)] if ids else [])
    )
    return [
        replace(record, sightings=tuple(draw(st.lists(pool, max_size=3, unique=True))))
        for record in records
    ]


@settings(max_examples=150, deadline=None)
@given(backgrounds(), sighted_lists(), BUDGETS, SPEC_NAMES, st.data())
def test_sightings_compose_with_their_holder_or_are_dropped_corroborating(
    authored: Background,
    records: list[PlacedRecord],
    budget: int,
    spec_name: str,
    data: st.DataObject,
) -> None:
    composed, report = apply_memory_overlay(authored, records, spec_by_name(spec_name), budget)
    ids = {record.id for record in records}
    sightings = {s for record in records for s in record.sightings} - ids
    in_entries = Counter(composed_ids(composed))
    in_drops = Counter(drop.memory_id for drop in report.drops)
    # Every memory, sightings included, in exactly one entry or exactly one drop.
    assert set(in_entries) | set(in_drops) == ids | sightings
    assert not set(in_entries) & set(in_drops)
    assert all(count == 1 for count in (in_entries + in_drops).values())
    for drop in report.drops:
        assert (drop.reason == "corroborating") == (drop.memory_id in sightings)
    # A sighting composes only in the line of a holder that claims it.
    for _, entry in memory_entries(composed):
        holders = [r for r in records if r.id in entry.memory_ids]
        for memory_id in set(entry.memory_ids) & sightings:
            assert any(memory_id in holder.sightings for holder in holders)
    assert report.stats.composed == sum(in_entries.values())
    # Order-independent with sightings too.
    shuffled = data.draw(st.permutations(records))
    again = apply_memory_overlay(authored, shuffled, spec_by_name(spec_name), budget)
    assert again[0].model_dump() == composed.model_dump()
    assert again[1] == report


# --- time as an input (SPEC §19.2) ---------------------------------------------------

# Windows and times drawn from the same few instants as ``created_at``, so that a window
# closing exactly at the fold's time is common.
WINDOWS = st.one_of(st.none(), MOMENTS)


@st.composite
def windowed_lists(draw: st.DrawFn) -> list[PlacedRecord]:
    """Sighted records (SPEC §19.1) with validity windows of their own and of their
    sightings (SPEC §19.2)."""
    records = draw(sighted_lists())
    windowed = []
    for record in records:
        sighted = tuple(
            (sid, when) for sid in record.sightings if (when := draw(WINDOWS)) is not None
        )
        windowed.append(replace(record, valid_until=draw(WINDOWS), sighting_windows=sighted))
    return windowed


def closed(until: datetime | None, now: datetime) -> bool:
    return until is not None and until <= now


@settings(max_examples=250, deadline=None)
@given(backgrounds(), windowed_lists(), BUDGETS, SPEC_NAMES, MOMENTS, st.data())
def test_with_time_as_an_input_the_fold_is_pure_total_order_independent_and_none_silent(
    authored: Background,
    records: list[PlacedRecord],
    budget: int,
    spec_name: str,
    now: datetime,
    data: st.DataObject,
) -> None:
    authored_before = copy.deepcopy(authored)
    records_before = copy.deepcopy(records)
    composed, report = apply_memory_overlay(
        authored, records, spec_by_name(spec_name), budget, now=now
    )

    # Pure: inputs unchanged, the same output twice.
    assert authored == authored_before
    assert records == records_before
    again = apply_memory_overlay(authored, records, spec_by_name(spec_name), budget, now=now)
    assert again[0].model_dump() == composed.model_dump()
    assert again[1] == report

    # Order-independent.
    shuffled = data.draw(st.permutations(records))
    other = apply_memory_overlay(authored, shuffled, spec_by_name(spec_name), budget, now=now)
    assert other[0].model_dump() == composed.model_dump()
    assert other[1] == report

    # None silent: every memory, sightings included, in exactly one fragment or drop.
    ids = {record.id for record in records}
    sightings = {s for record in records for s in record.sightings} - ids
    in_entries = Counter(composed_ids(composed))
    in_drops = Counter(drop.memory_id for drop in report.drops)
    assert set(in_entries) | set(in_drops) == ids | sightings
    assert not set(in_entries) & set(in_drops)
    assert all(count == 1 for count in (in_entries + in_drops).values())
    assert {drop.reason for drop in report.drops} <= FOLD_REASONS | {"expired"}
    assert report.stats.composed == sum(in_entries.values())
    assert report.stats.placed == len(records)

    # A record is dropped ``expired`` exactly when its window has closed at ``now``; a
    # sighting when its own has (under the holder that claims it), else ``corroborating``
    # whenever it is left out.
    dropped = reasons(report)
    for record in records:
        assert (dropped.get(record.id) == "expired") == closed(record.valid_until, now)
    composed_lines = [set(entry.memory_ids) for _, entry in memory_entries(composed)]
    for sighting in sightings:
        holders = sorted(r.id for r in records if sighting in r.sightings)
        claimer = next(r for r in records if r.id == holders[0])
        window = dict(claimer.sighting_windows).get(sighting)
        if closed(window, now):
            assert dropped[sighting] == "expired"
        elif sighting in dropped:
            assert dropped[sighting] == "corroborating"
        else:
            assert any({sighting, claimer.id} <= line for line in composed_lines)
    # Nothing composes whose window has closed.
    for line in composed_lines:
        for record in records:
            if record.id in line:
                assert not closed(record.valid_until, now)


@settings(max_examples=120, deadline=None)
@given(backgrounds(), windowed_lists(), BUDGETS, SPEC_NAMES, MOMENTS, MOMENTS)
def test_what_composes_at_a_later_time_never_includes_what_had_expired(
    authored: Background,
    records: list[PlacedRecord],
    budget: int,
    spec_name: str,
    first: datetime,
    second: datetime,
) -> None:
    early, late = sorted((first, second))
    _c, before = apply_memory_overlay(authored, records, spec_by_name(spec_name), budget, now=early)
    composed, after = apply_memory_overlay(
        authored, records, spec_by_name(spec_name), budget, now=late
    )
    gone_before = {d.memory_id for d in before.drops if d.reason == "expired"}
    gone_after = {d.memory_id for d in after.drops if d.reason == "expired"}
    assert gone_before <= gone_after
    assert not gone_before & set(composed_ids(composed))
