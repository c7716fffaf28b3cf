"""render_sections() (SPEC §4.1–4.3), without a database: the whole prompt, its section
order, and the Context section.
"""

from __future__ import annotations

from typing import Any

import pytest

from lens.core import render
from lens.core.background import (
    Background,
)
from lens.core.config import AgentConfig
from lens.core.fragments import prompt_text
from lens.core.prompt import Prompt
from lens.core.render import render_sections
from tests.samples import (
    SAMPLE_CONFIG,
    SECTION_ORDER,
    agent_config,
    background_of,
)

SMALL_CONFIG = SAMPLE_CONFIG


SMALL_PROMPT = (
    "## Persona\n"
    "You are Wren, a companion.\n"
    "\n"
    "### Tone\n"
    "Warm.\n"
    "\n"
    "## Mission\n"
    "### Objective\n"
    "Help the user.\n"
    "\n"
    "## Capabilities\n"
    "### memory_save\n"
    "Save what you learn.\n"
    "\n"
    "## Manual\n"
    "Save profile memories with a label.\n"
    "\n"
    "## Context\n"
    "\n"
    "### Ground Rules\n"
    "- **privacy**: Never share what the user says.\n"
    "- **check_in_hour**: 9\n"
    "- **ratio**: 2.5\n"
    "- **proactive**: true\n"
    "\n"
    "### Available Information Sources\n"
    "- **Calendar**: Next 14 days (access: tool)\n"
)


def small_config() -> AgentConfig:
    return AgentConfig.model_validate(SMALL_CONFIG)


# --- the whole prompt --------------------------------------------------------------


def test_render_produces_the_exact_expected_prompt_for_a_small_config() -> None:
    sections = render_sections(small_config())
    assert prompt_text(sections) == SMALL_PROMPT
    assert Prompt(sections=sections).text == SMALL_PROMPT


def test_render_orders_sections_persona_mission_capabilities_manual_context() -> None:
    sections = render_sections(small_config())
    assert [s.name for s in sections] == SECTION_ORDER
    assert [s.source for s in sections] == ["role", "role", "role", "role", "instance"]


def test_render_of_an_empty_config_is_empty() -> None:
    sections = render_sections(agent_config())
    assert sections == ()
    assert prompt_text(sections) == ""


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"persona": "P"}, ["Persona"]),
        ({"tone": "T"}, ["Persona"]),
        ({"objective": "O"}, ["Mission"]),
        ({"capabilities": [{"name": "c"}]}, ["Capabilities"]),
        ({"manual": "M"}, ["Manual"]),
        ({"awareness": [{"name": "A"}]}, ["Context"]),
        ({"persona": "P", "manual": "M"}, ["Persona", "Manual"]),
        ({"objective": "O", "awareness": [{"name": "A"}]}, ["Mission", "Context"]),
    ],
)
def test_render_omits_empty_sections(fields: dict[str, Any], expected: list[str]) -> None:
    assert [s.name for s in render_sections(agent_config(**fields))] == expected


@pytest.mark.parametrize("blank", ["", "   ", "\n\n", " \t\r\n "])
def test_blank_prose_counts_as_empty(blank: str) -> None:
    sections = render_sections(
        agent_config(persona=blank, tone=blank, objective=blank, manual=blank)
    )
    assert sections == ()


def test_persona_section_text() -> None:
    (persona,) = render_sections(agent_config(persona="  You are Wren.\n", tone="Warm."))
    assert persona.text == "## Persona\nYou are Wren.\n\n### Tone\nWarm."
    (tone_only,) = render_sections(agent_config(tone="Warm."))
    assert tone_only.text == "## Persona\n\n### Tone\nWarm."
    (no_tone,) = render_sections(agent_config(persona="You are Wren."))
    assert no_tone.text == "## Persona\nYou are Wren."


def test_mission_section_text() -> None:
    (mission,) = render_sections(agent_config(objective="Help.\n"))
    assert mission.text == "## Mission\n### Objective\nHelp."


def test_capabilities_section_text() -> None:
    (caps,) = render_sections(
        agent_config(
            capabilities=[{"name": "search", "description": "Find things."}, {"name": "two\nlines"}]
        )
    )
    assert caps.text == "## Capabilities\n### search\nFind things.\n\n### two lines"


def test_manual_keeps_its_own_line_structure() -> None:
    (manual,) = render_sections(agent_config(manual="Use kinds:\n- profile\n- fact"))
    assert manual.text == "## Manual\nUse kinds:\n- profile\n- fact"


def test_role_sections_are_single_authored_fragments() -> None:
    for section in render_sections(small_config())[:-1]:
        assert section.source == "role"
        assert len(section.fragments) == 1
        assert section.fragments[0].source == "authored"
        assert section.memory_ids == ()


# --- Context -----------------------------------------------------------------------


def test_context_is_omitted_when_there_is_nothing_to_show() -> None:
    empty_sections = background_of(
        {"id": "a", "title": "A"}, {"id": "b", "title": "B", "promotion": "auto"}
    )
    sections = render_sections(agent_config(persona="P", background=empty_sections.model_dump()))
    assert [s.name for s in sections] == ["Persona"]


def test_context_uses_the_composed_background_over_the_authored_one() -> None:
    authored_bg = {"sections": [{"id": "a", "title": "A", "entries": [{"key": "k", "value": 1}]}]}
    cfg = agent_config(background=authored_bg)
    assert [s.name for s in render_sections(cfg)] == ["Context"]
    assert render_sections(cfg, Background()) == ()
    composed = background_of({"id": "z", "title": "Z", "entries": [{"key": "x", "value": "y"}]})
    (context,) = render_sections(cfg, composed)
    assert context.text == "## Context\n\n### Z\n- **x**: y\n"


