"""Sightings of earning memories (SPEC §19.1): normalised content, distinct sessions."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from memory.core.sightings import (
    Sighting,
    counted,
    distinct_sessions,
    has_earned,
    normalised,
    same_content,
    session_of,
)

DAY = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def test_normalised_content_ignores_case_width_and_whitespace() -> None:
    assert normalised("  Prefers\tTEA \n over  coffee ") == "prefers tea over coffee"
    assert same_content("ＴＥＡ", "tea")  # full-width letters (NFKC)
    assert same_content("Straße", "STRASSE")  # casefold, not lower
    assert not same_content("tea", "tee")


@given(st.text())
def test_normalising_is_idempotent(text: str) -> None:
    once = normalised(text)
    assert normalised(once) == once


@given(st.text(), st.text(alphabet=" \t\n\u00a0\u3000", min_size=1))
def test_surrounding_whitespace_never_matters(text: str, space: str) -> None:
    assert same_content(space + text + space, text)


def test_a_save_without_a_session_counts_its_utc_day() -> None:
    morning = Sighting("a", None, DAY)
    evening = Sighting("b", None, DAY + timedelta(hours=12))
    tomorrow = Sighting("c", None, DAY + timedelta(days=1))
    assert distinct_sessions([morning, evening]) == 1
    assert distinct_sessions([morning, evening, tomorrow]) == 2
    # A session named like a day is still a session, never that day.
    named = Sighting("d", DAY.date().isoformat(), DAY)
    assert distinct_sessions([morning, named]) == 2


def test_only_a_new_session_counts() -> None:
    seen = [
        Sighting("a", "s1", DAY),
        Sighting("b", "s1", DAY + timedelta(minutes=1)),
        Sighting("c", "s2", DAY + timedelta(minutes=2)),
    ]
    assert [s.memory_id for s in counted(seen)] == ["a", "c"]
    assert has_earned(seen, 2)
    assert not has_earned(seen, 3)


_sightings = st.lists(
    st.builds(
        Sighting,
        st.text(alphabet="abcdef0123", min_size=1, max_size=6),
        st.none() | st.sampled_from(["s1", "s2", "s3", "s4"]),
        st.datetimes(
            min_value=datetime(2026, 1, 1), max_value=datetime(2026, 1, 5), timezones=st.just(UTC)
        ),
    ),
    max_size=12,
)


@given(_sightings, st.randoms())
def test_the_count_is_the_number_of_distinct_sessions_in_any_order(
    sightings: list[Sighting], rnd: random.Random
) -> None:
    shuffled = list(sightings)
    rnd.shuffle(shuffled)
    tokens = {session_of(s.session, s.created_at) for s in sightings}
    assert distinct_sessions(shuffled) == distinct_sessions(sightings) == len(tokens)
    kept = counted(shuffled)
    assert len({session_of(s.session, s.created_at) for s in kept}) == len(kept)
