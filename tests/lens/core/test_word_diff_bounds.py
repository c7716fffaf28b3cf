"""Word diffs have a known worst case (``lens.core.diffs.word_diff``): difflib's own answer
on small texts, a correct diff of both texts always, and well under a second on the
largest inputs a memory or an authored value allows. Pure: no database.
"""

from __future__ import annotations

import difflib
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lens.core.diffs import WordOp, word_diff, word_parts
from lens.core.opcodes import STEP_BUDGET, bounded, opcodes
from memory.core.deliveries import Facts, compare
from tests.lens.core.test_diffs import patched
from tests.samples import fastest

CONTENT_MAX = 10_000  # a memory's content limit, in code points
MIB = 1 << 20  # a request body's limit: an authored value is bounded only by it


def difflib_word_diff(old: str, new: str) -> list[tuple[WordOp, str]]:
    """The unbounded word diff the product used before: the reference on small texts."""
    a, b = (old.split(" ") if old else []), (new.split(" ") if new else [])
    return word_parts(a, b, difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes())


def sides(parts: list[tuple[WordOp, str]]) -> tuple[str, str]:
    """The old text (equal and deleted runs) and the new one (equal and inserted runs)."""
    old = " ".join(text for op, text in parts if op != "insert")
    new = " ".join(text for op, text in parts if op != "delete")
    return old, new


