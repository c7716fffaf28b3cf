"""render_sections(), fragments and counts (SPEC §4.1–4.4), without a database."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from lens.core.background import (
    TIERS,
    Background,
    BackgroundEntry,
    BackgroundSection,
    title_problem,
)
from lens.core.composition import Prompt
from lens.core.config import AgentConfig, AwarenessSource, Capability
from lens.core.counts import Counts, format_counts
from lens.core.fragments import PromptFragment, PromptSection, authored, memory, prompt_text
from lens.core.render import render_sections
from lens.core.text import collapse, value_text
from tests.samples import SAMPLE_CONFIG, SPEC_LINE_BREAKS

SECTION_ORDER = ["Persona", "Mission", "Capabilities", "Manual", "Context"]

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


def config(**fields: Any) -> AgentConfig:
    return AgentConfig.model_validate({"name": "Wren", **fields})


def small_config() -> AgentConfig:
    return AgentConfig.model_validate(SMALL_CONFIG)


def by_name(sections: tuple[PromptSection, ...]) -> dict[str, PromptSection]:
    return {s.name: s for s in sections}


def bg(*sections: dict[str, Any]) -> Background:
    return Background.model_validate({"sections": list(sections)})


# --- the whole prompt -----------------------------------------------------------------


def test_render_produces_the_exact_expected_prompt_for_a_small_config() -> None:
    sections = render_sections(small_config())
    assert prompt_text(sections) == SMALL_PROMPT
    assert Prompt(sections=sections).text == SMALL_PROMPT


def test_render_orders_sections_persona_mission_capabilities_manual_context() -> None:
    sections = render_sections(small_config())
    assert [s.name for s in sections] == SECTION_ORDER
    assert [s.source for s in sections] == ["role", "role", "role", "role", "instance"]


def test_render_of_an_empty_config_is_empty() -> None:
    sections = render_sections(config())
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
    assert [s.name for s in render_sections(config(**fields))] == expected


@pytest.mark.parametrize("blank", ["", "   ", "\n\n", " \t\r\n "])
def test_blank_prose_counts_as_empty(blank: str) -> None:
    sections = render_sections(config(persona=blank, tone=blank, objective=blank, manual=blank))
    assert sections == ()


def test_persona_section_text() -> None:
    (persona,) = render_sections(config(persona="  You are Wren.\n", tone="Warm."))
    assert persona.text == "## Persona\nYou are Wren.\n\n### Tone\nWarm."
    (tone_only,) = render_sections(config(tone="Warm."))
    assert tone_only.text == "## Persona\n\n### Tone\nWarm."
    (no_tone,) = render_sections(config(persona="You are Wren."))
    assert no_tone.text == "## Persona\nYou are Wren."


def test_mission_section_text() -> None:
    (mission,) = render_sections(config(objective="Help.\n"))
    assert mission.text == "## Mission\n### Objective\nHelp."


def test_capabilities_section_text() -> None:
    (caps,) = render_sections(
        config(
            capabilities=[{"name": "search", "description": "Find things."}, {"name": "two\nlines"}]
        )
    )
    assert caps.text == "## Capabilities\n### search\nFind things.\n\n### two lines"


def test_manual_keeps_its_own_line_structure() -> None:
    (manual,) = render_sections(config(manual="Use kinds:\n- profile\n- fact"))
    assert manual.text == "## Manual\nUse kinds:\n- profile\n- fact"


def test_role_sections_are_single_authored_fragments() -> None:
    for section in render_sections(small_config())[:-1]:
        assert section.source == "role"
        assert len(section.fragments) == 1
        assert section.fragments[0].source == "authored"
        assert section.memory_ids == ()


# --- Context --------------------------------------------------------------------------


def test_context_is_omitted_when_there_is_nothing_to_show() -> None:
    empty_sections = bg({"id": "a", "title": "A"}, {"id": "b", "title": "B", "promotion": "auto"})
    sections = render_sections(config(persona="P", background=empty_sections.model_dump()))
    assert [s.name for s in sections] == ["Persona"]


def test_context_uses_the_composed_background_over_the_authored_one() -> None:
    authored_bg = {"sections": [{"id": "a", "title": "A", "entries": [{"key": "k", "value": 1}]}]}
    cfg = config(background=authored_bg)
    assert [s.name for s in render_sections(cfg)] == ["Context"]
    assert render_sections(cfg, Background()) == ()
    composed = bg({"id": "z", "title": "Z", "entries": [{"key": "x", "value": "y"}]})
    (context,) = render_sections(cfg, composed)
    assert context.text == "## Context\n\n### Z\n- **x**: y\n"


def test_section_without_entries_renders_no_heading() -> None:
    background = bg(
        {"id": "empty", "title": "Empty One"},
        {"id": "full", "title": "Full One", "entries": [{"key": "k", "value": "v"}]},
    )
    (context,) = render_sections(config(background=background.model_dump()))
    assert "Empty One" not in context.text
    assert context.text == "## Context\n\n### Full One\n- **k**: v\n"


def test_background_sections_render_in_declaration_order_separated_by_blank_lines() -> None:
    background = bg(
        {"id": "b", "title": "Second", "entries": [{"key": "k", "value": 1}]},
        {
            "id": "a",
            "title": "First",
            "entries": [{"key": "k", "value": 2}, {"key": "j", "value": 3}],
        },
    )
    (context,) = render_sections(config(), background)
    assert context.text == (
        "## Context\n\n### Second\n- **k**: 1\n\n### First\n- **k**: 2\n- **j**: 3\n"
    )


def test_awareness_heading_appears_only_with_awareness_entries() -> None:
    background = bg({"id": "a", "title": "A", "entries": [{"key": "k", "value": 1}]})
    (without,) = render_sections(config(), background)
    assert "Available Information Sources" not in without.text
    (with_awareness,) = render_sections(config(awareness=[{"name": "Docs"}]), background)
    assert with_awareness.text.count("### Available Information Sources\n") == 1


def test_awareness_lines_show_description_and_access_only_when_set() -> None:
    awareness = [
        {"name": "Docs"},
        {"name": "Wiki", "description": "Team wiki"},
        {"name": "DB", "access_method": "sql"},
        {"name": "Cal", "description": "Next\n14 days", "access_method": "tool"},
    ]
    (context,) = render_sections(config(awareness=awareness))
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
    sections = render_sections(config(), recall_text="### Recalled Memories\n- x\n")
    assert [s.text for s in sections] == ["## Context\n\n### Recalled Memories\n- x\n"]


def test_empty_recall_text_adds_nothing() -> None:
    assert render_sections(config(), recall_text="") == ()
    assert render_sections(small_config(), recall_text="") == render_sections(small_config())


def test_context_heading_is_the_only_level_two_line_inside_context() -> None:
    background = bg(
        {
            "id": "a",
            "title": "## Sneaky\n## Current",
            "entries": [{"key": "\n## k", "value": "\n## v"}],
        }
    )
    cfg = config(awareness=[{"name": "\n## n", "description": "\n## d", "access_method": "\n## m"}])
    (context,) = render_sections(cfg, background, recall_text="### Recalled Memories\n- x")
    level_two = [line for line in context.text.splitlines() if line.startswith("## ")]
    assert level_two == ["## Context"]
    assert not [
        line for line in context.text.splitlines() if line.startswith("#") and line[1:2] != "#"
    ]


def test_line_breaks_in_data_are_collapsed_in_headings_keys_and_values() -> None:
    background = bg(
        {
            "id": "a",
            "title": "Multi\r\nLine",
            "entries": [{"key": "k\n- x", "value": "ok\r\n# H\r\n"}],
        }
    )
    (context,) = render_sections(config(), background)
    assert context.text == "## Context\n\n### Multi Line\n- **k - x**: ok # H \n"


def test_values_render_through_value_text() -> None:
    background = bg(
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
    (context,) = render_sections(config(), background)
    assert context.text.splitlines()[3:] == [
        "- **int**: 3",
        "- **float**: 3",
        "- **half**: -0.5",
        "- **yes**: true",
        "- **no**: false",
        "- **empty**: ",
    ]


# --- fragments ------------------------------------------------------------------------


def coalesced(fragments: tuple[PromptFragment, ...]) -> list[tuple[str, str, tuple[str, ...]]]:
    """Fragments with adjacent authored runs joined: how finely authored text is split is
    not part of the contract (only memory lines must stand alone)."""
    out: list[tuple[str, str, tuple[str, ...]]] = []
    for fragment in fragments:
        if fragment.source == "authored" and out and out[-1][0] == "authored":
            out[-1] = ("authored", out[-1][1] + fragment.text, ())
        else:
            out.append((fragment.source, fragment.text, fragment.memory_ids))
    return out


def test_context_of_authored_entries_is_entirely_authored() -> None:
    background = bg(
        {"id": "a", "title": "A", "entries": [{"key": "k", "value": 1}, {"key": "j", "value": 2}]},
        {"id": "b", "title": "B", "entries": [{"key": "x", "value": "y"}]},
    )
    cfg = config(awareness=[{"name": "Docs"}])
    (context,) = render_sections(cfg, background)
    assert all(f.source == "authored" and f.memory_ids == () for f in context.fragments)
    assert context.fragments[0].text.startswith("## Context\n")
    assert coalesced(context.fragments) == [
        (
            "authored",
            "## Context\n\n### A\n- **k**: 1\n- **j**: 2\n\n### B\n- **x**: y\n"
            "\n### Available Information Sources\n- **Docs**\n",
            (),
        )
    ]
    assert context.memory_ids == ()


def test_entry_with_memory_ids_renders_as_one_memory_fragment_carrying_them() -> None:
    background = Background(
        sections=(
            BackgroundSection(
                id="user_profile",
                title="About the User",
                promotion="auto",
                entries=(
                    BackgroundEntry(key="timezone", value="UTC"),
                    BackgroundEntry(key="name", value="Ada", memory_ids=("m2", "m1")),
                ),
            ),
        )
    )
    (context,) = render_sections(config(), background)
    assert coalesced(context.fragments) == [
        ("authored", "## Context\n\n### About the User\n- **timezone**: UTC\n", ()),
        ("memory", "- **name**: Ada\n", ("m2", "m1")),
    ]
    assert context.memory_ids == ("m2", "m1")
    assert (
        context.text == "## Context\n\n### About the User\n- **timezone**: UTC\n- **name**: Ada\n"
    )


def test_each_memory_entry_line_is_its_own_fragment_between_authored_text() -> None:
    background = Background(
        sections=(
            BackgroundSection(
                id="a",
                title="A",
                entries=(
                    BackgroundEntry(key="one", value=1, memory_ids=("m1",)),
                    BackgroundEntry(key="two", value=2, memory_ids=("m2", "m3")),
                    BackgroundEntry(key="three", value=3),
                ),
            ),
            BackgroundSection(
                id="b",
                title="B\n# not a heading",
                entries=(BackgroundEntry(key="k\r\n> q", value="v\u2028```", memory_ids=("m4",)),),
            ),
        )
    )
    cfg = config(awareness=[{"name": "Docs"}])
    (context,) = render_sections(cfg, background, recall_text="### Recalled Memories\n- r")
    assert coalesced(context.fragments) == [
        ("authored", "## Context\n\n### A\n", ()),
        ("memory", "- **one**: 1\n", ("m1",)),
        ("memory", "- **two**: 2\n", ("m2", "m3")),
        ("authored", "- **three**: 3\n\n### B # not a heading\n", ()),
        ("memory", "- **k > q**: v ```\n", ("m4",)),
        (
            "authored",
            "\n### Available Information Sources\n- **Docs**\n\n### Recalled Memories\n- r\n",
            (),
        ),
    ]
    assert context.memory_ids == ("m1", "m2", "m3", "m4")
    for fragment in context.fragments:
        if fragment.source == "memory":
            assert fragment.text.startswith("- **")
            assert fragment.text.endswith("\n")
            assert len(fragment.text.splitlines()) == 1


def test_prompt_fragment_refuses_memory_source_without_ids() -> None:
    with pytest.raises(ValidationError):
        PromptFragment(source="memory", text="- **k**: v\n")
    with pytest.raises(ValidationError):
        PromptFragment(source="memory", text="- **k**: v\n", memory_ids=())
    with pytest.raises(ValidationError):
        memory("- **k**: v\n", [])


def test_prompt_fragment_refuses_authored_source_with_ids() -> None:
    with pytest.raises(ValidationError):
        PromptFragment(source="authored", text="x", memory_ids=("m1",))


def test_prompt_fragment_refuses_empty_text_and_unknown_source() -> None:
    with pytest.raises(ValidationError):
        PromptFragment(source="authored", text="")
    with pytest.raises(ValidationError):
        PromptFragment(source="system", text="x")  # type: ignore[arg-type]


def test_prompt_fragment_accepts_the_two_valid_shapes() -> None:
    assert PromptFragment(source="authored", text="x").memory_ids == ()
    assert PromptFragment(source="memory", text="x", memory_ids=("m",)).memory_ids == ("m",)
    assert authored("x") == PromptFragment(source="authored", text="x")
    assert memory("x", ["m"]) == PromptFragment(source="memory", text="x", memory_ids=("m",))


def test_prompt_section_refuses_empty_fragments() -> None:
    with pytest.raises(ValidationError):
        PromptSection(name="Context", source="instance", fragments=())


def test_prompt_section_refuses_unknown_source() -> None:
    with pytest.raises(ValidationError):
        PromptSection(name="X", source="other", fragments=(authored("x"),))  # type: ignore[arg-type]


def test_prompt_section_text_is_the_join_of_its_fragments() -> None:
    section = PromptSection(
        name="Context",
        source="instance",
        fragments=(authored("## Context\n\n"), memory("- **a**: b\n", ["m1"]), authored("c")),
    )
    assert section.text == "## Context\n\n- **a**: b\nc"
    assert section.memory_ids == ("m1",)


def test_prompt_text_joins_sections_with_a_blank_line() -> None:
    one = PromptSection(name="A", source="role", fragments=(authored("a"),))
    two = PromptSection(name="B", source="instance", fragments=(authored("b\n"),))
    assert prompt_text([one, two]) == "a\n\nb\n"
    assert prompt_text([one]) == "a"
    assert prompt_text([]) == ""
    assert Prompt(sections=(one, two)).text == "a\n\nb\n"


def test_fragments_and_sections_are_frozen() -> None:
    fragment = authored("x")
    section = PromptSection(name="A", source="role", fragments=(fragment,))
    with pytest.raises(ValidationError):
        fragment.text = "y"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        section.name = "B"  # type: ignore[misc]


# --- counts ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sections", "entries", "label"),
    [
        (1, 1, "1 section \u00b7 1 entry"),
        (0, 0, "0 sections \u00b7 0 entries"),
        (2, 3, "2 sections \u00b7 3 entries"),
        (1, 0, "1 section \u00b7 0 entries"),
        (0, 1, "0 sections \u00b7 1 entry"),
    ],
)
def test_counts_label_uses_singulars_and_a_middle_dot(
    sections: int, entries: int, label: str
) -> None:
    assert format_counts(sections, entries) == label
    assert Counts(sections=sections, entries=entries).label() == label


def test_counts_label_has_single_spaces_around_the_middle_dot() -> None:
    label = format_counts(2, 3)
    assert " \u00b7 " in label
    assert "  " not in label
    assert label.count("\u00b7") == 1


def test_counts_of_counts_declared_sections_and_their_entries() -> None:
    declared = bg(
        {"id": "a", "title": "A"},
        {"id": "b", "title": "B", "entries": [{"key": "k", "value": 1}, {"key": "j", "value": 2}]},
    )
    assert Counts.of(declared) == Counts(sections=2, entries=2)


def test_counts_of_counts_entries_of_the_composed_background() -> None:
    declared = bg({"id": "a", "title": "A"}, {"id": "b", "title": "B"})
    composed = Background(
        sections=(
            BackgroundSection(
                id="a",
                title="A",
                entries=(
                    BackgroundEntry(key="x", value=1),
                    BackgroundEntry(key="y", value=2, memory_ids=("m1",)),
                    BackgroundEntry(key="z", value=3, memory_ids=("m2",)),
                ),
            ),
            BackgroundSection(id="b", title="B"),
        )
    )
    counts = Counts.of(declared, composed)
    assert counts == Counts(sections=2, entries=3)
    assert counts.label() == "2 sections \u00b7 3 entries"


def test_counts_of_an_empty_composed_background_counts_zero_entries() -> None:
    declared = bg({"id": "a", "title": "A", "entries": [{"key": "k", "value": 1}]})
    assert Counts.of(declared, Background()) == Counts(sections=1, entries=0)


def test_counts_serialise_with_sections_and_entries_keys() -> None:
    assert Counts(sections=1, entries=2).model_dump() == {"sections": 1, "entries": 2}


# --- property tests -------------------------------------------------------------------

LINE_BREAK_PIECES = SPEC_LINE_BREAKS
MARKDOWN_PIECES = [
    "#",
    "# ",
    "## ",
    "### ",
    "-",
    "- ",
    "*",
    "* ",
    ">",
    "> ",
    "```",
    "```py",
    "~~~",
    "1. ",
]

# Odd whitespace and controls (Zs, Cc, Zl, Zp) that plain st.text() rarely produces.
ODD_PIECES = [" ", "\t", "\x00", "\x1f", "\x7f", "\u00a0", "\u2003", "\u3000"]
# A line break immediately followed by a markdown prefix: the attack shape.
ATTACK_PIECES = [b + m for b in LINE_BREAK_PIECES for m in MARKDOWN_PIECES]
PIECES = LINE_BREAK_PIECES + MARKDOWN_PIECES + ODD_PIECES + ATTACK_PIECES

# Arbitrary Unicode (st.text() covers every category but surrogates) mixed with pieces
# that make line breaks, markdown prefixes and their combinations likely.
unicode_text = st.lists(
    st.one_of(st.text(max_size=6), st.sampled_from(PIECES)),
    max_size=5,
).map("".join)

# Never blank: arbitrary text around one visible character (so no filter has to reject).
nonblank_text = st.tuples(
    unicode_text,
    st.one_of(
        st.characters(exclude_categories=["Cs", "Zs", "Zl", "Zp", "Cc"]),
        st.sampled_from(["#", "-", "*", ">", "```"]),
    ),
    st.sampled_from(["", *PIECES]),
).map("".join)
titles = nonblank_text.filter(lambda t: title_problem(t) is None)
keys = nonblank_text  # at most 45 code points: below KEY_MAX (200)
names = nonblank_text  # below NAME_MAX (200)
values = st.one_of(
    unicode_text,
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
)
section_ids = st.from_regex(r"[a-z0-9][a-z0-9_-]{0,10}", fullmatch=True)
memory_id_lists = st.one_of(
    st.just(()),
    st.lists(
        st.text("0123456789abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=6),
        min_size=1,
        max_size=3,
    ).map(tuple),
)


@st.composite
def backgrounds(draw: st.DrawFn, with_memory: bool) -> Background:
    ids = draw(st.lists(section_ids, unique=True, max_size=3))
    sections = []
    for section_id in ids:
        entry_keys = draw(st.lists(keys, unique=True, max_size=3))
        entries = tuple(
            BackgroundEntry(
                key=key,
                value=draw(values),
                memory_ids=draw(memory_id_lists) if with_memory else (),
            )
            for key in entry_keys
        )
        sections.append(
            BackgroundSection(
                id=section_id,
                title=draw(titles),
                promotion=draw(st.sampled_from(TIERS)),
                entries=entries,
            )
        )
    return Background(sections=tuple(sections))


awareness_lists = st.lists(
    st.builds(
        AwarenessSource,
        name=names,
        description=unicode_text,
        access_method=unicode_text,
    ),
    unique_by=lambda a: a.name,
    max_size=2,
)


@st.composite
def full_configs(draw: st.DrawFn) -> AgentConfig:
    return AgentConfig(
        name=draw(names),
        persona=draw(unicode_text),
        tone=draw(unicode_text),
        objective=draw(unicode_text),
        manual=draw(unicode_text),
        capabilities=tuple(
            draw(
                st.lists(
                    st.builds(Capability, name=names, description=unicode_text),
                    unique_by=lambda c: c.name,
                    max_size=2,
                )
            )
        ),
        background=draw(backgrounds(with_memory=False)),
        awareness=tuple(draw(awareness_lists)),
    )


@settings(max_examples=150, deadline=None)
@given(
    full_configs(),
    st.one_of(st.none(), backgrounds(with_memory=True)),
    st.one_of(st.none(), unicode_text),
)
def test_every_section_is_exactly_its_fragments_and_no_fragment_is_empty(
    cfg: AgentConfig, composed: Background | None, recall: str | None
) -> None:
    sections = render_sections(cfg, composed, recall)
    assert [s.name for s in sections] == [
        n for n in SECTION_ORDER if n in {s.name for s in sections}
    ]
    for section in sections:
        assert section.fragments
        assert section.text == "".join(f.text for f in section.fragments)
        assert section.text
        for fragment in section.fragments:
            assert fragment.text != ""
            assert (fragment.source == "memory") == bool(fragment.memory_ids)
            # Every fragment still satisfies the contract when validated from scratch.
            PromptFragment.model_validate(fragment.model_dump())
            if fragment.source == "memory":
                # One whole entry line, trailing newline included.
                assert fragment.text.startswith("- **")
                assert fragment.text.endswith("\n")
                assert len(fragment.text.splitlines()) == 1
    assert prompt_text(sections) == "\n\n".join(s.text for s in sections)

    background = cfg.background if composed is None else composed
    expected_ids = tuple(
        mid
        for section in background.sections
        for entry in section.entries
        for mid in entry.memory_ids
    )
    context = by_name(sections).get("Context")
    assert (context.memory_ids if context else ()) == expected_ids
    for section in sections:
        if section.name != "Context":
            assert section.memory_ids == ()

    # Deterministic: the same input renders the same output (property 3 checks more).
    assert render_sections(cfg, composed, recall) == sections


def expected_context_lines(
    background: Background, awareness: tuple[AwarenessSource, ...]
) -> list[str]:
    blocks: list[list[str]] = []
    for section in background.sections:
        if section.entries:
            block = [f"### {collapse(section.title)}"]
            block += [
                f"- **{collapse(e.key)}**: {collapse(value_text(e.value))}" for e in section.entries
            ]
            blocks.append(block)
    if awareness:
        block = ["### Available Information Sources"]
        for source in awareness:
            line = f"- **{collapse(source.name)}**"
            if source.description:
                line += f": {collapse(source.description)}"
            if source.access_method:
                line += f" (access: {collapse(source.access_method)})"
            block.append(line)
        blocks.append(block)
    if not blocks:
        return []
    lines = ["## Context", ""]
    for index, block in enumerate(blocks):
        if index:
            lines.append("")
        lines.extend(block)
    return lines


@settings(max_examples=200, deadline=None)
@given(backgrounds(with_memory=True), awareness_lists)
def test_no_line_of_the_prompt_made_from_data_can_begin_with_markdown(
    background: Background, awareness: list[AwarenessSource]
) -> None:
    cfg = AgentConfig(name="Wren", awareness=tuple(awareness))
    prompt = prompt_text(render_sections(cfg, background))
    lines = prompt.splitlines()

    for line in lines:
        assert line in ("## Context", "") or line.startswith(("### ", "- **")), repr(line)
    assert [line for line in lines if line.startswith("## ")] == (["## Context"] if lines else [])

    filled = [s for s in background.sections if s.entries]
    blocks = len(filled) + (1 if awareness else 0)
    expected_count = (
        0
        if blocks == 0
        else 2
        + sum(1 + len(s.entries) for s in filled)
        + (1 + len(awareness) if awareness else 0)
        + (blocks - 1)
    )
    assert len(lines) == expected_count

    assert lines == expected_context_lines(background, tuple(awareness))

    # Counts agree with what was rendered: one "- **" line per composed entry.
    declared = Background(
        sections=tuple(s.model_copy(update={"entries": ()}) for s in background.sections)
    )
    counts = Counts.of(declared, background)
    assert counts.sections == len(background.sections)
    entry_lines = sum(1 + len(s.entries) for s in filled) - len(filled)
    assert counts.entries == entry_lines == background.entry_count


@settings(max_examples=60, deadline=None)
@given(
    full_configs(),
    st.one_of(st.none(), backgrounds(with_memory=True)),
    st.one_of(st.none(), unicode_text),
)
def test_rendering_is_deterministic(
    cfg: AgentConfig, composed: Background | None, recall: str | None
) -> None:
    first = render_sections(cfg, composed, recall)
    second = render_sections(cfg, composed, recall)
    assert first == second
    assert prompt_text(first) == prompt_text(second)
    # An equal but separately built config renders identically too.
    rebuilt = AgentConfig.model_validate(cfg.model_dump())
    assert render_sections(rebuilt, composed, recall) == first
