"""Deliveries, the pure part (SPEC §11): what may name a session or a model, the hash of
a prompt, and how two deliveries compare. No database.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from lens.core.identity import BIDI_CONTROLS
from memory.core.deliveries import (
    LABEL_MAX,
    Change,
    DeliveryInput,
    Facts,
    compare,
    label_problem,
    parse_moment,
    sha256_hex,
)
from tests.samples import GRINNING

# --- label_problem: 1–128 code points, one line, no controls ---------------------------


def test_an_empty_label_is_refused() -> None:
    assert label_problem("") == "must not be empty"


def test_the_limit_is_128_code_points() -> None:
    assert LABEL_MAX == 128
    assert label_problem("a") is None
    assert label_problem("a" * 128) is None
    problem = label_problem("a" * 129)
    assert problem is not None
    assert "128" in problem
    assert "129" in problem


def test_an_astral_character_counts_as_one_code_point() -> None:
    # Four UTF-8 bytes and two UTF-16 units each: still 128 characters.
    assert label_problem(GRINNING * 128) is None
    assert label_problem("é" * 128) is None
    assert label_problem(GRINNING * 129) is not None
    assert label_problem("a" * 127 + GRINNING) is None


@pytest.mark.parametrize("code", [*range(0x20), 0x7F, 0x85, 0x2028, 0x2029])
def test_control_characters_and_line_breaks_are_refused(code: int) -> None:
    for value in (chr(code), f"session{chr(code)}", f"{chr(code)}x", f"a{chr(code)}b"):
        problem = label_problem(value)
        assert problem is not None, repr(value)
        assert f"U+{code:04X}" in problem


@pytest.mark.parametrize(
    "value",
    [
        "sess-2026-11-30",
        "claude-opus-4.1",
        "gpt-4o mini",  # a space is not a control character
        "sesión número 7",
        "東京のセッション",
        "мир",
        GRINNING,
        "a\u00a0b",  # no-break space
        "{\"json\": 'quotes'} <tags> & amp",
        "x",
    ],
)
def test_ordinary_unicode_is_accepted(value: str) -> None:
    assert label_problem(value) is None
    assert DeliveryInput(session=value, model=value) == DeliveryInput.model_validate(
        {"session": value, "model": value}
    )


# --- DeliveryInput: the body of POST …/deliveries --------------------------------------


def test_the_body_may_be_empty() -> None:
    request = DeliveryInput.model_validate({})
    assert (request.session, request.model) == (None, None)
    assert DeliveryInput.model_validate({"session": None, "model": None}) == request


@pytest.mark.parametrize(
    "body",
    [
        {"session": ""},
        {"model": "x" * 129},
        {"session": "a\nb"},
        {"model": 7},
        {"session": ["s"]},
        {"model": True},
        {"session": "s", "user": "u"},
    ],
)
def test_the_body_refuses_what_cannot_name_a_session_or_a_model(body: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        DeliveryInput.model_validate(body)


@pytest.mark.parametrize("control", sorted(BIDI_CONTROLS))
@pytest.mark.parametrize("field", ["session", "model"])
def test_a_bidi_control_cannot_name_a_new_session_or_model(field: str, control: str) -> None:
    # The rule memory labels follow: a name holding one can display as another name.
    for value in (f"a{control}b", control, f"gpt-4o{control}"):
        with pytest.raises(ValidationError) as caught:
            DeliveryInput.model_validate({field: value})
        (error,) = caught.value.errors()
        assert error["loc"] == (field,)
        assert "bidirectional control" in error["msg"]
        assert f"U+{ord(control):04X}" in error["msg"]
        # A filter still finds deliveries recorded before the rule.
        assert label_problem(value) is None


# --- sha256_hex ---------------------------------------------------------------------------


def test_sha256_hex_hashes_the_utf8_bytes() -> None:
    text = f"Prompt {GRINNING} ł"
    assert sha256_hex(text) == hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert sha256_hex("") == hashlib.sha256(b"").hexdigest()
    assert len(sha256_hex("x")) == 64


# --- compare(): the diff of two deliveries -----------------------------------------------


def facts(prompt: str, *memory_ids: str, tokens: int = 0) -> Facts:
    return Facts(prompt=prompt, memory_ids=frozenset(memory_ids), tokens=tokens)


def test_a_first_delivery_compares_against_an_empty_prompt() -> None:
    after = facts("# Persona\nYou are Wren.\n\n# Context\n- **name**: Doug\n", "m2", "m1", tokens=9)
    comparison = compare(None, after, "(none)", "delivery d1")

    assert comparison.added == ("m1", "m2")
    assert comparison.removed == ()
    assert comparison.chars == (0, len(after.prompt))
    assert comparison.tokens == (0, 9)
    lines = comparison.diff.splitlines()
    assert lines[:2] == ["--- (none)", "+++ delivery d1"]
    assert lines[2].startswith("@@ -0,0 +1,")
    body = lines[3:]
    assert body == ["+" + line for line in after.prompt.splitlines()]
    assert not comparison.unchanged


def test_compare_sorts_the_memories_added_and_removed() -> None:
    before = facts("a\n", "m5", "m1", "m3", tokens=1)
    after = facts("a\nb\n", "m4", "m3", "m2", "m0", tokens=2)
    comparison = compare(before, after, "old", "new")
    assert comparison.added == ("m0", "m2", "m4")
    assert comparison.removed == ("m1", "m5")
    assert comparison.chars == (2, 4)
    assert comparison.tokens == (1, 2)
    assert "+b\n" in comparison.diff
    assert comparison.diff.startswith("--- old\n+++ new\n")


def test_a_prompt_without_a_final_newline_says_so() -> None:
    comparison = compare(facts("a"), facts("b"), "old", "new")
    assert comparison.diff.endswith("+b\n\\ No newline at end of file\n")


IDS = st.frozensets(st.sampled_from([f"m{n}" for n in range(6)]))
PROMPTS = st.lists(st.sampled_from(["a", "b", "- **k**: v", "", "ł😀"]), max_size=5).map("\n".join)


@settings(max_examples=200, deadline=None)
@given(a=PROMPTS, b=PROMPTS, a_ids=IDS, b_ids=IDS, a_tokens=st.integers(0, 99))
def test_compare_agrees_with_set_arithmetic(
    a: str, b: str, a_ids: frozenset[str], b_ids: frozenset[str], a_tokens: int
) -> None:
    before = Facts(prompt=a, memory_ids=a_ids, tokens=a_tokens)
    after = Facts(prompt=b, memory_ids=b_ids, tokens=7)
    comparison = compare(before, after, "x", "y")
    assert comparison.added == tuple(sorted(b_ids - a_ids))
    assert comparison.removed == tuple(sorted(a_ids - b_ids))
    assert list(comparison.added) == sorted(comparison.added)
    assert comparison.chars == (len(a), len(b))
    assert comparison.tokens == (a_tokens, 7)
    assert comparison.unchanged == (a == b and a_ids == b_ids)
    assert (comparison.diff == "") == (a == b)
    # Compared with itself, nothing changed.
    assert compare(after, after, "y", "y").unchanged


def test_facts_count_characters_as_code_points() -> None:
    assert facts(GRINNING * 3 + "ab").chars == 5


# --- Change.between: the timeline's column -----------------------------------------------


def test_a_first_delivery_is_marked_first() -> None:
    assert Change.between(None, (1, frozenset({"m1"}))) == Change(first=True)


def test_the_same_composition_is_unchanged() -> None:
    change = Change.between((4, frozenset({"m1"})), (4, frozenset({"m1"})))
    assert change == Change(same_composition=True)
    assert (change.first, change.added, change.removed) == (False, 0, 0)


def test_another_composition_counts_the_memories_added_and_removed() -> None:
    change = Change.between((1, frozenset({"m1", "m2", "m3"})), (2, frozenset({"m3", "m4"})))
    assert change == Change(added=1, removed=2)
    assert not change.first
    assert not change.same_composition


def test_another_composition_with_the_same_memories_changed_elsewhere() -> None:
    # An authored edit: a new composition, no memory in or out.
    change = Change.between((1, frozenset({"m1"})), (2, frozenset({"m1"})))
    assert change == Change()
    assert not change.same_composition


# --- parse_moment: ISO 8601 in, aware UTC out ------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-24T17:00:00Z", datetime(2026, 11, 24, 17, tzinfo=UTC)),
        ("2026-11-24T18:00:00+01:00", datetime(2026, 11, 24, 17, tzinfo=UTC)),
        ("2026-11-24T17:00", datetime(2026, 11, 24, 17, tzinfo=UTC)),  # no zone: UTC
        ("2026-11-24", datetime(2026, 11, 24, tzinfo=UTC)),
    ],
)
def test_parse_moment_reads_iso_8601_as_utc(text: str, expected: datetime) -> None:
    assert parse_moment(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "yesterday",
        "1700000000",
        "2026-13-01",
        "0001-01-01T00:00:00+01:00",
        "9999-12-31T23:59:59-01:00",
    ],
)
def test_parse_moment_refuses_what_is_not_a_storable_time(text: str) -> None:
    assert parse_moment(text) is None
