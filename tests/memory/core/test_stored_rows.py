"""Whether a stored row still reads as a record (SPEC §6.3): the quick answer a
composition uses agrees with the full check for every row."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from memory.core.records import CONTENT_MAX, stored_problem, stored_readable

_KINDS = st.one_of(
    st.sampled_from(["profile", "fact", "Preference", "", "x" * 33, "a-b_1"]),
    st.text(max_size=40),
    st.none(),
    st.integers(),
)
_LABELS = st.one_of(
    st.none(),
    st.sampled_from(["", "name", "x" * 64, "x" * 65, "a\nb", "tab\there", "ok label"]),
    st.text(max_size=70),
    st.integers(),
)
_TAGS = st.one_of(
    st.none(),
    st.just([]),
    st.lists(st.text(max_size=70), max_size=40),
    st.lists(st.integers(), max_size=2),
    st.sampled_from(["", "tag", 0, {}, ()]),
)
_LENGTHS = st.sampled_from([0, 1, 2, CONTENT_MAX, CONTENT_MAX + 1, 500])


@given(_KINDS, _LENGTHS, _TAGS, _LABELS)
def test_the_quick_answer_is_the_full_checks(kind: Any, length: int, tags: Any, label: Any) -> None:
    # Asked twice: the second answer may come from what the first one remembered.
    expected = stored_problem(kind, length, tags or [], label) is None
    assert stored_readable(kind, length, tags, label) is expected
    assert stored_readable(kind, length, tags, label) is expected
