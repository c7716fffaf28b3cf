"""The retry schedule (SPEC §16): about 5 s, 30 s, 2 min, 10 min, 1 h, then every 6 h,
for three days, each delay jittered by at most a fifth."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from webhooks.core.schedule import FIRST_DELAYS, GIVE_UP_AFTER, LATER_DELAY, delay, next_try

START = datetime(2026, 1, 1, tzinfo=UTC)


def test_the_delays_follow_the_schedule_without_jitter() -> None:
    assert [delay(n, 0) for n in range(1, 8)] == [5, 30, 120, 600, 3600, 21600, 21600]


@given(st.integers(1, 40), st.floats(-1, 1))
def test_jitter_stays_within_a_fifth(failures: int, spread: float) -> None:
    base = FIRST_DELAYS[failures - 1] if failures <= len(FIRST_DELAYS) else LATER_DELAY
    assert base * 0.8 - 1e-9 <= delay(failures, spread) <= base * 1.2 + 1e-9


@given(st.lists(st.floats(-1, 1), min_size=40, max_size=40))
def test_a_message_is_tried_for_three_days_then_given_up(spreads: list[float]) -> None:
    now, tries = START, 1
    while True:
        when = next_try(START, now, tries, spreads[tries - 1])
        if when is None:
            break
        assert when > now
        now, tries = when, tries + 1
    # Given up only when the next try would fall past three days; never before two and a
    # half (the last 6-hour wait, stretched by a fifth, is 7.2 hours).
    assert GIVE_UP_AFTER - timedelta(hours=7.2) <= now - START <= GIVE_UP_AFTER
    assert 14 <= tries <= 20


def test_a_delay_follows_a_failure() -> None:
    with pytest.raises(ValueError, match="at least one failure"):
        delay(0, 0)
