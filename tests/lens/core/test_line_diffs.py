"""Line diffs drawn on pages (``lens.core.line_diffs``): numbered rows, changed words
marked, a sentence when there is nothing to draw, and every cost bounded. Pure.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvstore.core.keys import PAYLOAD_MAX_RUNES
from lens.core.line_diffs import (
    MAX_ROWS,
    Change,
    LineDiff,
    Row,
    change,
    changed_words,
    line_diff,
    split_lines,
)
from tests.samples import fastest

texts = st.lists(st.sampled_from(["a", "b", "c", "", "a b", "b c d"]), max_size=30).map(
    lambda lines: "\n".join(lines)
) | st.text(alphabet="ab \n", max_size=60)


def rows_as_text(diff: LineDiff) -> list[str]:
    signs = {"context": " ", "add": "+", "delete": "-"}
    return [
        f"... {row.skipped}" if row.kind == "gap" else signs[row.kind] + row.text
        for row in diff.rows
    ]


def new_side(diff: LineDiff, old: str) -> list[str]:
    """The new text's lines, rebuilt from the rows: context and added lines in order, and
    the old text's own lines for each gap."""
    old_lines, _ = split_lines(old)
    lines: list[str] = []
    old_at = 0
    for row in diff.rows:
        if row.kind == "gap":
            lines += old_lines[old_at : old_at + row.skipped]
            old_at += row.skipped
        elif row.kind == "context":
            lines.append(row.text)
            old_at += 1
        elif row.kind == "delete":
            old_at += 1
        else:
            lines.append(row.text)
    return lines


def old_side(diff: LineDiff, old: str) -> list[str]:
    old_lines, _ = split_lines(old)
    lines: list[str] = []
    for row in diff.rows:
        if row.kind == "gap":
            lines += old_lines[len(lines) : len(lines) + row.skipped]
        elif row.kind in ("context", "delete"):
            lines.append(row.text)
    return lines


# --- what is drawn ---------------------------------------------------------------------


def test_a_changed_line_is_a_removed_row_then_an_added_row_with_numbers() -> None:
    diff = line_diff("alpha\nbeta\ngamma\n", "alpha\nBETA <changed>\ngamma\n")
    assert diff.verdict == "changed"
    assert (diff.added, diff.removed) == (1, 1)
    assert [(r.kind, r.old_number, r.new_number, r.text) for r in diff.rows] == [
        ("context", 1, 1, "alpha"),
        ("delete", 2, None, "beta"),
        ("add", None, 2, "BETA <changed>"),
        ("context", 3, 3, "gamma"),
    ]


def test_inside_a_changed_pair_the_changed_words_are_marked() -> None:
    diff = line_diff("the cat sat on the mat\n", "the dog sat on the mat\n")
    removed, added = diff.rows
    assert removed.parts == (("same", "the "), ("changed", "cat"), ("same", " sat on the mat"))
    assert added.parts == (("same", "the "), ("changed", "dog"), ("same", " sat on the mat"))


def test_lines_with_little_in_common_are_not_marked_word_by_word() -> None:
    diff = line_diff("He is in Lisbon.\n", "Completely different words here, all of them.\n")
    assert all(part == "same" for row in diff.rows for part, _text in row.parts)


def test_far_apart_changes_are_separate_hunks_with_the_unchanged_lines_counted() -> None:
    old = "".join(f"line {i}\n" for i in range(1, 31))
    new = old.replace("line 5\n", "line five\n").replace("line 25\n", "")
    diff = line_diff(old, new)
    assert rows_as_text(diff) == [
        "... 1",
        " line 2",
        " line 3",
        " line 4",
        "-line 5",
        "+line five",
        " line 6",
        " line 7",
        " line 8",
        "... 13",
        " line 22",
        " line 23",
        " line 24",
        "-line 25",
        " line 26",
        " line 27",
        " line 28",
        "... 2",
    ]
    # Numbers on both sides: line 26 of the old text is line 25 of the new one.
    row = next(r for r in diff.rows if r.text == "line 26")
    assert (row.old_number, row.new_number) == (26, 25)


def test_identical_texts_say_no_changes() -> None:
    diff = line_diff("same\ntext\n", "same\ntext\n")
    assert (diff.verdict, diff.rows) == ("same", ())
    assert line_diff("", "").verdict == "same"


@pytest.mark.parametrize(("old", "new"), [("a\nb\n", "a\nb"), ("a\nb", "a\nb\n"), ("one", "one\n")])
def test_only_a_final_newline_is_said_in_words_never_drawn(old: str, new: str) -> None:
    diff = line_diff(old, new)
    assert diff.verdict == "newline_only"
    assert diff.rows == ()
    assert diff.old_final_newline == old.endswith("\n")
    assert diff.new_final_newline == new.endswith("\n")


def test_a_final_newline_change_beside_other_changes_is_a_flag_not_a_row() -> None:
    diff = line_diff("old\n", "new")
    assert rows_as_text(diff) == ["-old", "+new"]
    assert diff.final_newline_differs
    assert "No newline" not in " ".join(rows_as_text(diff))


# --- properties ------------------------------------------------------------------------


@given(texts, texts)
def test_kept_and_added_rows_rebuild_the_new_text_and_kept_and_removed_the_old(
    old: str, new: str
) -> None:
    diff = line_diff(old, new)
    if diff.verdict in ("same", "newline_only"):
        assert split_lines(old)[0] == split_lines(new)[0]
        return
    assert diff.verdict == "changed"
    assert new_side(diff, old) == split_lines(new)[0]
    assert old_side(diff, old) == split_lines(old)[0]
    assert diff.added == sum(r.kind == "add" for r in diff.rows)
    assert diff.removed == sum(r.kind == "delete" for r in diff.rows)


