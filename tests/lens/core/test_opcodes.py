"""Bounded opcodes (``lens.core.opcodes``): correct scripts, shortest ones from Myers,
difflib's own answer where it is cheap, and a known worst case everywhere else. Pure.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Hashable, Sequence
from functools import cache
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lens.core.opcodes import (
    STEP_BUDGET,
    Opcode,
    coarse,
    common_ends,
    difflib_worst_case,
    edit_script,
    opcodes,
    shortest,
)
from tests.samples import fastest

# Few distinct elements: many equal pairs, the hard case for every diff.
sequences = st.lists(st.sampled_from("abcd"), max_size=40)


def apply(a: Sequence[Hashable], b: Sequence[Hashable], codes: list[Opcode]) -> list[Hashable]:
    """``b`` rebuilt from the script: the kept elements of ``a`` and the added ones of ``b``,
    checking on the way that the script covers both sides in order, without gaps."""
    rebuilt: list[Hashable] = []
    i = j = 0
    for tag, i1, i2, j1, j2 in codes:
        assert (i1, j1) == (i, j)
        assert i1 <= i2
        assert j1 <= j2
        if tag == "equal":
            assert list(a[i1:i2]) == list(b[j1:j2])
            rebuilt.extend(a[i1:i2])
        else:
            assert (tag == "delete") == (j1 == j2)
            assert (tag == "insert") == (i1 == i2)
            rebuilt.extend(b[j1:j2])
        i, j = i2, j2
    assert (i, j) == (len(a), len(b))
    return rebuilt


def edits(codes: list[Opcode]) -> int:
    return sum((i2 - i1) + (j2 - j1) for tag, i1, i2, j1, j2 in codes if tag != "equal")


def fewest_edits(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Insertions plus deletions of a shortest script, by the textbook LCS table."""

    @cache
    def lcs(i: int, j: int) -> int:
        if i == len(a) or j == len(b):
            return 0
        if a[i] == b[j]:
            return 1 + lcs(i + 1, j + 1)
        return max(lcs(i + 1, j), lcs(i, j + 1))

    return len(a) + len(b) - 2 * lcs(0, 0)


# --- correct, shortest, familiar -------------------------------------------------------


@settings(deadline=None)
@given(sequences, sequences)
def test_every_script_rebuilds_the_new_sequence(a: list[str], b: list[str]) -> None:
    # A deadline no pause of a loaded machine reaches: these answers must be complete.
    for codes in (opcodes(a, b, deadline=60), shortest(a, b, deadline=60), coarse(a, b)):
        assert codes is not None
        assert apply(a, b, codes) == b


@settings(deadline=None)
@given(sequences, sequences)
def test_myers_finds_a_shortest_script(a: list[str], b: list[str]) -> None:
    codes = shortest(a, b, deadline=60)
    assert codes is not None
    assert edits(codes) == fewest_edits(a, b)


@given(sequences, sequences)
def test_where_difflib_is_cheap_its_answer_is_kept(a: list[str], b: list[str]) -> None:
    assert difflib_worst_case(a, b) <= STEP_BUDGET  # small inputs always are
    assert opcodes(a, b) == difflib.SequenceMatcher(a=a, b=b).get_opcodes()


@given(sequences, sequences)
def test_the_common_ends_never_overlap(a: list[str], b: list[str]) -> None:
    head, tail = common_ends(a, b)
    assert head + tail <= min(len(a), len(b))
    assert a[:head] == b[:head]
    assert a[len(a) - tail :] == b[len(b) - tail :]


def naive_ends(a: Sequence[Hashable], b: Sequence[Hashable]) -> tuple[int, int]:
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    return head, tail


@given(
    st.integers(0, 700),
    st.integers(0, 700),
    st.lists(st.integers(0, 1400), max_size=3),
    st.integers(-3, 3),
)
def test_the_common_ends_are_found_across_runs_of_any_length(
    size: int, tail_size: int, changes: list[int], grow: int
) -> None:
    a = [f"line {i}" for i in range(size + tail_size)]
    b = list(a)
    for at in changes:
        if at < len(b):
            b[at] = "changed"
    b = b[: len(b) + grow] if grow < 0 else b + ["more"] * grow
    assert common_ends(a, b) == naive_ends(a, b)
    assert common_ends(b, a) == naive_ends(b, a)


