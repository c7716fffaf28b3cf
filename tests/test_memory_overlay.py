"""The overlay fold (SPEC §5.5): pure, total, order-independent, budgeted, never a merge."""

from __future__ import annotations

import copy
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lens.core.background import TIERS, Background, BackgroundEntry, BackgroundSection
from lens.core.render import entry_line
from lens.core.report import Drop, RoutingReport
from memory.core.overlay import DEFAULT_BUDGET_CHARS, apply_memory_overlay
from memory.core.routing import OverlayPlan, PlacedRecord, RoutableRecord

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
ID_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
SECTION_POOL = ("a", "b", "c", "d")
KEY_POOL = ("k0", "k1", "k2", "k3")
FOLD_REASONS = {
    "undeclared-section",
    "locked-section",
    "earned-inert",
    "authored-wins",
    "reconciled",
    "over-budget",
}


def at(seconds: float, tz: timezone = UTC) -> datetime:
    return (T0 + timedelta(seconds=seconds)).astimezone(tz)


def placed(
    record_id: str,
    *,
    section: str = "notes",
    key: str | None = None,
    content: str | None = None,
    seconds: float = 0,
    created_at: datetime | None = None,
    label: str | None = None,
) -> PlacedRecord:
    return PlacedRecord(
        id=record_id,
        kind="fact",
        content=f"content of {record_id}" if content is None else content,
        label=label,
        created_at=at(seconds) if created_at is None else created_at,
        section=section,
        key=record_id if key is None else key,
    )


def section(
    section_id: str, promotion: str = "auto", *entries: tuple[str, Any]
) -> BackgroundSection:
    return BackgroundSection.model_validate(
        {
            "id": section_id,
            "title": section_id.replace("_", " ").title(),
            "promotion": promotion,
            "entries": [{"key": key, "value": value} for key, value in entries],
        }
    )


def background(*sections: BackgroundSection) -> Background:
    return Background(sections=sections)


NOTES = background(section("notes", "auto"))


def memory_entries(composed: Background) -> list[tuple[str, BackgroundEntry]]:
    return [(s.id, e) for s in composed.sections for e in s.entries if e.memory_ids]


def memory_chars(composed: Background) -> int:
    return sum(len(entry_line(entry)) for _, entry in memory_entries(composed))


def composed_ids(composed: Background) -> list[str]:
    return [mid for _, entry in memory_entries(composed) for mid in entry.memory_ids]


def reasons(report: RoutingReport) -> dict[str, str]:
    return {drop.memory_id: drop.reason for drop in report.drops}


def line_cost(key: str, value: str) -> int:
    return len(entry_line(BackgroundEntry.model_construct(key=key, value=value, memory_ids=())))


# --- specs used by the tests ----------------------------------------------------------


@dataclass
class Spec:
    key: str = "test"
    version: str = "1"

    def route(self, record: RoutableRecord, ctx: Any) -> None:
        return None


@dataclass
class ReconcileSpec(Spec):
    verdict: Callable[[RoutableRecord, RoutableRecord], str] = lambda a, b: "a"
    calls: list[tuple[str, str]] = field(default_factory=list)

    def reconcile(self, a: RoutableRecord, b: RoutableRecord) -> str:
        self.calls.append((a.id, b.id))
        return self.verdict(a, b)


@dataclass
class RenderSpec(Spec):
    def render_entry(self, placed: PlacedRecord) -> str:
        return f"[{placed.kind}] {placed.content.upper()}"


@dataclass
class FinalizeSpec(Spec):
    drop: frozenset[str] = frozenset()
    seen: list[tuple[tuple[PlacedRecord, ...], RoutingReport]] = field(default_factory=list)

    def finalize(self, records: tuple[PlacedRecord, ...], report: RoutingReport) -> OverlayPlan:
        self.seen.append((records, report))
        return OverlayPlan(drop=self.drop)


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


