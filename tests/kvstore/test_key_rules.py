"""The key/value store's pure rules (kvstore/keys.py): keys, code points, first lines,
diffs. No database: these are plain functions.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvstore.core.keys import (
    FIRST_LINE_MAX,
    KEY_CHARS,
    KEY_MAX,
    PAYLOAD_MAX_RUNES,
    PREFIX_END,
    first_line,
    key_problem,
    runes,
)
from lens.core.diffs import unified_diff
from tests.samples import GRINNING

KEY_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_:-"

# --- limits ------------------------------------------------------------------------


def test_the_limits_are_the_ones_the_spec_names() -> None:
    assert KEY_MAX == 256
    assert PAYLOAD_MAX_RUNES == 36_000
    assert FIRST_LINE_MAX == 120


# --- keys --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "root",
        "must.craft.traps",
        "agentmemories.root",
        "a:b_c-d",
        "a",
        "Z",
        "0",
        "_",
        ":",
        "-",
        "UPPER.lower.0123",
        "a.b.c.d.e.f.g",
        "x" * KEY_MAX,
        "a." * 127 + "zz",
    ],
)
def test_a_well_formed_key_has_no_problem(key: str) -> None:
    assert key_problem(key) is None


@pytest.mark.parametrize(
    "key",
    [
        "a/b",
        "/root",
        "a\\b",
        "a..b",
        "..",
        ".",
        ".a",
        ".root.leaf",
        "a.",
        "root.leaf.",
        "a b",
        " root",
        "root ",
        "a...b",
        "a\tb",
        "root\n",
        "\nroot",
        "a\x00b",
        "café",
        "ключ",
        "日本",
        "naïve.key",
        "１２３",  # fullwidth digits are not [0-9]
        "a*b",
        "a%b",
        "a+b",
        "a,b",
        "a@b",
        "a#b",
        "a?b",
        "\U0001f600",
    ],
)
def test_a_malformed_key_is_refused_with_a_reason(key: str) -> None:
    problem = key_problem(key)
    assert problem is not None
    assert problem.strip()


def test_an_empty_key_is_refused() -> None:
    problem = key_problem("")
    assert problem is not None
    assert "0" in problem


def test_a_key_one_character_over_the_limit_is_refused_and_the_reason_gives_both_sizes() -> None:
    problem = key_problem("x" * (KEY_MAX + 1))
    assert problem is not None
    assert str(KEY_MAX) in problem
    assert str(KEY_MAX + 1) in problem


def test_a_long_key_of_non_ascii_letters_is_refused_even_below_the_limit() -> None:
    assert key_problem("é" * 10) is not None


@given(st.lists(st.text(alphabet=KEY_ALPHABET, min_size=1, max_size=8), min_size=1, max_size=6))
def test_any_dot_joined_run_of_allowed_segments_is_a_key(segments: list[str]) -> None:
    key = ".".join(segments)
    assert key_problem(key) is None


@given(st.text(max_size=40))
def test_a_key_is_valid_exactly_when_it_is_dot_separated_non_empty_allowed_segments(
    key: str,
) -> None:
    expected = (
        1 <= len(key) <= KEY_MAX
        and all(segment for segment in key.split("."))
        and all(char in KEY_ALPHABET + "." for char in key)
    )
    assert (key_problem(key) is None) is expected


# --- the prefix range used by list -------------------------------------------------


def test_every_character_a_key_may_hold_sorts_below_the_prefix_end() -> None:
    assert set(KEY_ALPHABET + ".") == KEY_CHARS
    assert all(char < PREFIX_END for char in KEY_CHARS)


def test_key_chars_are_exactly_the_characters_of_valid_keys() -> None:
    for code in range(0x250):
        char = chr(code)
        assert (key_problem(f"a{char}b") is None) is (char in KEY_CHARS)


@given(
    st.text(alphabet=KEY_ALPHABET + ".", max_size=6),
    st.text(alphabet=KEY_ALPHABET + ".", max_size=6),
)
def test_the_prefix_range_holds_exactly_the_keys_that_start_with_the_prefix(
    prefix: str, key: str
) -> None:
    in_range = prefix <= key < prefix + PREFIX_END
    assert in_range is key.startswith(prefix)


# --- runes (code points) -----------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ("", 0),
        ("abc", 3),
        (GRINNING, 1),  # one code point, two UTF-16 units, four UTF-8 bytes
        ("é", 1),  # precomposed
        ("e\u0301", 2),  # e + combining acute: one grapheme, two code points
        ("👍🏽", 2),  # emoji + skin tone modifier
        ("👨\u200d👩\u200d👧", 5),  # ZWJ family: three emoji, two joiners
        ("שלום", 4),
        ("\r\n", 2),
        ("\x00", 1),
        ("\U0010ffff", 1),
    ],
)
def test_runes_counts_code_points_not_bytes_units_or_graphemes(payload: str, expected: int) -> None:
    assert runes(payload) == expected


def test_runes_of_the_largest_payload_of_astral_characters_is_the_limit() -> None:
    assert runes(GRINNING * PAYLOAD_MAX_RUNES) == PAYLOAD_MAX_RUNES


# --- first_line --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ("", ""),
        ("only line", "only line"),
        ("first\nsecond\nthird", "first"),
        ("first\r\nsecond", "first"),
        ("first\rsecond", "first"),
        ("trailing newline\n", "trailing newline"),
        ("\nsecond", ""),
        ("\r\nsecond", ""),
        ("  indented  \nnext", "  indented  "),
        ("שלום\nעולם", "שלום"),
    ],
)
def test_first_line_is_the_payloads_first_line(payload: str, expected: str) -> None:
    assert first_line(payload) == expected


def test_first_line_never_carries_a_line_ending() -> None:
    for payload in ["a\r\nb", "a\nb", "a\rb", "a\r\n"]:
        assert "\r" not in first_line(payload)
        assert "\n" not in first_line(payload)


def test_a_long_first_line_is_cut_to_120_code_points() -> None:
    line = "".join(chr(ord("a") + i % 26) for i in range(200))
    assert first_line(line + "\nsecond") == line[:FIRST_LINE_MAX]
    assert len(first_line(line)) == FIRST_LINE_MAX


def test_a_first_line_of_exactly_120_code_points_is_kept_whole() -> None:
    line = "y" * FIRST_LINE_MAX
    assert first_line(line + "\nmore") == line


def test_a_long_first_line_of_astral_characters_is_cut_by_code_points() -> None:
    assert first_line(GRINNING * 200) == GRINNING * FIRST_LINE_MAX


def test_only_the_first_line_is_cut_even_when_later_lines_are_long() -> None:
    assert first_line("short\n" + "z" * 500) == "short"


# --- unified_diff ------------------------------------------------------------------


def test_a_diff_of_a_changed_line_is_a_unified_diff() -> None:
    text = unified_diff("alpha\nbeta\ngamma\n", "alpha\nBETA\ngamma\n", "k@1", "k@2")
    lines = text.splitlines()
    assert lines[0] == "--- k@1"
    assert lines[1] == "+++ k@2"
    assert lines[2].startswith("@@")
    assert "-beta" in lines
    assert "+BETA" in lines
    assert " alpha" in lines
    assert " gamma" in lines


def test_a_diff_of_equal_texts_is_empty() -> None:
    assert unified_diff("same\n", "same\n", "k@1", "k@1") == ""
    assert unified_diff("", "", "k@1", "k@2") == ""


def test_a_diff_from_empty_adds_every_line() -> None:
    lines = unified_diff("", "one\ntwo\n", "k@1", "k@2").splitlines()
    assert "+one" in lines
    assert "+two" in lines
    assert not any(line.startswith("-") and not line.startswith("---") for line in lines)


def test_a_diff_marks_a_missing_final_newline_and_keeps_lines_apart() -> None:
    text = unified_diff("old", "new", "k@1", "k@2")
    assert text.endswith("\n")
    lines = text.splitlines()
    assert "-old" in lines
    assert "+new" in lines
    assert "\\ No newline at end of file" in lines
    # Nothing glued together: the removed and added lines are separate lines.
    assert "-old+new" not in text


def test_a_diff_handles_astral_and_right_to_left_text() -> None:
    lines = unified_diff(f"{GRINNING}\nשלום\n", "😢\nשלום\n", "k@1", "k@2").splitlines()
    assert f"-{GRINNING}" in lines
    assert "+😢" in lines
    assert " שלום" in lines