def test_equal_and_empty_sequences() -> None:
    assert opcodes([], []) == []
    assert shortest([], []) == []
    assert opcodes(["x"], ["x"]) == [("equal", 0, 1, 0, 1)]
    assert shortest(["x", "y"], []) == [("delete", 0, 2, 0, 0)]
    assert shortest([], ["x"]) == [("insert", 0, 0, 0, 1)]
    assert coarse(["a", "b", "c"], ["a", "x", "c"]) == [
        ("equal", 0, 1, 0, 1),
        ("replace", 1, 2, 1, 2),
        ("equal", 2, 3, 2, 3),
    ]


def test_the_difflib_bound_holds_on_its_own_worst_inputs() -> None:
    """The bound is an upper limit on difflib's inner loop: count it for real."""
    for a, b in (
        (list("ab" * 60), list("ba" * 60)),
        (list("abcabc" * 20), list("cab" * 40)),
        ([str(i % 7) for i in range(150)], [str(i % 5) for i in range(150)]),
    ):
        assert _difflib_steps(a, b) <= difflib_worst_case(a, b)


def _difflib_steps(a: list[str], b: list[str]) -> int:
    """difflib's matcher, counting the positions its longest-match loop visits."""
    steps = [0]
    matcher = difflib.SequenceMatcher(a=a, b=b)
    find = matcher.find_longest_match
    positions: dict[str, list[int]] = matcher.b2j  # type: ignore[attr-defined]  # internal

    def counted(alo: int = 0, ahi: int | None = None, blo: int = 0, bhi: int | None = None) -> Any:
        top = len(a) if ahi is None else ahi
        steps[0] += sum(1 + len(positions.get(a[i], [])) for i in range(alo, top))
        return find(alo, ahi, blo, bhi)

    matcher.find_longest_match = counted  # type: ignore[method-assign]  # counts its visits
    matcher.get_opcodes()
    return steps[0]


# --- the worst case is pinned ----------------------------------------------------------

# Generous for a loaded CI machine; on a quiet one each takes a fraction of this.
WORST_SECONDS = 1.0


@pytest.mark.parametrize(
    ("name", "a", "b"),
    [
        # Two 9,000-line texts of 100 repeated lines, shuffled differently: difflib took
        # seconds on these.
        (
            "shuffled repeats",
            [str(i % 100) for i in range(9000)],
            [str((i * 7) % 100) for i in range(9000)],
        ),
        # The most lines a 36,000-character payload can hold, every one repeated.
        ("one line repeated", ["a"] * 18_000, ["a", "b"] * 9_000),
        ("two lines alternating", ["a", "b"] * 9_000, ["b", "a"] * 9_000),
        # Nothing in common but one line in the middle.
        (
            "almost disjoint",
            [f"x{i}" for i in range(18_000)],
            [f"y{i}" for i in range(9_000)] + ["x9000"] + [f"y{i}" for i in range(9_000)],
        ),
        # Everything in common but a scattering of changes all the way through.
        (
            "many scattered changes",
            [f"line {i}" for i in range(18_000)],
            [f"line {i}" if i % 7 else f"changed {i}" for i in range(18_000)],
        ),
    ],
)
def test_adversarial_inputs_finish_quickly_with_a_correct_answer_or_none(
    name: str, a: list[str], b: list[str]
) -> None:
    opcodes(a[:50], b[:50])  # warm-up
    codes, elapsed = fastest(lambda: opcodes(a, b))
    assert elapsed < WORST_SECONDS, (name, elapsed)
    if codes is not None:
        assert apply(a, b, codes) == b


def test_a_budget_is_never_overspent_by_more_than_one_round() -> None:
    a, b = [str(i % 100) for i in range(9000)], [str((i * 7) % 100) for i in range(9000)]
    found = edit_script(a, b, 50_000)
    assert found.opcodes is None
    # Checked after every diagonal: one snake (at most min(n, m)) past it, plus the setup.
    assert found.steps <= 50_000 + min(len(a), len(b)) + len(a) + len(b) + 1


def test_a_deadline_stops_a_search_the_budget_would_allow() -> None:
    a, b = [str(i % 100) for i in range(9000)], [str((i * 7) % 100) for i in range(9000)]
    started = time.perf_counter()
    assert shortest(a, b, 10**12, deadline=0.05) is None
    assert time.perf_counter() - started < WORST_SECONDS


@settings(max_examples=50, deadline=None)
@given(st.lists(st.sampled_from("ab"), min_size=300, max_size=400))
def test_a_large_enough_input_goes_to_myers_and_stays_correct(a: list[str]) -> None:
    b = list(reversed(a))
    codes = opcodes(a, b)
    if codes is not None:
        assert apply(a, b, codes) == b