def alternating(first: str, second: str, words: int) -> str:
    return " ".join([first, second] * (words // 2))


def two_words(seed: int, words: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice("ab") for _ in range(words))


# --- small texts: exactly the old answer ------------------------------------------------

small_words = st.lists(st.sampled_from(["a", "b", "c", "tea", "", "x"]), max_size=30)


@given(small_words, small_words)
def test_small_texts_get_exactly_difflibs_word_diff(
    old_words: list[str], new_words: list[str]
) -> None:
    old, new = " ".join(old_words), " ".join(new_words)
    assert word_diff(old, new) == difflib_word_diff(old, new)


@given(st.text(alphabet="ab c", max_size=60), st.text(alphabet="ab c", max_size=60))
def test_small_texts_with_runs_of_spaces_get_difflibs_word_diff(old: str, new: str) -> None:
    assert word_diff(old, new) == difflib_word_diff(old, new)


# --- every text: both sides rebuild -----------------------------------------------------

words = st.lists(st.sampled_from(["a", "b", "c", ""]), max_size=300)


@given(words, words, st.integers(min_value=0, max_value=3_000))
def test_the_diff_rebuilds_both_texts_whatever_budget_is_left(
    old_words: list[str], new_words: list[str], left: int
) -> None:
    old, new = " ".join(old_words), " ".join(new_words)
    parts = word_diff(old, new, [left])
    assert sides(parts) == (old, new)
    ops = [op for op, _text in parts]
    assert all(not (x == y == "equal") for x, y in zip(ops, ops[1:], strict=False))


def test_past_the_budget_the_common_ends_are_kept_and_the_middle_replaced() -> None:
    assert word_diff("keep this b a b a and this", "keep this a b a b and this", [0]) == [
        ("equal", "keep this"),
        ("delete", "b a b a"),
        ("insert", "a b a b"),
        ("equal", "and this"),
    ]
    # With budget left, the same texts get a finer diff.
    assert len(word_diff("keep this b a b a and this", "keep this a b a b and this")) > 4


def test_a_shared_budget_is_spent_in_place_and_a_spent_one_costs_nothing() -> None:
    old, new = two_words(1, 5_000), two_words(2, 5_000)
    budget = [30_000]
    word_diff(old, new, budget)
    assert budget[0] <= 0  # the search ran out: this pair needs far more
    spent = budget[0]
    parts = word_diff(old, new, budget)
    assert budget[0] == spent
    assert sides(parts) == (old, new)
    assert [op for op, _text in parts if op != "equal"] == ["delete", "insert"]


def test_difflibs_share_of_a_budget_is_charged_at_its_worst_case() -> None:
    a, b = list("abcabcabca"), list("bcabcabcab")
    found = bounded(a, b, STEP_BUDGET, autojunk=False)
    assert found.opcodes == opcodes(a, b, autojunk=False)
    assert found.steps >= len(a) + len(b)


# --- the worst cases: under a second each -----------------------------------------------

WORST = {
    # Two maximal memories of alternating words, each the other's words shifted by one.
    "alternating memories": (("a b " * 2_500), ("b a " * 2_500)),
    "2,500 x 2,500 words": (alternating("x", "y", 2_500), alternating("y", "x", 2_500)),
    "5,000 x 5,000 words": (alternating("x", "y", 5_000), alternating("y", "x", 5_000)),
    # Random words of a two-word vocabulary: a long shortest script, Myers' worst case.
    "random two-word memories": (two_words(1, 5_000), two_words(2, 5_000)),
    "an authored megabyte against a memory": (("a b " * MIB)[:MIB], ("b a " * 2_500)),
    "a memory against an authored megabyte": (("a " * 5_000), ("a b " * MIB)[:MIB]),
    "an authored megabyte of distinct words": (
        " ".join(f"w{i % 997}" for i in range(140_000)),
        two_words(3, 5_000),
    ),
    "highly repetitive": (("a " * 4_999) + "a", ("a a b " * 1_666) + "a"),
}


@pytest.mark.parametrize(("old", "new"), list(WORST.values()), ids=list(WORST))
def test_worst_case_word_diffs_finish_within_a_second(old: str, new: str) -> None:
    parts, elapsed = fastest(lambda: word_diff(old, new))
    assert elapsed < 1.0, elapsed
    assert sides(parts) == (old, new)


def test_the_probes_memories_are_at_the_content_limit() -> None:
    old, new = WORST["alternating memories"]
    assert len(old) == len(new) == CONTENT_MAX


def test_a_page_of_worst_case_diffs_sharing_a_budget_stays_fast() -> None:
    """25 rows of maximal memories differing everywhere, as an approval page diffs them."""
    pairs = [WORST["random two-word memories"], WORST["alternating memories"]] * 13

    def page() -> list[list[tuple[WordOp, str]]]:
        budget = [100_000]
        return [word_diff(old, new, budget) for old, new in pairs[:25]]

    diffs, elapsed = fastest(page)
    assert elapsed < 0.5, elapsed
    assert all(sides(parts) == pair for parts, pair in zip(diffs, pairs, strict=False))


# --- delivery prompts: every line changed -----------------------------------------------

PROMPT_LINES = 2_000


def prompt(line: str) -> str:
    """A prompt of about 160,000 characters in 2,000 lines."""
    return "".join(line.format(i=i).ljust(79, ".") + "\n" for i in range(PROMPT_LINES))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (prompt("- **k{i}**: old value"), prompt("- **k{i}**: new value")),
        (prompt("- {i}"), prompt("+ {i}")),
        # Every line changed, drawn from few distinct lines: many equal pairs.
        (
            "".join(f"{i % 100}\n".rjust(80, "-") for i in range(PROMPT_LINES)),
            "".join(f"{(i * 7) % 100}\n".rjust(80, "+") for i in range(PROMPT_LINES)),
        ),
        (
            "".join(f"{i % 50}\n".rjust(80, "-") for i in range(PROMPT_LINES)),
            "".join(f"{(i * 7) % 50}\n".rjust(80, "-") for i in range(PROMPT_LINES)),
        ),
    ],
    ids=["distinct lines", "numbered lines", "repeated lines", "shuffled repeated lines"],
)
def test_delivery_prompts_with_every_line_changed_compare_within_a_second(
    old: str, new: str
) -> None:
    assert len(old) >= 160_000
    before = Facts(prompt=old, memory_ids=frozenset(), tokens=0)
    after = Facts(prompt=new, memory_ids=frozenset(), tokens=0)
    comparison, elapsed = fastest(lambda: compare(before, after, "d1", "d2"))
    assert elapsed < 1.0, elapsed
    assert patched(old, comparison.diff) == new
