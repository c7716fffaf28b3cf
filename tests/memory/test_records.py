"""The memory record schema (SPEC §3.2) and the memory_save input (§5.1), no database."""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from lens.core.identity import bidi_control
from memory.core.records import (
    CONTENT_MAX,
    LABEL_MAX,
    TAG_MAX,
    TAGS_MAX,
    MemoryInput,
    MemoryView,
    forbidden_char,
)
from tests.samples import GRINNING

FORBIDDEN = frozenset({"Cc", "Zl", "Zp"})


def memory_input(**fields: Any) -> MemoryInput:
    return MemoryInput.model_validate({"kind": "fact", "content": "It rains.", **fields})


def refused(**fields: Any) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        memory_input(**fields)
    return info.value


def error_fields(error: ValidationError) -> set[str]:
    return {str(item["loc"][0]) for item in error.errors() if item["loc"]}


# --- shape ----------------------------------------------------------------------------


def test_memory_input_has_exactly_its_flat_fields() -> None:
    assert list(MemoryInput.model_fields) == [
        "kind",
        "content",
        "tags",
        "label",
        "supersedes",
        "session",
        "valid_until",
    ]


def test_memory_input_defaults_leave_the_optional_fields_empty() -> None:
    parsed = memory_input()
    assert parsed.tags == ()
    assert parsed.label is None
    assert parsed.supersedes is None


@pytest.mark.parametrize("field", ["target", "payload", "placement", "section", "key", "id"])
def test_memory_input_refuses_any_field_beyond_the_five(field: str) -> None:
    error = refused(**{field: "user_profile"})
    assert field in error_fields(error)


def test_memory_record_has_no_target_and_no_payload_field() -> None:
    assert "target" not in MemoryView.model_fields
    assert "payload" not in MemoryView.model_fields


def test_memory_input_is_frozen() -> None:
    parsed = memory_input()
    with pytest.raises(ValidationError):
        parsed.kind = "episode"  # type: ignore[misc]  # frozen: the assignment must raise


@pytest.mark.parametrize(
    ("field", "value"), [("kind", 3), ("content", b"bytes"), ("label", 7), ("tags", ["a", 1])]
)
def test_memory_input_refuses_non_string_values(field: str, value: object) -> None:
    assert field in error_fields(refused(**{field: value}))


# --- kind -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kind",
    ["a", "a" * 32, "profile", "preference", "episode", "user_pref-2", "z0", "a_", "a-"],
)
def test_kind_accepts_lowercase_identifiers_of_one_to_thirty_two_characters(kind: str) -> None:
    assert memory_input(kind=kind).kind == kind


@pytest.mark.parametrize(
    "kind",
    [
        "",
        "a" * 33,
        "Profile",
        "PROFILE",
        "1fact",
        "_fact",
        "-fact",
        "my kind",
        " fact",
        "fact ",
        "fact\n",
        "caf\u00e9",
        "fact.x",
    ],
)
def test_kind_refuses_anything_outside_the_pattern(kind: str) -> None:
    assert "kind" in error_fields(refused(kind=kind))


# --- content --------------------------------------------------------------------------


def test_content_must_not_be_empty() -> None:
    assert "content" in error_fields(refused(content=""))


def test_content_accepts_exactly_ten_thousand_code_points() -> None:
    assert len(memory_input(content="x" * CONTENT_MAX).content) == 10_000


def test_content_refuses_ten_thousand_and_one_code_points() -> None:
    assert "content" in error_fields(refused(content="x" * (CONTENT_MAX + 1)))


def test_content_limit_counts_astral_characters_as_one_code_point_each() -> None:
    assert memory_input(content=GRINNING * 10_000).content == GRINNING * 10_000
    assert "content" in error_fields(refused(content=GRINNING * 10_001))


def test_content_allows_newlines_and_unconstrained_prose() -> None:
    prose = "line one\nline two\r\n# not a heading\n- not a list\u2028\x00end"
    assert memory_input(content=prose).content == prose


# --- tags -----------------------------------------------------------------------------


def test_tags_accept_thirty_two() -> None:
    tags = [f"t{i}" for i in range(TAGS_MAX)]
    assert memory_input(tags=tags).tags == tuple(tags)


def test_tags_refuse_thirty_three() -> None:
    assert "tags" in error_fields(refused(tags=[f"t{i}" for i in range(33)]))