def test_section_without_entries_renders_no_heading() -> None:
    background = background_of(
        {"id": "empty", "title": "Empty One"},
        {"id": "full", "title": "Full One", "entries": [{"key": "k", "value": "v"}]},
    )
    (context,) = render_sections(agent_config(background=background.model_dump()))
    assert "Empty One" not in context.text
    assert context.text == "## Context\n\n### Full One\n- **k**: v\n"


def test_background_sections_render_in_declaration_order_separated_by_blank_lines() -> None:
    background = background_of(
        {"id": "b", "title": "Second", "entries": [{"key": "k", "value": 1}]},
        {
            "id": "a",
            "title": "First",
            "entries": [{"key": "k", "value": 2}, {"key": "j", "value": 3}],
        },
    )
    (context,) = render_sections(agent_config(), background)
    assert context.text == (
        "## Context\n\n### Second\n- **k**: 1\n\n### First\n- **k**: 2\n- **j**: 3\n"
    )


def test_awareness_heading_appears_only_with_awareness_entries() -> None:
    background = background_of({"id": "a", "title": "A", "entries": [{"key": "k", "value": 1}]})
    (without,) = render_sections(agent_config(), background)
    assert "Available Information Sources" not in without.text
    (with_awareness,) = render_sections(agent_config(awareness=[{"name": "Docs"}]), background)
    assert with_awareness.text.count("### Available Information Sources\n") == 1


def test_awareness_lines_show_description_and_access_only_when_set() -> None:
    awareness = [
        {"name": "Docs"},
        {"name": "Wiki", "description": "Team wiki"},
        {"name": "DB", "access_method": "sql"},
        {"name": "Cal", "description": "Next\n14 days", "access_method": "tool"},
    ]
    (context,) = render_sections(agent_config(awareness=awareness))
    assert context.text == (
        "## Context\n\n"
        "### Available Information Sources\n"
        "- **Docs**\n"
        "- **Wiki**: Team wiki\n"
        "- **DB** (access: sql)\n"
        "- **Cal**: Next 14 days (access: tool)\n"
    )


def test_recall_text_appears_last_under_context_when_given() -> None:
    recall = "### Recalled Memories\n- likes tea"
    (context,) = render_sections(small_config(), recall_text=recall)[-1:]
    assert context.name == "Context"
    assert context.text.endswith("\n\n### Recalled Memories\n- likes tea\n")
    assert context.text.startswith("## Context\n\n### Ground Rules\n")


def test_recall_text_alone_makes_a_context() -> None:
    sections = render_sections(agent_config(), recall_text="### Recalled Memories\n- x\n")
    assert [s.text for s in sections] == ["## Context\n\n### Recalled Memories\n- x\n"]


def test_empty_recall_text_adds_nothing() -> None:
    assert render_sections(agent_config(), recall_text="") == ()
    assert render_sections(small_config(), recall_text="") == render_sections(small_config())


def test_context_heading_is_the_only_level_two_line_inside_context() -> None:
    background = background_of(
        {
            "id": "a",
            "title": "## Sneaky\n## Current",
            "entries": [{"key": "\n## k", "value": "\n## v"}],
        }
    )
    cfg = agent_config(
        awareness=[{"name": "\n## n", "description": "\n## d", "access_method": "\n## m"}]
    )
    (context,) = render_sections(cfg, background, recall_text="### Recalled Memories\n- x")
    level_two = [line for line in context.text.splitlines() if line.startswith("## ")]
    assert level_two == ["## Context"]
    assert not [
        line for line in context.text.splitlines() if line.startswith("#") and line[1:2] != "#"
    ]


def test_line_breaks_in_data_are_collapsed_in_headings_keys_and_values() -> None:
    background = background_of(
        {
            "id": "a",
            "title": "Multi\r\nLine",
            "entries": [{"key": "k\n- x", "value": "ok\r\n# H\r\n"}],
        }
    )
    (context,) = render_sections(agent_config(), background)
    assert context.text == "## Context\n\n### Multi Line\n- **k - x**: ok # H \n"


def test_values_render_through_value_text() -> None:
    background = background_of(
        {
            "id": "a",
            "title": "A",
            "entries": [
                {"key": "int", "value": 3},
                {"key": "float", "value": 3.0},
                {"key": "half", "value": -0.5},
                {"key": "yes", "value": True},
                {"key": "no", "value": False},
                {"key": "empty", "value": ""},
            ],
        }
    )
    (context,) = render_sections(agent_config(), background)
    assert context.text.splitlines()[3:] == [
        "- **int**: 3",
        "- **float**: 3",
        "- **half**: -0.5",
        "- **yes**: true",
        "- **no**: false",
        "- **empty**: ",
    ]


def test_authored_lines_looked_up_again_are_the_entries_own(monkeypatch: Any) -> None:
    """Rendering looks up authored lines by their entry: equal configs render alike, an
    entry with other words renders its own, and a full table starts over."""

    def config(value: str) -> AgentConfig:
        background = {
            "sections": [{"id": "s", "title": "S", "entries": [{"key": "k", "value": value}]}]
        }
        return AgentConfig.model_validate({"name": "A", "background": background})

    first = config("one")
    assert prompt_text(render_sections(first)) == prompt_text(render_sections(first))
    assert "- **k**: two\n" in prompt_text(render_sections(config("two")))
    monkeypatch.setattr(render, "_LINES_MAX", 1)
    assert "- **k**: three\n" in prompt_text(render_sections(config("three")))
    assert "- **k**: one\n" in prompt_text(render_sections(first))
    assert len(render._LINES) == 1
