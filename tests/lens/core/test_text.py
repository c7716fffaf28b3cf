"""collapse() and value_text(): the text primitives of SPEC §4.2, without a database."""

from __future__ import annotations

import math
import re
import sys
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lens.core import text as text_module
from lens.core.text import LINE_BREAKS, collapse, value_text
from tests.samples import SPEC_LINE_BREAKS

SINGLE_BREAK_CHARS = [b for b in SPEC_LINE_BREAKS if len(b) == 1]

# Text with a heavy dose of line breaks, other whitespace and markdown line prefixes.
TRICKY_PIECES = [
    *SPEC_LINE_BREAKS,
    " ",
    "\t",
    "\x1f",
    "\u00a0",
    "\u3000",
    "# ",
    "## ",
    "- ",
    "* ",
    "> ",
    "```",
    "~~~",
]


@cache
def all_code_points() -> str:
    """Every code point 0..0x10FFFF, surrogates included, as one string."""
    return "".join(map(chr, range(sys.maxunicode + 1)))


tricky_text = st.lists(
    st.one_of(
        st.text(),
        st.text(st.characters(categories=["Zl", "Zp", "Cc", "Zs"])),
        st.sampled_from(TRICKY_PIECES),
    ),
    max_size=12,
).map("".join)


# --- collapse: the SPEC examples ------------------------------------------------------


def has_line_break(text: str) -> bool:
    return any(char in LINE_BREAKS for char in text)


def test_collapse_turns_the_spec_example_into_one_line() -> None:
    assert collapse("ok\r\n# H\r\n") == "ok # H "


def test_collapse_turns_crlf_runs_into_one_space() -> None:
    assert collapse("a\r\n\r\n\r\nb") == "a b"


@pytest.mark.parametrize("brk", SPEC_LINE_BREAKS, ids=[repr(b) for b in SPEC_LINE_BREAKS])
def test_collapse_replaces_every_spec_line_break_by_one_space(brk: str) -> None:
    assert collapse(f"a{brk}b") == "a b"
    assert collapse(f"a{brk}") == "a "
    assert collapse(f"{brk}b") == " b"
    assert collapse(f"a{brk}   \t{brk}  b") == "a b"


@pytest.mark.parametrize("brk", SPEC_LINE_BREAKS, ids=[repr(b) for b in SPEC_LINE_BREAKS])
def test_collapse_line_breaks_are_exactly_what_splitlines_breaks_on(brk: str) -> None:
    # The SPEC list is derived from str.splitlines(): pin it, both ways.
    assert f"a{brk}b".splitlines() == ["a", "b"]
    assert all(ch in LINE_BREAKS for ch in brk)


def test_collapse_line_break_set_matches_splitlines_over_all_code_points() -> None:
    # "a" between every code point, so "\r" and "\n" never meet as one "\r\n" break.
    pieces = ("a".join(all_code_points()) + "a").splitlines(keepends=True)
    splitters = {piece[-1] for piece in pieces} - {"a"}
    assert splitters == set(LINE_BREAKS) == set(SINGLE_BREAK_CHARS)


def test_collapse_keeps_whitespace_before_a_break() -> None:
    assert collapse("ok  \nnext") == "ok   next"
    assert collapse("  lead\n") == "  lead "


def test_collapse_does_not_swallow_non_space_after_a_break() -> None:
    assert collapse("a\n\t - b") == "a - b"
    assert collapse("x\n#y") == "x #y"
    assert collapse("x\n```") == "x ```"


def test_collapse_leaves_text_without_line_breaks_unchanged() -> None:
    for sample in ["", " ", "  padded  ", "tab\there", "# heading", "- item", "\x1f", "\u00a0nbsp"]:
        assert collapse(sample) == sample


def test_collapse_leaves_unit_separator_alone_because_splitlines_does_not_break_on_it() -> None:
    assert collapse("a\x1fb") == "a\x1fb"
    assert collapse("a\n\x1fb") == "a b"  # but it is whitespace after a break


def test_collapse_treats_unicode_whitespace_after_a_break_as_part_of_the_run() -> None:
    assert collapse("a\n\u00a0\u3000\u2003b") == "a b"
    assert collapse("a\u2028\u2029\x85b") == "a b"


def test_regex_whitespace_agrees_with_isspace_for_every_code_point() -> None:
    # text.py relies on Python's \s being exactly str.isspace(); pin it for all of Unicode.
    pattern = text_module._BREAK_RUN
    assert pattern.pattern.endswith("\\s*")
    assert not pattern.flags & re.ASCII
    matched = re.findall(r"\s", all_code_points())
    spaces = [ch for ch in all_code_points() if ch.isspace()]
    assert matched == spaces