def test_tags_count_is_taken_after_duplicates_are_removed() -> None:
    tags = [f"t{i}" for i in range(32)] + ["t5"]
    assert len(tags) == 33
    assert memory_input(tags=tags).tags == tuple(f"t{i}" for i in range(32))


def test_tags_remove_duplicates_keeping_first_seen_order() -> None:
    assert memory_input(tags=["b", "a", "b", "c", "a"]).tags == ("b", "a", "c")


def test_tags_are_case_sensitive_when_removing_duplicates() -> None:
    assert memory_input(tags=["Tag", "tag"]).tags == ("Tag", "tag")


def test_a_tag_of_sixty_four_code_points_is_accepted() -> None:
    assert memory_input(tags=["x" * TAG_MAX]).tags == ("x" * 64,)
    assert memory_input(tags=[GRINNING * 64]).tags == (GRINNING * 64,)


@pytest.mark.parametrize(
    "tag", ["", "x" * 65, GRINNING * 65, "a\x00", "a\nb", "\t", "\x7f", "a\x85", "a\u2028"]
)
def test_a_tag_that_is_empty_too_long_or_has_a_control_character_is_refused(tag: str) -> None:
    assert "tags" in error_fields(refused(tags=["fine", tag]))


# --- label ----------------------------------------------------------------------------


def test_label_of_sixty_four_code_points_is_accepted() -> None:
    assert memory_input(label="n" * LABEL_MAX).label == "n" * 64
    assert memory_input(label=GRINNING * 64).label == GRINNING * 64


def test_label_of_sixty_five_code_points_is_refused() -> None:
    assert "label" in error_fields(refused(label="n" * 65))
    assert "label" in error_fields(refused(label=GRINNING * 65))


def test_empty_label_is_refused() -> None:
    assert "label" in error_fields(refused(label=""))


@pytest.mark.parametrize(
    "bad",
    ["\n", "\t", "\r", "\x00", "\x7f", "\u2028", "\u2029", "\x85", "\x1b", "\x0b", "\x0c"],
)
def test_label_refuses_control_characters_and_line_breaks(bad: str) -> None:
    assert unicodedata.category(bad) in FORBIDDEN
    for label in (bad, f"name{bad}", f"{bad}name", f"na{bad}me"):
        assert "label" in error_fields(refused(label=label))


@pytest.mark.parametrize(
    "label",
    [
        "name",
        "time zone",
        "favourite \U0001f355",
        "\u05e9\u05dd \u05de\u05dc\u05d0",  # Hebrew, right to left
        "\u0627\u0644\u0627\u0633\u0645",  # Arabic
        "e\u0301te\u0301",  # combining acute accents
        "na\u200bme",  # a zero-width space is a format character (Cf), not Cc/Zl/Zp
        "\u00a0non-breaking\u3000ideographic space",
        " padded ",
    ],
)
def test_label_accepts_emoji_right_to_left_and_combining_marks(label: str) -> None:
    assert memory_input(label=label).label == label


@settings(max_examples=150, deadline=None)
@given(st.text(min_size=1, max_size=LABEL_MAX))
def test_a_label_is_accepted_exactly_when_it_has_no_control_or_break_characters(
    label: str,
) -> None:
    clean = all(unicodedata.category(c) not in FORBIDDEN for c in label)
    assert (forbidden_char(label) is None) == clean
    # A new label may not hold bidi controls either (tests/memory/test_lookalike_labels.py).
    if clean and bidi_control(label) is None:
        assert memory_input(label=label).label == label
    else:
        assert "label" in error_fields(refused(label=label))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(alphabet="abcdef", min_size=1, max_size=3), max_size=40))
def test_tags_dedupe_is_first_seen_order_and_counts_unique_tags(tags: list[str]) -> None:
    unique = list(dict.fromkeys(tags))
    if len(unique) <= TAGS_MAX:
        assert memory_input(tags=tags).tags == tuple(unique)
    else:
        assert "tags" in error_fields(refused(tags=tags))


# --- the stored record ----------------------------------------------------------------


def test_memory_record_applies_the_same_validation() -> None:
    base = {"id": "a1", "kind": "fact", "content": "c", "created_at": datetime.now(UTC)}
    record = MemoryView.model_validate({**base, "tags": ["x", "y", "x"]})
    assert record.tags == ("x", "y")
    for bad in ({"kind": "Fact"}, {"content": ""}, {"label": "a\nb"}, {"tags": [""]}):
        with pytest.raises(ValidationError):
            MemoryView.model_validate({**base, **bad})