# --- strategies -----------------------------------------------------------------------

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
    if declared.promotion == "earned":
        return "earned-inert"
    if declared.entry(record.key) is not None:
        return "authored-wins"
    return None


def newest_first(record: PlacedRecord) -> tuple[datetime, str]:
    return (record.created_at, record.id)


# --- property tests -------------------------------------------------------------------


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
        assert before.promotion in {"auto", "guarded"} or not added


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
        winner = min(r.id for r in group if r.created_at == newest)
        winners.append(by_id[winner])
        assert dropped.get(winner) in (None, "over-budget")
        assert all(dropped[r.id] == "reconciled" for r in group if r.id != winner)

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

    Background.merge = forbidden  # type: ignore[method-assign]
    try:
        apply_memory_overlay(authored, records, spec_by_name(spec_name), budget)
    finally:
        Background.merge = original  # type: ignore[method-assign]


# --- merge is not the overlay ---------------------------------------------------------


def test_the_overlay_composes_without_background_merge(monkeypatch: pytest.MonkeyPatch) -> None:
    def forbidden(self: Background, other: Background) -> Background:
        raise AssertionError("the overlay must never merge")

    monkeypatch.setattr(Background, "merge", forbidden)
    authored = background(section("notes", "auto", ("name", "Ada")))
    composed, _ = apply_memory_overlay(authored, [placed("m1", key="tz", content="UTC")])
    assert [e.key for e in composed.sections[0].entries] == ["name", "tz"]


# --- hand-made cases ------------------------------------------------------------------


def test_no_memories_leave_the_background_unchanged() -> None:
    authored = background(section("notes", "auto", ("name", "Ada")), section("other", "locked"))
    composed, report = apply_memory_overlay(authored, [])
    assert composed == authored
    assert report.drops == ()
    assert report.stats.placed == 0
    assert report.stats.composed == 0
    assert report.stats.chars_used == {"background": 0}


def test_an_approved_memory_follows_the_authored_entries_of_its_section() -> None:
    authored = background(
        section("first", "guarded", ("a", 1)), section("notes", "auto", ("name", "Ada"))
    )
    composed, report = apply_memory_overlay(authored, [placed("m1", key="tz", content="UTC")])
    assert composed.sections[0] == authored.sections[0]
    notes = composed.sections[1]
    assert notes.entries[0] == BackgroundEntry(key="name", value="Ada")
    assert notes.entries[1] == BackgroundEntry(key="tz", value="UTC", memory_ids=("m1",))
    assert report.drops == ()
    assert report.stats.composed == 1


@pytest.mark.parametrize("tier", ["auto", "guarded"])
def test_approved_memories_compose_into_auto_and_guarded_sections(tier: str) -> None:
    composed, report = apply_memory_overlay(
        background(section("notes", tier)), [placed("m1", key="k")]
    )
    assert composed_ids(composed) == ["m1"]
    assert report.drops == ()


def test_memory_entries_are_ordered_by_created_at_then_id() -> None:
    records = [
        placed("c", seconds=5),
        placed("b", seconds=1),
        placed("z", seconds=1),
        placed("a", seconds=9),
    ]
    composed, _ = apply_memory_overlay(NOTES, records)
    assert composed_ids(composed) == ["b", "z", "c", "a"]


def test_the_newest_memory_wins_an_address_and_the_older_one_is_reconciled() -> None:
    records = [
        placed("new", key="tz", content="CET", seconds=10),
        placed("old", key="tz", content="UTC", seconds=1),
    ]
    composed, report = apply_memory_overlay(NOTES, records)
    assert memory_entries(composed) == [
        ("notes", BackgroundEntry(key="tz", value="CET", memory_ids=("new",)))
    ]
    assert report.drops == (Drop(memory_id="old", reason="reconciled"),)


