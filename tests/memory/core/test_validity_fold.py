"""Validity windows in the pure core (SPEC §19.2): the fold takes its time as an input,
drops a memory whose window has closed with reason ``expired`` (judged right after
``superseded``), and stays total and order-independent."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from memory.core.overlay import apply_memory_overlay
from memory.core.report import PromotionState, expired, routing_report
from memory.core.routing import PlacedRecord
from tests.samples import (
    NOTES,
    T0,
    at,
    background,
    composed_ids,
    memory_entries,
    placed,
    reasons,
    section,
)


def until(record: PlacedRecord, seconds: float) -> PlacedRecord:
    return replace(record, valid_until=at(seconds))


def test_a_memory_is_valid_before_its_moment_and_expired_at_it() -> None:
    record = until(placed("m1", key="trip"), 100)
    before, report = apply_memory_overlay(NOTES, [record], now=at(99))
    assert composed_ids(before) == ["m1"]
    assert report.drops == ()
    at_moment, report = apply_memory_overlay(NOTES, [record], now=at(100))
    assert composed_ids(at_moment) == []
    assert reasons(report) == {"m1": "expired"}


def test_without_a_time_nothing_expires() -> None:
    composed, report = apply_memory_overlay(NOTES, [until(placed("m1"), -1_000)])
    assert composed_ids(composed) == ["m1"]
    assert report.drops == ()


def test_expiry_comes_before_the_folds_own_reasons() -> None:
    authored = background(section("notes", "auto", ("trip", "authored")), section("gone", "locked"))
    records = [
        until(placed("m1", key="trip"), 1),  # an authored entry holds its key too
        until(placed("m2", section="gone"), 1),  # its section is locked too
        until(placed("m3", section="nowhere"), 1),  # its section is undeclared too
    ]
    _composed, report = apply_memory_overlay(authored, records, now=at(2))
    assert reasons(report) == {"m1": "expired", "m2": "expired", "m3": "expired"}


def test_an_expired_memory_leaves_its_address_to_the_next_newest() -> None:
    older = placed("m1", key="city", content="Kraków", seconds=0)
    newer = until(placed("m2", key="city", content="Lisbon (a trip)", seconds=10), 50)
    composed, report = apply_memory_overlay(NOTES, [older, newer], now=at(20))
    assert composed_ids(composed) == ["m2"]
    assert reasons(report) == {"m1": "reconciled"}
    composed, report = apply_memory_overlay(NOTES, [older, newer], now=at(60))
    assert composed_ids(composed) == ["m1"]
    assert reasons(report) == {"m2": "expired"}


def test_an_expired_holder_takes_its_sightings_out_and_reports_them() -> None:
    holder = replace(until(placed("m1", key="music"), 100), sightings=("s1", "s2"))
    composed, fold = apply_memory_overlay(NOTES, [holder], now=at(100))
    assert composed_ids(composed) == []
    assert reasons(fold) == {"m1": "expired", "s1": "corroborating", "s2": "corroborating"}
    states = [
        PromotionState("m1", "approved", valid_until=at(100)),
        PromotionState("s1", "corroborates", holder="m1"),
        PromotionState("s2", "corroborates", holder="m1"),
    ]
    assert reasons(routing_report(states, fold, now=at(100))) == reasons(fold)


def test_a_sighting_whose_own_window_closed_leaves_the_line_expired() -> None:
    holder = replace(
        placed("m1", key="music"), sightings=("s1", "s2"), sighting_windows=(("s1", at(50)),)
    )
    composed, fold = apply_memory_overlay(NOTES, [holder], now=at(49))
    assert [e.memory_ids for _, e in memory_entries(composed)] == [("m1", "s1", "s2")]
    composed, fold = apply_memory_overlay(NOTES, [holder], now=at(50))
    assert [e.memory_ids for _, e in memory_entries(composed)] == [("m1", "s2")]
    assert reasons(fold) == {"s1": "expired"}
    # Its holder expiring too: the sighting stays ``expired``, the other corroborating.
    gone = replace(holder, valid_until=at(50))
    _composed, fold = apply_memory_overlay(NOTES, [gone], now=at(60))
    assert reasons(fold) == {"m1": "expired", "s1": "expired", "s2": "corroborating"}
    states = [
        PromotionState("m1", "approved", valid_until=at(50)),
        PromotionState("s1", "corroborates", holder="m1", valid_until=at(50)),
        PromotionState("s2", "corroborates", holder="m1"),
    ]
    assert reasons(routing_report(states, fold, now=at(60))) == reasons(fold)
    # Without a time nothing expires.
    composed, fold = apply_memory_overlay(NOTES, [gone])
    assert fold.drops == ()


def test_the_report_judges_expiry_right_after_superseded_for_every_status() -> None:
    moment = T0 + timedelta(days=1)
    gone = T0
    states = [
        PromotionState("a", "superseded", valid_until=gone),
        PromotionState("b", "pending", valid_until=gone),
        PromotionState("c", "declined", "spec-declined", valid_until=gone),
        PromotionState("d", "rejected", valid_until=gone),
        PromotionState("e", "revoked", valid_until=gone),
        PromotionState("f", "erased", valid_until=gone),
        PromotionState("g", "pending", valid_until=moment + timedelta(seconds=1)),
    ]
    _composed, fold = apply_memory_overlay(NOTES, [], now=moment)
    assert reasons(routing_report(states, fold, now=moment)) == {
        "a": "superseded",
        "b": "expired",
        "c": "expired",
        "d": "expired",
        "e": "expired",
        "f": "erased",
        "g": "awaiting-approval",
    }


def test_expired_compares_moments_in_any_zone() -> None:
    cet = datetime(2030, 1, 1, 13, 0, tzinfo=UTC).astimezone()
    assert expired(datetime(2030, 1, 1, 12, 0, tzinfo=UTC), cet)
    assert not expired(None, cet)
    assert not expired(cet, None)


# --- properties -------------------------------------------------------------------

_records = st.lists(
    st.builds(
        lambda i, key, created, window: replace(
            placed(f"m{i:03d}", key=f"k{key}", seconds=created),
            valid_until=None if window is None else at(window),
        ),
        st.integers(0, 999),
        st.integers(0, 4),
        st.integers(0, 100),
        st.one_of(st.none(), st.integers(-50, 150)),
    ),
    max_size=25,
    unique_by=lambda r: r.id,
)


@settings(max_examples=150, deadline=None)
@given(_records, st.integers(-60, 160), st.randoms(use_true_random=False))
def test_the_fold_stays_total_and_order_independent_with_windows(
    records: list[PlacedRecord], seconds: int, rng: random.Random
) -> None:
    now = at(seconds)
    composed, report = apply_memory_overlay(NOTES, records, budget_chars=200, now=now)
    shuffled = list(records)
    rng.shuffle(shuffled)
    assert apply_memory_overlay(NOTES, shuffled, budget_chars=200, now=now) == (composed, report)
    in_prompt = composed_ids(composed)
    dropped = [d.memory_id for d in report.drops]
    # None is both in a fragment and dropped; none is neither.
    assert not set(in_prompt) & set(dropped)
    assert sorted(in_prompt + dropped) == sorted(r.id for r in records)
    for record in records:
        gone = record.valid_until is not None and record.valid_until <= now
        assert (reasons(report).get(record.id) == "expired") == gone


@settings(max_examples=100, deadline=None)
@given(_records, st.integers(-60, 160), st.integers(1, 100))
def test_a_memory_valid_at_t_may_be_expired_at_a_later_t_never_the_reverse(
    records: list[PlacedRecord], seconds: int, later: int
) -> None:
    _c, first = apply_memory_overlay(NOTES, records, now=at(seconds))
    _c, second = apply_memory_overlay(NOTES, records, now=at(seconds + later))
    expired_first = {d.memory_id for d in first.drops if d.reason == "expired"}
    expired_second = {d.memory_id for d in second.drops if d.reason == "expired"}
    assert expired_first <= expired_second
