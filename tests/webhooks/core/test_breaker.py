"""The circuit breaker's pauses: none below the threshold, then doubling to a cap, each
within a fifth of its base."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from webhooks.core.breaker import JITTER, PAUSE_MAX, pause


def test_no_pause_below_the_threshold() -> None:
    assert [pause(n, 5, 30.0, 0.0) for n in range(5)] == [None] * 5


def test_each_failed_probe_doubles_the_pause_up_to_the_cap() -> None:
    pauses = [pause(n, 5, 30.0, 0.0) for n in range(5, 14)]
    assert pauses == [30.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 3600.0, 3600.0]


def test_a_very_long_outage_stays_at_the_cap() -> None:
    assert pause(10**9, 5, 30.0, 0.0) == PAUSE_MAX


@given(
    failures=st.integers(min_value=1, max_value=10**6),
    threshold=st.integers(min_value=1, max_value=50),
    spread=st.floats(min_value=-5, max_value=5, allow_nan=False),
)
def test_a_pause_is_within_a_fifth_of_its_base(
    failures: int, threshold: int, spread: float
) -> None:
    base = pause(failures, threshold, 30.0, 0.0)
    jittered = pause(failures, threshold, 30.0, spread)
    if base is None:
        assert jittered is None
        return
    assert jittered is not None
    assert base * (1 - JITTER) <= jittered <= base * (1 + JITTER)


@pytest.mark.parametrize(("threshold", "first"), [(0, 30.0), (5, 0.0), (5, -1.0)])
def test_a_breaker_that_could_never_close_or_open_is_refused(threshold: int, first: float) -> None:
    with pytest.raises(ValueError, match="threshold"):
        pause(5, threshold, first, 0.0)