def test_identical_timestamps_are_broken_by_the_smaller_id_in_plain_string_order() -> None:
    records = [
        placed("9", key="tz", content="nine", seconds=3),
        placed("10", key="tz", content="ten", seconds=3),
    ]
    composed, report = apply_memory_overlay(NOTES, records)
    assert composed_ids(composed) == ["10"]  # "10" < "9" as strings
    assert reasons(report) == {"9": "reconciled"}


def test_one_instant_seen_from_two_time_zones_is_a_tie() -> None:
    records = [
        placed("b", key="tz", created_at=at(3, timezone(timedelta(hours=5)))),
        placed("a", key="tz", created_at=at(3, UTC)),
    ]
    composed, report = apply_memory_overlay(NOTES, records)
    assert composed_ids(composed) == ["a"]
    assert reasons(report) == {"b": "reconciled"}


def test_microseconds_decide_which_memory_is_newest() -> None:
    records = [
        placed("a", key="tz", created_at=T0),
        placed("b", key="tz", created_at=T0 + timedelta(microseconds=1)),
    ]
    composed, _ = apply_memory_overlay(NOTES, records)
    assert composed_ids(composed) == ["b"]


def test_an_authored_entry_always_wins_its_key() -> None:
    authored = background(section("notes", "auto", ("name", "Ada"), ("role", "admin")))
    records = [
        placed("m1", key="name", content="Grace", seconds=100),
        placed("m2", key="Name", content="Case differs"),
    ]
    composed, report = apply_memory_overlay(authored, records)
    notes = composed.sections[0]
    assert notes.entries[:2] == authored.sections[0].entries
    assert reasons(report) == {"m1": "authored-wins"}
    assert composed_ids(composed) == ["m2"]


@pytest.mark.parametrize(
    ("declared", "tier", "authored_key", "expected"),
    [
        (False, "auto", True, "undeclared-section"),
        (True, "locked", True, "locked-section"),
        (True, "earned", True, "earned-inert"),
        (True, "locked", False, "locked-section"),
        (True, "earned", False, "earned-inert"),
        (True, "auto", True, "authored-wins"),
        (True, "guarded", True, "authored-wins"),
    ],
)
def test_the_checks_run_in_spec_order(
    declared: bool, tier: str, authored_key: bool, expected: str
) -> None:
    entries = [("name", "Ada")] if authored_key else []
    authored = background(section("notes" if declared else "elsewhere", tier, *entries))
    composed, report = apply_memory_overlay(authored, [placed("m1", key="name")])
    assert report.drops == (Drop(memory_id="m1", reason=expected),)
    assert composed_ids(composed) == []
    assert composed == authored


def test_a_newer_long_entry_is_skipped_while_an_older_short_one_still_fits() -> None:
    long_one = placed("new", key="long", content="x" * 200, seconds=10)
    short_one = placed("old", key="short", content="y", seconds=1)
    budget = line_cost("short", "y") + 20
    composed, report = apply_memory_overlay(NOTES, [long_one, short_one], budget_chars=budget)
    assert composed_ids(composed) == ["old"]
    assert report.drops == (Drop(memory_id="new", reason="over-budget"),)
    assert report.stats.chars_used["background"] == line_cost("short", "y")


def test_the_budget_prefers_newer_entries_when_both_cannot_fit() -> None:
    records = [placed("old", key="k1", content="aaaa", seconds=1)]
    records.append(placed("new", key="k2", content="bbbb", seconds=2))
    budget = line_cost("k1", "aaaa")  # room for exactly one of the two (equal cost)
    composed, report = apply_memory_overlay(NOTES, records, budget_chars=budget)
    assert composed_ids(composed) == ["new"]
    assert reasons(report) == {"old": "over-budget"}


def test_the_budget_breaks_an_age_tie_by_the_smaller_id() -> None:
    records = [placed("b", key="k1", content="same"), placed("a", key="k2", content="same")]
    composed, report = apply_memory_overlay(NOTES, records, budget_chars=line_cost("k1", "same"))
    assert composed_ids(composed) == ["a"]
    assert reasons(report) == {"b": "over-budget"}


