"""Diffs shown to people (``lens.core.diffs``): word diffs of memories, line diffs of
key/value versions. Pure: no database.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lens.core.diffs import WordOp, unified_diff, word_diff

# Words never hold the separator, so a list of them joined by " " splits back into it.
words = st.lists(st.text(st.characters(exclude_characters=" "), min_size=1, max_size=6))


def side(parts: list[tuple[WordOp, str]], keep: WordOp) -> str:
    """One side of the diff: the equal runs and the ``keep`` runs, in order."""
    return " ".join(text for op, text in parts if op in ("equal", keep))


# --- word_diff: examples ---------------------------------------------------------------


def test_identical_text_is_one_equal_run() -> None:
    assert word_diff("the cat sat on the mat", "the cat sat on the mat") == [
        ("equal", "the cat sat on the mat")
    ]


def test_a_changed_word_is_a_delete_then_an_insert_between_equal_runs() -> None:
    assert word_diff("the cat sat", "the dog sat") == [
        ("equal", "the"),
        ("delete", "cat"),
        ("insert", "dog"),
        ("equal", "sat"),
    ]


def test_an_added_word_is_only_an_insert() -> None:
    assert word_diff("prefers tea", "prefers green tea") == [
        ("equal", "prefers"),
        ("insert", "green"),
        ("equal", "tea"),
    ]


def test_a_removed_word_is_only_a_delete() -> None:
    assert word_diff("prefers green tea", "prefers tea") == [
        ("equal", "prefers"),
        ("delete", "green"),
        ("equal", "tea"),
    ]


def test_two_empty_texts_differ_in_nothing() -> None:
    parts = word_diff("", "")
    assert all(op == "equal" for op, _text in parts)
    assert (side(parts, "delete"), side(parts, "insert")) == ("", "")


@pytest.mark.parametrize(("old", "new"), [("", "hello world"), ("hello world", "")])
def test_a_diff_against_an_empty_text_still_rebuilds_both_sides(old: str, new: str) -> None:
    parts = word_diff(old, new)
    assert (side(parts, "delete"), side(parts, "insert")) == (old, new)
    assert ("equal", "hello world") not in parts


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("", "hello world", [("insert", "hello world")]),
        ("hello world", "", [("delete", "hello world")]),
    ],
)
def test_a_diff_against_an_empty_text_is_one_run_of_words(
    old: str, new: str, expected: list[tuple[WordOp, str]]
) -> None:
    assert word_diff(old, new) == expected


# --- word_diff: properties -------------------------------------------------------------


@given(words, words)
def test_equal_and_deleted_runs_rebuild_the_old_text_and_equal_and_inserted_the_new(
    old_words: list[str], new_words: list[str]
) -> None:
    old, new = " ".join(old_words), " ".join(new_words)
    parts = word_diff(old, new)
    assert side(parts, "delete") == old
    assert side(parts, "insert") == new


@given(st.text(alphabet="ab  c"), st.text(alphabet="ab  c"))
def test_both_sides_rebuild_even_with_runs_of_spaces(old: str, new: str) -> None:
    parts = word_diff(old, new)
    assert (side(parts, "delete"), side(parts, "insert")) == (old, new)


@given(words)
def test_a_text_compared_with_itself_has_no_deletes_or_inserts(text_words: list[str]) -> None:
    text = " ".join(text_words)
    assert word_diff(text, text) == ([("equal", text)] if text else [])


@given(words, words)
def test_every_run_is_labelled_with_a_known_operation(
    old_words: list[str], new_words: list[str]
) -> None:
    parts = word_diff(" ".join(old_words), " ".join(new_words))
    assert {op for op, _text in parts} <= {"equal", "delete", "insert"}
    # Two equal runs never touch: the matcher would have merged them.
    ops = [op for op, _text in parts]
    assert all(not (a == b == "equal") for a, b in zip(ops, ops[1:], strict=False))


# --- unified_diff: one smoke test (the rest is in the key/value tests) -----------------


def test_unified_diff_labels_both_sides_and_marks_the_changed_line() -> None:
    text = unified_diff("one\ntwo\n", "one\nthree\n", "k@1", "k@2")
    lines = text.splitlines()
    assert lines[:2] == ["--- k@1", "+++ k@2"]
    assert "-two" in lines
    assert "+three" in lines
    assert " one" in lines
    assert unified_diff("same\n", "same\n", "k@1", "k@2") == ""
