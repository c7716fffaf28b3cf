"""The Background schema (SPEC §3.1), merge() and AgentConfig, without a database."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from lens.core.background import (
    TIERS,
    Background,
    BackgroundEntry,
    BackgroundSection,
    section_id_problem,
    title_problem,
)
from lens.core.config import AgentConfig


def section(section_id: str, title: str = "T", **extra: Any) -> dict[str, Any]:
    return {"id": section_id, "title": title, **extra}


def entries(*pairs: tuple[str, Any]) -> list[dict[str, Any]]:
    return [{"key": key, "value": value} for key, value in pairs]


# --- parsing and defaults -------------------------------------------------------------


def test_background_parses_an_empty_object_to_no_sections() -> None:
    background = Background.model_validate({})
    assert background.sections == ()
    assert Background() == background
    assert background.entry_count == 0


def test_background_parses_an_empty_json_object_to_no_sections() -> None:
    assert Background.model_validate_json("{}").sections == ()


def test_section_promotion_defaults_to_locked() -> None:
    parsed = BackgroundSection.model_validate(section("a"))
    assert parsed.promotion == "locked"
    assert parsed.entries == ()


@pytest.mark.parametrize("tier", TIERS)
def test_section_accepts_every_promotion_tier(tier: str) -> None:
    assert BackgroundSection.model_validate(section("a", promotion=tier)).promotion == tier


def test_promotion_tiers_are_exactly_the_spec_four() -> None:
    assert TIERS == ("locked", "guarded", "earned", "auto")


@pytest.mark.parametrize("tier", ["Locked", "manual", "", "AUTO", "earned "])
def test_section_rejects_an_unknown_promotion_tier(tier: str) -> None:
    with pytest.raises(ValidationError) as info:
        BackgroundSection.model_validate(section("a", promotion=tier))
    assert info.value.errors()[0]["loc"] == ("promotion",)


def test_entry_memory_ids_default_to_empty() -> None:
    assert BackgroundEntry(key="k", value="v").memory_ids == ()


def test_background_round_trips_through_json() -> None:
    background = Background.model_validate(
        {
            "sections": [
                section("a", "A", promotion="auto", entries=entries(("s", "x"), ("n", 3))),
                section("b", "B", entries=entries(("f", 2.5), ("t", True))),
            ]
        }
    )
    assert Background.model_validate_json(background.model_dump_json()) == background
    values = [entry.value for s in background.sections for entry in s.entries]
    assert values == ["x", 3, 2.5, True]
    assert [type(v) for v in values] == [str, int, float, bool]


# --- uniqueness -----------------------------------------------------------------------


def test_duplicate_section_ids_are_a_validation_error_naming_the_id() -> None:
    with pytest.raises(ValidationError) as info:
        Background.model_validate(
            {"sections": [section("profile", "A"), section("other"), section("profile", "B")]}
        )
    message = str(info.value)
    assert "duplicate" in message
    assert "'profile'" in message
    assert "'other'" not in message


def test_duplicate_entry_keys_are_a_validation_error_naming_the_key() -> None:
    with pytest.raises(ValidationError) as info:
        BackgroundSection.model_validate(
            section("rules", entries=entries(("tone", "x"), ("hour", 9), ("tone", "y")))
        )
    message = str(info.value)
    assert "duplicate" in message
    assert "'tone'" in message
    assert "'hour'" not in message


def test_duplicate_entry_keys_inside_a_background_are_rejected_too() -> None:
    with pytest.raises(ValidationError, match="'k'"):
        Background.model_validate({"sections": [section("a", entries=entries(("k", 1), ("k", 1)))]})


def test_same_key_in_different_sections_is_fine() -> None:
    background = Background.model_validate(
        {
            "sections": [
                section("a", entries=entries(("k", 1))),
                section("b", entries=entries(("k", 2))),
            ]
        }
    )
    assert background.entry_count == 2


def test_keys_differing_only_in_case_are_one_key() -> None:
    # Keys compare as a reader sees them: "Name" and "name" would be two lines that
    # read the same (tests/lens/core/test_identity.py covers the look-alikes).
    with pytest.raises(
        ValidationError, match="duplicate entry key 'name' .the same name as 'Name'."
    ):
        BackgroundSection.model_validate(section("a", entries=entries(("Name", 1), ("name", 2))))


# --- section ids ----------------------------------------------------------------------


@pytest.mark.parametrize("section_id", ["a", "0", "user_profile", "a-b_c9", "9lives", "x" * 64])
def test_valid_section_ids_are_accepted(section_id: str) -> None:
    assert section_id_problem(section_id) is None
    assert BackgroundSection.model_validate(section(section_id)).id == section_id


@pytest.mark.parametrize(
    "section_id",
    [
        "",
        "User",
        "userProfile",
        "-lead",
        "_lead",
        "has space",
        " a",
        "a ",
        "a.b",
        "é",
        "a\n",
        "x" * 65,
    ],
)
def test_invalid_section_ids_are_rejected(section_id: str) -> None:
    assert section_id_problem(section_id) is not None
    with pytest.raises(ValidationError) as info:
        BackgroundSection.model_validate(section(section_id))
    assert info.value.errors()[0]["loc"] == ("id",)


def test_overlong_section_id_error_names_the_limit() -> None:
    with pytest.raises(ValidationError, match="64"):
        BackgroundSection.model_validate(section("x" * 65))


def test_section_id_must_be_a_string() -> None:
    with pytest.raises(ValidationError):
        BackgroundSection.model_validate(section(7))  # type: ignore[arg-type]  # a non-string id on purpose


# --- titles ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "title",
    [
        "Current State",
        "current state",
        "CURRENT STATE",
        " Current State ",
        "Current\nState",
        "Current\r\n  State",
        "Current\u2028State",
        "current state\n",
    ],
)
def test_current_state_title_is_reserved(title: str) -> None:
    assert title_problem(title) is not None
    with pytest.raises(ValidationError, match="Current State"):
        BackgroundSection.model_validate(section("a", title))


@pytest.mark.parametrize("title", ["", " ", "\n", "\t \r\n", "\u3000"])
def test_blank_title_is_rejected(title: str) -> None:
    assert title_problem(title) is not None
    with pytest.raises(ValidationError) as info:
        BackgroundSection.model_validate(section("a", title))
    assert info.value.errors()[0]["loc"] == ("title",)


@pytest.mark.parametrize(
    "title", ["Current", "State", "Current States", "The Current State", "# x"]
)
def test_titles_that_merely_resemble_the_reserved_one_are_fine(title: str) -> None:
    assert title_problem(title) is None
    assert BackgroundSection.model_validate(section("a", title)).title == title


def test_title_keeps_its_line_breaks_in_the_schema() -> None:
    # collapse() is a rendering rule, not a parsing one: the schema stores what was given.
    assert BackgroundSection.model_validate(section("a", "Two\nLines")).title == "Two\nLines"


# --- values ---------------------------------------------------------------------------


@pytest.mark.parametrize("value", [[1], ["a"], {}, {"a": 1}, None, (1, 2)])
def test_non_scalar_values_are_rejected_with_one_clear_error(value: Any) -> None:
    with pytest.raises(ValidationError) as info:
        BackgroundEntry.model_validate({"key": "k", "value": value})
    errors = info.value.errors()
    assert len(errors) == 1
    assert errors[0]["loc"] == ("value",)
    assert "string, number or boolean" in errors[0]["msg"]


def test_non_scalar_values_from_json_are_rejected_with_one_clear_error() -> None:
    for raw in ['{"key":"k","value":null}', '{"key":"k","value":[1]}', '{"key":"k","value":{}}']:
        with pytest.raises(ValidationError) as info:
            BackgroundEntry.model_validate_json(raw)
        assert info.value.error_count() == 1, raw


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_nan_and_infinity_are_rejected(value: float) -> None:
    with pytest.raises(ValidationError):
        BackgroundEntry.model_validate({"key": "k", "value": value})


def test_nan_from_json_is_rejected() -> None:
    for raw in ['{"key":"k","value":NaN}', '{"key":"k","value":Infinity}']:
        with pytest.raises(ValidationError):
            BackgroundEntry.model_validate_json(raw)


@pytest.mark.parametrize("value", ["", "text", 0, -3, 2.5, True, False])
def test_scalar_values_are_kept_with_their_type(value: Any) -> None:
    entry = BackgroundEntry.model_validate({"key": "k", "value": value})
    assert entry.value == value
    assert type(entry.value) is type(value)


def test_numeric_strings_are_not_coerced() -> None:
    assert BackgroundEntry(key="k", value="3").value == "3"
    assert BackgroundEntry(key="k", value="true").value == "true"


def test_empty_key_is_rejected() -> None:
    with pytest.raises(ValidationError):
        BackgroundEntry(key="", value=1)


def test_unknown_fields_are_rejected() -> None:
    with pytest.raises(ValidationError):
        BackgroundEntry.model_validate({"key": "k", "value": 1, "extra": 2})
    with pytest.raises(ValidationError):
        BackgroundSection.model_validate({**section("a"), "text": "x"})
    with pytest.raises(ValidationError):
        Background.model_validate({"sections": [], "overlay": []})


# --- immutability ---------------------------------------------------------------------


def test_background_values_are_frozen_all_the_way_down() -> None:
    background = Background.model_validate(
        {"sections": [section("a", entries=[{"key": "k", "value": 1, "memory_ids": ["m1"]}])]}
    )
    assert isinstance(background.sections, tuple)
    first = background.sections[0]
    assert isinstance(first.entries, tuple)
    assert isinstance(first.entries[0].memory_ids, tuple)
    with pytest.raises(ValidationError):
        background.sections = ()  # type: ignore[misc]  # frozen: the assignment must raise
    with pytest.raises(ValidationError):
        first.title = "Other"  # type: ignore[misc]  # frozen: the assignment must raise
    with pytest.raises(ValidationError):
        first.entries[0].value = 2  # type: ignore[misc]  # frozen: the assignment must raise
    with pytest.raises(AttributeError):
        first.entries.append(first.entries[0])  # type: ignore[attr-defined]  # a tuple: append must not exist


def test_background_values_are_hashable_and_compare_by_value() -> None:
    one = Background.model_validate({"sections": [section("a", entries=entries(("k", 1)))]})
    two = Background.model_validate({"sections": [section("a", entries=entries(("k", 1)))]})
    assert one == two
    assert hash(one) == hash(two)


def test_lookup_helpers_find_sections_and_entries() -> None:
    background = Background.model_validate(
        {"sections": [section("a", entries=entries(("k", 1))), section("b")]}
    )
    found = background.section("a")
    assert found is not None
    assert found.entry("k") == BackgroundEntry(key="k", value=1)
    assert found.entry("missing") is None
    assert background.section("missing") is None


# --- merge ----------------------------------------------------------------------------


def test_merge_appends_new_ids_in_others_order() -> None:
    mine = Background.model_validate({"sections": [section("a", "A"), section("b", "B")]})
    theirs = Background.model_validate(
        {"sections": [section("z", "Z"), section("b", "B2"), section("c", "C")]}
    )
    merged = mine.merge(theirs)
    assert [s.id for s in merged.sections] == ["a", "b", "z", "c"]
    assert merged.section("z") == theirs.section("z")
    assert merged.section("a") == mine.section("a")


def test_merge_replaces_a_colliding_section_with_others_title_and_promotion() -> None:
    mine = Background.model_validate(
        {
            "sections": [
                section("p", "Mine", promotion="locked", entries=entries(("k", "old"))),
                section("q", "Q"),
            ]
        }
    )
    theirs = Background.model_validate(
        {
            "sections": [
                section(
                    "p",
                    "Theirs",
                    promotion="auto",
                    entries=[{"key": "k", "value": "new", "memory_ids": ["m2"]}],
                )
            ]
        }
    )
    merged = mine.merge(theirs)
    assert [s.id for s in merged.sections] == ["p", "q"]
    replaced = merged.section("p")
    assert replaced is not None
    assert replaced.title == "Theirs"
    assert replaced.promotion == "auto"
    assert replaced.entries == (BackgroundEntry(key="k", value="new", memory_ids=("m2",)),)


def test_merge_never_unions_memory_ids_on_a_colliding_entry() -> None:
    mine = Background.model_validate(
        {"sections": [section("p", entries=[{"key": "k", "value": 1, "memory_ids": ["m1", "m2"]}])]}
    )
    theirs = Background.model_validate(
        {"sections": [section("p", entries=[{"key": "k", "value": 2, "memory_ids": ["m3"]}])]}
    )
    merged_section = mine.merge(theirs).section("p")
    assert merged_section is not None
    assert merged_section.entries[0].memory_ids == ("m3",)
    assert merged_section.entries[0].value == 2

    plain = Background.model_validate({"sections": [section("p", entries=entries(("k", 3)))]})
    merged_plain = mine.merge(plain).section("p")
    assert merged_plain is not None
    assert merged_plain.entries[0].memory_ids == ()


def test_merge_of_a_nested_key_collision_keeps_self_order_and_appends_new_keys() -> None:
    mine = Background.model_validate(
        {"sections": [section("p", entries=entries(("a", 1), ("b", 2), ("c", 3)))]}
    )
    theirs = Background.model_validate(
        {"sections": [section("p", entries=entries(("d", 40), ("b", 20), ("e", 50)))]}
    )
    merged_section = mine.merge(theirs).section("p")
    assert merged_section is not None
    assert [(e.key, e.value) for e in merged_section.entries] == [
        ("a", 1),
        ("b", 20),
        ("c", 3),
        ("d", 40),
        ("e", 50),
    ]


def test_merge_with_empty_is_identity_both_ways() -> None:
    mine = Background.model_validate(
        {"sections": [section("a", entries=entries(("k", 1))), section("b")]}
    )
    assert mine.merge(Background()) == mine
    assert Background().merge(mine) == mine


def test_merge_leaves_both_inputs_untouched() -> None:
    mine = Background.model_validate({"sections": [section("a", "A", entries=entries(("k", 1)))]})
    theirs = Background.model_validate({"sections": [section("a", "B", entries=entries(("k", 2)))]})
    before = (mine.model_dump(), theirs.model_dump())
    mine.merge(theirs)
    assert (mine.model_dump(), theirs.model_dump()) == before


def test_merge_result_is_a_valid_background() -> None:
    mine = Background.model_validate(
        {"sections": [section("a", entries=entries(("x", 1), ("y", 2))), section("b")]}
    )
    theirs = Background.model_validate(
        {"sections": [section("a", entries=entries(("y", 3), ("z", 4))), section("c")]}
    )
    merged = mine.merge(theirs)
    assert Background.model_validate(merged.model_dump()) == merged


# --- AgentConfig ----------------------------------------------------------------------


def test_agent_config_refuses_authored_entries_with_memory_ids() -> None:
    with pytest.raises(ValidationError, match="memory_ids"):
        AgentConfig.model_validate(
            {
                "name": "Wren",
                "background": {
                    "sections": [
                        section("a", entries=[{"key": "k", "value": 1, "memory_ids": ["m1"]}])
                    ]
                },
            }
        )


def test_agent_config_accepts_authored_entries_without_memory_ids() -> None:
    config = AgentConfig.model_validate(
        {"name": "Wren", "background": {"sections": [section("a", entries=entries(("k", 1)))]}}
    )
    assert config.background.entry_count == 1


def test_agent_config_refuses_duplicate_capability_names() -> None:
    with pytest.raises(ValidationError, match="'search'"):
        AgentConfig.model_validate(
            {
                "name": "Wren",
                "capabilities": [
                    {"name": "search"},
                    {"name": "memory_save"},
                    {"name": "search", "description": "again"},
                ],
            }
        )


def test_agent_config_refuses_duplicate_awareness_names() -> None:
    with pytest.raises(ValidationError, match="'Calendar'"):
        AgentConfig.model_validate(
            {"name": "Wren", "awareness": [{"name": "Calendar"}, {"name": "Calendar"}]}
        )


@pytest.mark.parametrize("field", ["text", "prompt", "memories", "target"])
def test_agent_config_refuses_unknown_fields(field: str) -> None:
    with pytest.raises(ValidationError) as info:
        AgentConfig.model_validate({"name": "Wren", field: "x"})
    assert info.value.errors()[0]["type"] == "extra_forbidden"


def test_agent_config_refuses_unknown_fields_in_nested_values() -> None:
    with pytest.raises(ValidationError):
        AgentConfig.model_validate({"name": "Wren", "capabilities": [{"name": "a", "tier": 1}]})


@pytest.mark.parametrize("name", ["", " ", "\n"])
def test_agent_config_refuses_a_blank_name(name: str) -> None:
    with pytest.raises(ValidationError):
        AgentConfig.model_validate({"name": name})


def test_agent_config_defaults_are_empty() -> None:
    config = AgentConfig(name="Wren")
    assert config.background == Background()
    assert config.capabilities == ()
    assert config.awareness == ()
    assert config.routing_spec is None
    assert config.recall_pinned_candidates is False


def test_agent_config_is_frozen() -> None:
    config = AgentConfig(name="Wren")
    with pytest.raises(ValidationError):
        config.name = "Other"  # type: ignore[misc]  # frozen: the assignment must raise