def test_collapse_run_continues_through_every_isspace_character() -> None:
    spaces = [ch for ch in all_code_points() if ch.isspace()]
    assert len(spaces) > 20
    for ch in spaces:
        assert collapse(f"a\n{ch}b") == "a b", hex(ord(ch))
        if ch not in LINE_BREAKS:  # whitespace before a break is kept
            assert collapse(f"a{ch}\nb") == f"a{ch} b", hex(ord(ch))


@settings(max_examples=300)
@given(st.text())
def test_collapse_output_never_splits_into_lines(s: str) -> None:
    assert len(collapse(s).splitlines()) <= 1


@settings(max_examples=300)
@given(tricky_text)
def test_collapse_of_tricky_text_is_one_line_idempotent_and_touches_only_break_runs(s: str) -> None:
    out = collapse(s)
    assert len(out.splitlines()) <= 1
    assert not has_line_break(out)
    assert collapse(out) == out
    # Split the input at every break run: joining the pieces with one space is the
    # output, so nothing outside a run is changed or stripped.
    pieces = re.split(r"[" + re.escape(LINE_BREAKS) + r"]\s*", s)
    assert out == " ".join(pieces)


@settings(max_examples=200)
@given(st.text(st.characters(categories=["Zl", "Zp", "Cc", "Zs", "Ll"])))
def test_collapse_handles_separator_and_control_categories(s: str) -> None:
    assert len(collapse(s).splitlines()) <= 1


@settings(max_examples=200)
@given(st.text().filter(lambda s: not has_line_break(s)))
def test_collapse_is_identity_on_text_without_line_breaks(s: str) -> None:
    assert collapse(s) == s


# --- value_text -----------------------------------------------------------------------


def test_value_text_renders_booleans_as_lowercase_words() -> None:
    assert value_text(True) == "true"
    assert value_text(False) == "false"


def test_value_text_renders_integers_plainly() -> None:
    assert value_text(3) == "3"
    assert value_text(0) == "0"
    assert value_text(-42) == "-42"
    assert value_text(10**30) == "1" + "0" * 30


def test_value_text_renders_integral_floats_like_integers() -> None:
    assert value_text(3.0) == "3"
    assert value_text(-7.0) == "-7"
    assert value_text(0.0) == "0"


def test_value_text_renders_fractions_in_shortest_round_trip_form() -> None:
    assert value_text(2.5) == "2.5"
    assert value_text(-0.5) == "-0.5"
    assert value_text(0.1) == "0.1"
    assert value_text(1 / 3) == repr(1 / 3)


def test_value_text_returns_strings_unchanged() -> None:
    for s in ["", "hello", "  spaced  ", "line\nbreak", "true", "3.0"]:
        assert value_text(s) == s


def test_value_text_round_trips_large_and_tiny_floats() -> None:
    for x in [1e16, 1e22, 1.7976931348623157e308, 5e-324, 2.0**53, 123456789012345.0, -1e300]:
        assert float(value_text(x)) == x


@settings(max_examples=300)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_value_text_round_trips_every_finite_float_in_at_most_repr_length(x: float) -> None:
    out = value_text(x)
    assert float(out) == x
    assert len(out.splitlines()) == 1
    # Shortest round-trip: never longer than Python's own shortest repr.
    assert len(out) <= len(repr(x))


@settings(max_examples=200)
@given(st.integers())
def test_value_text_of_an_integer_parses_back(n: int) -> None:
    assert int(value_text(n)) == n
    if abs(n) < 2**53:
        assert value_text(float(n)) == value_text(n)


def test_value_text_output_is_finite_number_text() -> None:
    assert math.isfinite(float(value_text(1e308)))


def test_no_line_break_is_printable_so_printable_text_is_left_as_it_is() -> None:
    # collapse() returns printable text unchanged without running its regex.
    assert not any(char.isprintable() for char in LINE_BREAKS)
    printable = [ch for ch in all_code_points() if ch.isprintable()]
    assert not set(printable) & set(LINE_BREAKS)
    sample = "".join(printable[::97])
    assert collapse(sample) == text_module._BREAK_RUN.sub(" ", sample) == sample


@given(st.lists(st.sampled_from(TRICKY_PIECES)).map("".join) | st.text())
def test_collapse_equals_its_regex_on_any_text(text: str) -> None:
    assert collapse(text) == text_module._BREAK_RUN.sub(" ", text)
