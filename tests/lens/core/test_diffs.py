"""Diffs shown to people (``lens.core.diffs``): word diffs of memories, line diffs of
key/value versions. Pure: no database.
"""

from __future__ import annotations

import difflib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lens.core.diffs import (
    PAGE_CHARS,
    PAGE_LINES,
    WordOp,
    diff_excerpt,
    diff_lines,
    unified_diff,
    word_diff,
)
from tests.samples import fastest

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


# --- unified_diff: difflib's text where difflib is cheap, bounded everywhere ----------

lines_text = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "\n", "d"]), max_size=25).map("".join)


def difflib_text(old: str, new: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), "k@1", "k@2"
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


def patched(old: str, diff: str) -> str:
    """``old`` with a unified diff applied (hunks in order, context checked)."""
    source = old.splitlines(keepends=True)
    out: list[str] = []
    at = 0
    lines = diff.splitlines(keepends=True)[2:]
    for index, line in enumerate(lines):
        if line.startswith("@@"):
            start = int(line.split()[1][1:].split(",")[0])
            length = line.split()[1].split(",")[1:] or ["1"]
            begin = start - 1 if length != ["0"] else start
            out += source[at:begin]
            at = begin
        elif line.startswith("\\"):
            continue
        else:
            text = line[1:]
            followed = index + 1 < len(lines) and lines[index + 1].startswith("\\")
            if followed:
                text = text[:-1]  # "\ No newline at end of file": the line has none
            if line[0] in " -":
                assert source[at] == text
                at += 1
            if line[0] in " +":
                out.append(text)
    return "".join(out + source[at:])


@given(lines_text, lines_text)
def test_small_diffs_are_exactly_difflibs(old: str, new: str) -> None:
    assert unified_diff(old, new, "k@1", "k@2") == difflib_text(old, new)


@given(lines_text, lines_text)
def test_applying_a_diff_to_the_old_text_gives_the_new_one(old: str, new: str) -> None:
    assert patched(old, unified_diff(old, new, "k@1", "k@2")) == new


def test_two_9000_line_versions_of_repeated_lines_diff_quickly_and_correctly() -> None:
    old = "".join(f"{i % 100}\n" for i in range(9000))
    new = "".join(f"{(i * 7) % 100}\n" for i in range(9000))
    text, elapsed = fastest(lambda: unified_diff(old, new, "k@1", "k@2"))
    assert elapsed < 1.0, elapsed
    # Past its budget the diff keeps the common first line and replaces the rest:
    # not the shortest, but a correct diff.
    assert text.splitlines()[:4] == ["--- k@1", "+++ k@2", "@@ -1,9000 +1,9000 @@", " 0"]
    assert patched(old, text) == new


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("a\n" * 18_000, "a\nb\n" * 9_000),
        ("ab\n" * 12_000, "ba\n" * 12_000),
        ("".join(f"{i}\n" for i in range(7_000)), "".join(f"{i}\n" for i in range(7_000) if i % 3)),
    ],
)
def test_the_largest_payloads_diff_quickly(old: str, new: str) -> None:
    text, elapsed = fastest(lambda: unified_diff(old, new, "k@1", "k@2"))
    assert elapsed < 1.0, elapsed
    assert patched(old, text) == new


# --- diff_excerpt: what a page draws of a unified diff ----------------------------------


def numbered_diff(lines: int) -> str:
    """A unified diff of ``lines`` lines: two file lines, a hunk, then added lines."""
    body = "".join(f"+line {n}\n" for n in range(lines - 3))
    return f"--- a\n+++ b\n@@ -0,0 +1,{lines - 3} @@\n{body}"


@pytest.mark.parametrize("lines", [PAGE_LINES - 1, PAGE_LINES, PAGE_LINES + 1])
def test_an_excerpt_holds_at_most_the_page_lines(lines: int) -> None:
    diff = numbered_diff(lines)
    excerpt = diff_excerpt(diff)
    assert excerpt.total == lines
    assert excerpt.lines == diff_lines(diff)[:PAGE_LINES]
    assert excerpt.more == max(0, lines - PAGE_LINES)
    assert [kind for kind, _text in excerpt.lines[:4]] == ["file", "file", "hunk", "add"]


def test_an_excerpt_of_a_small_diff_is_the_whole_diff() -> None:
    diff = unified_diff("one\ntwo\n", "one\n2\n", "k@1", "k@2")
    excerpt = diff_excerpt(diff)
    assert excerpt.lines == diff_lines(diff)
    assert excerpt.more == 0
    assert diff_excerpt("").lines == []
    assert diff_excerpt("").more == 0


def test_an_excerpt_stops_before_its_characters_run_out() -> None:
    line = "+" + "x" * 999
    diff = "".join(f"{line}\n" for _ in range(PAGE_CHARS // 1000 + 5))
    excerpt = diff_excerpt(diff)
    assert len(excerpt.lines) == PAGE_CHARS // 1000
    assert sum(len(text) for _kind, text in excerpt.lines) == PAGE_CHARS
    assert excerpt.more == 5
    # One character more than fits: that line waits for the download.
    excerpt = diff_excerpt(diff, max_chars=PAGE_CHARS - 1)
    assert len(excerpt.lines) == PAGE_CHARS // 1000 - 1


def test_an_excerpt_shows_a_first_line_longer_than_its_characters() -> None:
    diff = "+" + "x" * (PAGE_CHARS + 10) + "\n+y\n"
    excerpt = diff_excerpt(diff)
    assert [text for _kind, text in excerpt.lines] == [diff.splitlines()[0]]
    assert excerpt.more == 1


def test_an_excerpt_of_540000_alternating_lines_is_quick() -> None:
    old, new = "a\nb\n" * 135_000, "a\nc\n" * 135_000
    diff = unified_diff(old, new, "k@1", "k@2")
    excerpt, elapsed = fastest(lambda: diff_excerpt(diff))
    assert excerpt.total == len(diff.splitlines()) > 540_000
    assert len(excerpt.lines) == PAGE_LINES
    assert elapsed < 0.5, elapsed
