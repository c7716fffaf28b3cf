"""Highlighting what a search matched (``memory.core.tokenizer.highlight``): pure."""

from __future__ import annotations

import time

from hypothesis import given
from hypothesis import strategies as st

from memory.core.tokenizer import highlight, terms


def marked(text: str, query: str) -> list[str]:
    return [piece for piece, hit in highlight(text, set(terms(query))) if hit]


def test_whole_words_that_match_are_marked() -> None:
    assert marked("Meets friends at the Café on Fridays.", "cafe FRIDAYS") == ["Café", "Fridays"]
    assert marked("My name is Doug.", "am") == []


def test_a_word_with_combining_marks_is_marked_whole() -> None:
    assert marked("Cafe\u0301 au lait", "cafe") == ["Cafe\u0301"]


def test_a_word_cut_by_punctuation_is_two_words() -> None:
    assert marked("work-life balance", "life") == ["life"]
    assert marked("hi😀there", "there") == ["there"]


@given(st.text(max_size=200), st.text(max_size=40))
def test_the_pieces_join_back_to_the_text(text: str, query: str) -> None:
    pieces = highlight(text, set(terms(query)))
    assert "".join(piece for piece, _hit in pieces) == text
    assert all(piece for piece, _hit in pieces)


@given(st.text(max_size=200), st.text(max_size=40))
def test_only_pieces_holding_a_query_term_are_marked(text: str, query: str) -> None:
    wanted = set(terms(query))
    for piece, hit in highlight(text, wanted):
        assert hit == bool(wanted & set(terms(piece)))


def test_the_longest_content_is_highlighted_in_linear_time() -> None:
    for text in ("a\u0301 " * 5000, "ab-" * 3333, "x" * 10_000):
        started = time.perf_counter()
        highlight(text, {"a", "ab", "x"})
        assert time.perf_counter() - started < 0.5