def test_the_budget_prefers_entries_with_more_supporting_memories() -> None:
    spec = ReconcileSpec(verdict=lambda a, b: "both")
    records = [
        placed("p", key="shared", content="one", seconds=1),
        placed("q", key="shared", content="two", seconds=2),
        placed("z", key="solo", content="six", seconds=50),
    ]
    budget = line_cost("shared", "two")
    composed, report = apply_memory_overlay(NOTES, records, spec, budget)
    assert memory_entries(composed) == [
        ("notes", BackgroundEntry(key="shared", value="two", memory_ids=("p", "q")))
    ]
    assert reasons(report) == {"z": "over-budget"}


def test_whole_entries_only_an_exact_fit_is_kept_and_one_char_less_is_not() -> None:
    record = placed("m1", key="tz", content="Europe/Lisbon")
    cost = line_cost("tz", "Europe/Lisbon")
    assert cost == len("- **tz**: Europe/Lisbon\n")
    fits, report = apply_memory_overlay(NOTES, [record], budget_chars=cost)
    assert composed_ids(fits) == ["m1"]
    assert report.stats.chars_used["background"] == cost
    short, report = apply_memory_overlay(NOTES, [record], budget_chars=cost - 1)
    assert composed_ids(short) == []
    assert short == NOTES
    assert report.drops == (Drop(memory_id="m1", reason="over-budget"),)
    assert report.stats.chars_used["background"] == 0


def test_the_default_budget_is_three_thousand_code_points() -> None:
    assert DEFAULT_BUDGET_CHARS == 3000
    records = [placed(f"m{i:03d}", content="\U0001f600" * 90, seconds=i) for i in range(40)]
    composed, report = apply_memory_overlay(NOTES, records)
    used = memory_chars(composed)
    assert 3000 - line_cost("m000", "\U0001f600" * 90) < used <= 3000
    assert report.stats.drops_by_reason["over-budget"] == 40 - len(composed_ids(composed))
    # Keep priority is newest first, so the oldest memories are the ones left out.
    assert min(composed_ids(composed)) > max(reasons(report))


def test_the_budget_counts_the_collapsed_line_of_multiline_content() -> None:
    content = "first\n\n   second\r\nthird"
    composed, report = apply_memory_overlay(NOTES, [placed("m1", key="k", content=content)])
    (_, entry) = memory_entries(composed)[0]
    assert entry.value == content
    assert entry_line(entry) == "- **k**: first second third\n"
    assert report.stats.chars_used["background"] == len("- **k**: first second third\n")


def test_reconcile_both_unions_the_ids_and_keeps_the_newest_value() -> None:
    spec = ReconcileSpec(verdict=lambda a, b: "both")
    records = [
        placed("z", key="tz", content="oldest", seconds=1),
        placed("m", key="tz", content="newest", seconds=3),
        placed("a", key="tz", content="middle", seconds=2),
    ]
    composed, report = apply_memory_overlay(NOTES, records, spec)
    assert memory_entries(composed) == [
        ("notes", BackgroundEntry(key="tz", value="newest", memory_ids=("a", "m", "z")))
    ]
    assert report.drops == ()
    assert report.stats.composed == 3


def test_reconcile_receives_the_current_winner_first_and_b_switches_the_winner() -> None:
    spec = ReconcileSpec(verdict=lambda a, b: "b")
    records = [
        placed("new", key="tz", content="CET", seconds=10),
        placed("old", key="tz", content="UTC", seconds=1),
    ]
    composed, report = apply_memory_overlay(NOTES, records, spec)
    assert spec.calls == [("new", "old")]
    assert memory_entries(composed) == [
        ("notes", BackgroundEntry(key="tz", value="UTC", memory_ids=("old",)))
    ]
    assert report.drops == (Drop(memory_id="new", reason="reconciled"),)