@given(st.text(alphabet="ab .,", max_size=40), st.text(alphabet="ab .,", max_size=40))
def test_marked_pieces_rebuild_both_lines(old: str, new: str) -> None:
    marked = changed_words(old, new, [10_000])
    if marked is None:
        return
    old_parts, new_parts = marked
    assert "".join(text for _kind, text in old_parts) == old
    assert "".join(text for _kind, text in new_parts) == new
    # What is the same on one side is the same on the other.
    assert "".join(t for k, t in old_parts if k == "same") == "".join(
        t for k, t in new_parts if k == "same"
    )


# --- bounds ----------------------------------------------------------------------------

WORST_SECONDS = 1.0


def test_two_9000_line_versions_of_repeated_lines_are_too_large_and_quick() -> None:
    old = "\n".join(str(i % 100) for i in range(9000))
    new = "\n".join(str((i * 7) % 100) for i in range(9000))
    diff, elapsed = fastest(lambda: line_diff(old, new))
    assert elapsed < WORST_SECONDS, elapsed
    assert diff.verdict == "too_large"
    assert (diff.old_lines, diff.new_lines) == (9000, 9000)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # The largest payloads the store takes, as many lines as they can hold.
        ("a\n" * (PAYLOAD_MAX_RUNES // 2), "ab\n" * (PAYLOAD_MAX_RUNES // 3)),
        ("a\n" * (PAYLOAD_MAX_RUNES // 2), "b\na\n" * (PAYLOAD_MAX_RUNES // 4)),
        # One enormous line each, nearly the same: the word marks have their own budget.
        ("w " * (PAYLOAD_MAX_RUNES // 2), "w " * (PAYLOAD_MAX_RUNES // 2 - 1) + "x "),
        ("ab " * (PAYLOAD_MAX_RUNES // 3), "ba " * (PAYLOAD_MAX_RUNES // 3)),
        # Every line changed a little: many pairs to mark, one budget for all of them.
        (
            "".join(f"{i:04d} the same words here\n" for i in range(990)),
            "".join(f"{i:04d} the same words there\n" for i in range(990)),
        ),
        (
            "".join(f"{i:04d} {'ab ' * 30}\n" for i in range(370)),
            "".join(f"{i:04d} {'ba ' * 30}\n" for i in range(370)),
        ),
    ],
)
def test_the_largest_payloads_finish_quickly(old: str, new: str) -> None:
    assert len(old) <= PAYLOAD_MAX_RUNES
    assert len(new) <= PAYLOAD_MAX_RUNES
    diff, elapsed = fastest(lambda: line_diff(old, new))
    assert elapsed < WORST_SECONDS, elapsed
    assert diff.verdict in ("changed", "too_large")


def test_more_rows_than_a_page_can_show_are_too_large() -> None:
    old = "".join(f"old {i}\n" for i in range(MAX_ROWS))
    new = "".join(f"new {i}\n" for i in range(MAX_ROWS))
    diff = line_diff(old, new)
    assert diff.verdict == "too_large"
    assert (diff.added, diff.removed) == (MAX_ROWS, MAX_ROWS)
    assert line_diff(old[: len(old) // 4], new[: len(new) // 4]).verdict == "changed"


def test_word_marks_stop_when_their_budget_is_spent() -> None:
    old = "".join(f"{i} alpha beta gamma\n" for i in range(50))
    new = "".join(f"{i} alpha BETA gamma\n" for i in range(50))
    marked = line_diff(old, new)
    unmarked = line_diff(old, new, word_budget=0)
    assert any(part == "changed" for row in marked.rows for part, _t in row.parts)
    assert all(part == "same" for row in unmarked.rows for part, _t in row.parts)
    assert rows_as_text(marked) == rows_as_text(unmarked)
    assert changed_words("a b", "a c", [0]) is None


def test_a_row_is_its_parts() -> None:
    assert Row("add", None, 1, (("same", "a "), ("changed", "b"))).text == "a b"


# --- the history's preview ---------------------------------------------------------------


def test_a_change_counts_lines_and_names_the_first_added_line() -> None:
    budget = [10_000]
    assert change("a\nb\n", "a\nc\nd\n", budget) == Change(2, 1, "c", False, False, False)
    assert 0 < budget[0] < 10_000


def test_a_change_that_only_removes_names_the_first_removed_line() -> None:
    assert change("a\nb\nc\n", "a\nc\n", [10_000]) == Change(0, 1, "b", True, False, False)


def test_a_change_of_the_final_newline_or_of_nothing() -> None:
    assert change("a\n", "a", [10_000]).newline_only
    same = change("a\n", "a\n", [10_000])
    assert (same.added, same.removed, same.newline_only) == (0, 0, False)


def test_a_change_past_its_budget_gives_upper_bounds_quickly() -> None:
    old = "\n".join(str(i % 100) for i in range(9000))
    new = "\n".join(str((i * 7) % 100) for i in range(9000))
    started = time.perf_counter()
    found = change(old, new, [30_000])
    assert time.perf_counter() - started < WORST_SECONDS
    assert found.approximate
    assert (found.added, found.removed) == (8999, 8999)  # all but the common first line
    exhausted = change("a\nb\n", "a\nc\n", [0])
    assert exhausted.approximate
    assert (exhausted.added, exhausted.removed, exhausted.first) == (1, 1, "c")


def test_the_first_line_is_cut_to_fit() -> None:
    assert change("", "x" * 500 + "\n", [10_000]).first == "x" * 120
