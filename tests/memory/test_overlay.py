"""The overlay fold (SPEC §5.5) on hand-made cases: ordering, ties, authored entries, the
budget, the spec's reconcile, render and finalize hooks, and the report; never a merge.
"""

from __future__ import annotations

from datetime import UTC, timedelta, timezone

import pytest

from lens.core.background import Background, BackgroundEntry
from lens.core.render import entry_line
from memory.core.overlay import DEFAULT_BUDGET_CHARS, apply_memory_overlay
from memory.core.report import Drop, DropReason
from tests.samples import (
    NOTES,
    T0,
    FinalizeSpec,
    ReconcileSpec,
    RenderSpec,
    at,
    background,
    composed_ids,
    line_cost,
    memory_chars,
    memory_entries,
    placed,
    reasons,
    section,
)

# --- merge is not the overlay ------------------------------------------------------


def test_the_overlay_composes_without_background_merge(monkeypatch: pytest.MonkeyPatch) -> None:
    def forbidden(self: Background, other: Background) -> Background:
        raise AssertionError("the overlay must never merge")

    monkeypatch.setattr(Background, "merge", forbidden)
    authored = background(section("notes", "auto", ("name", "Ada")))
    composed, _ = apply_memory_overlay(authored, [placed("m1", key="tz", content="UTC")])
    assert [e.key for e in composed.sections[0].entries] == ["name", "tz"]


# --- hand-made cases ---------------------------------------------------------------


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
        # Keys compare as names: a key that reads the same is the authored one's.
        placed("m2", key="Name", content="Case differs"),
        placed("m3", key="nickname", content="Another key"),
    ]
    composed, report = apply_memory_overlay(authored, records)
    notes = composed.sections[0]
    assert notes.entries[:2] == authored.sections[0].entries
    assert reasons(report) == {"m1": "authored-wins", "m2": "authored-wins"}
    assert composed_ids(composed) == ["m3"]


@pytest.mark.parametrize(
    ("declared", "tier", "authored_key", "expected"),
    [
        (False, "auto", True, "undeclared-section"),
        (True, "locked", True, "locked-section"),
        (True, "earned", True, "authored-wins"),
        (True, "locked", False, "locked-section"),
        (True, "auto", True, "authored-wins"),
        (True, "guarded", True, "authored-wins"),
    ],
)
def test_the_checks_run_in_spec_order(
    declared: bool, tier: str, authored_key: bool, expected: DropReason
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