def test_reconcile_a_keeps_the_newest_and_is_only_asked_within_one_address() -> None:
    spec = ReconcileSpec(verdict=lambda a, b: "a")
    records = [
        placed("x", key="tz", seconds=2),
        placed("y", key="tz", seconds=1),
        placed("solo", key="other"),
    ]
    composed, report = apply_memory_overlay(NOTES, records, spec)
    assert spec.calls == [("x", "y")]
    assert sorted(composed_ids(composed)) == ["solo", "x"]
    assert reasons(report) == {"y": "reconciled"}


def test_render_entry_changes_the_value_and_the_budget_counts_the_rendered_line() -> None:
    composed, report = apply_memory_overlay(
        NOTES, [placed("m1", key="tz", content="utc")], RenderSpec()
    )
    (_, entry) = memory_entries(composed)[0]
    assert entry.value == "[fact] UTC"
    assert report.stats.chars_used["background"] == len("- **tz**: [fact] UTC\n")


def test_finalize_drops_the_ids_it_names_as_reconciled() -> None:
    spec = FinalizeSpec(drop=frozenset({"m2", "unknown"}))
    records = [placed("m2", key="b"), placed("m1", key="a"), placed("m3", section="gone")]
    composed, report = apply_memory_overlay(NOTES, records, spec)
    assert composed_ids(composed) == ["m1"]
    assert reasons(report) == {"m2": "reconciled", "m3": "undeclared-section"}
    ((seen_records, interim),) = spec.seen
    assert sorted(r.id for r in seen_records) == ["m1", "m2", "m3"]
    assert reasons(interim) == {"m3": "undeclared-section"}


def test_finalize_that_keeps_everything_changes_nothing() -> None:
    records = [placed("m1", key="a"), placed("m2", key="b")]
    with_hook = apply_memory_overlay(NOTES, records, FinalizeSpec())
    without = apply_memory_overlay(NOTES, records)
    assert with_hook == without


def test_the_report_counts_what_was_placed_composed_and_dropped() -> None:
    authored = background(
        section("notes", "auto", ("name", "Ada")),
        section("locked", "locked"),
    )
    records = [
        placed("a", key="tz", content="UTC", seconds=1),
        placed("b", key="tz", content="CET", seconds=2),
        placed("c", key="name"),
        placed("d", section="locked"),
        placed("e", section="gone"),
        placed("f", key="lang", content="pt"),
    ]
    composed, report = apply_memory_overlay(authored, records)
    assert report.stats.placed == 6
    assert report.stats.composed == 2
    assert report.stats.drops_by_reason == {
        "authored-wins": 1,
        "locked-section": 1,
        "reconciled": 1,
        "undeclared-section": 1,
    }
    assert report.stats.chars_used == {
        "background": line_cost("tz", "CET") + line_cost("lang", "pt")
    }
    assert report.stats.chars_used["background"] == memory_chars(composed)


def test_drops_hold_ids_and_reasons_only_never_content() -> None:
    secret = "SECRET-CONTENT-7f3a"
    records = [
        placed("a", key="name", content=secret, label="name"),
        placed("b", section="gone", content=secret),
        placed("c", key="big", content=secret * 100),
    ]
    authored = background(section("notes", "auto", ("name", "Ada")))
    _, report = apply_memory_overlay(authored, records, budget_chars=10)
    assert len(report.drops) == 3
    dumped = report.model_dump(mode="json")
    assert all(set(drop) == {"memory_id", "reason"} for drop in dumped["drops"])
    assert secret not in report.model_dump_json()
    assert secret not in repr(report)


def test_the_same_record_passed_twice_counts_once() -> None:
    record = placed("m1", key="tz")
    composed, report = apply_memory_overlay(NOTES, [record, record])
    assert composed_ids(composed) == ["m1"]
    assert report.stats.placed == 1


def test_an_empty_key_on_committed_data_does_not_make_the_fold_raise() -> None:
    composed, report = apply_memory_overlay(NOTES, [placed("m1", key="")])
    assert composed_ids(composed) + [d.memory_id for d in report.drops] == ["m1"]
