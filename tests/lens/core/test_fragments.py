"""Prompt fragments and counts (SPEC §4.3, §4.4), without a database: which text is
authored and which is memory, the fragment and section models, and the counts label.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from lens.core.background import (
    Background,
    BackgroundEntry,
    BackgroundSection,
)
from lens.core.counts import Counts, format_counts
from lens.core.fragments import (
    PromptFragment,
    PromptSection,
    authored,
    memory,
    prompt_section,
    prompt_text,
)
from lens.core.prompt import Prompt
from lens.core.render import render_sections
from lens.core.token_counts import count_tokens
from tests.samples import agent_config, background_of

# --- fragments ---------------------------------------------------------------------


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
    background = background_of(
        {"id": "a", "title": "A", "entries": [{"key": "k", "value": 1}, {"key": "j", "value": 2}]},
        {"id": "b", "title": "B", "entries": [{"key": "x", "value": "y"}]},
    )
    cfg = agent_config(awareness=[{"name": "Docs"}])
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
    (context,) = render_sections(agent_config(), background)
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
    cfg = agent_config(awareness=[{"name": "Docs"}])
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
        PromptFragment(source="system", text="x")


def test_prompt_fragment_accepts_the_two_valid_shapes() -> None:
    assert PromptFragment(source="authored", text="x").memory_ids == ()
    assert PromptFragment(source="memory", text="x", memory_ids=("m",)).memory_ids == ("m",)
    assert authored("x") == PromptFragment(source="authored", text="x")
    assert memory("x", ["m"]) == PromptFragment(source="memory", text="x", memory_ids=("m",))


def test_prompt_section_refuses_empty_fragments() -> None:
    with pytest.raises(ValidationError):
        PromptSection(name="Context", source="instance", fragments=(), tokens=0)


def test_prompt_section_refuses_unknown_source() -> None:
    with pytest.raises(ValidationError):
        PromptSection(name="X", source="other", fragments=(authored("x"),), tokens=1)


def test_prompt_section_text_is_the_join_of_its_fragments() -> None:
    built = prompt_section(
        "Context",
        "instance",
        (authored("## Context\n\n"), memory("- **a**: b\n", ["m1"]), authored("c")),
    )
    assert built.text == "## Context\n\n- **a**: b\nc"
    assert built.memory_ids == ("m1",)
    assert built.tokens == count_tokens(built.text) > 0


def test_prompt_text_joins_sections_with_a_blank_line() -> None:
    one = prompt_section("A", "role", (authored("a"),))
    two = prompt_section("B", "instance", (authored("b\n"),))
    assert prompt_text([one, two]) == "a\n\nb\n"
    assert prompt_text([one]) == "a"
    assert prompt_text([]) == ""
    assert Prompt(sections=(one, two)).text == "a\n\nb\n"


def test_fragments_and_sections_are_frozen() -> None:
    fragment = authored("x")
    built = prompt_section("A", "role", (fragment,))
    with pytest.raises(ValidationError):
        fragment.text = "y"  # type: ignore[misc]  # frozen: the assignment must raise
    with pytest.raises(ValidationError):
        built.name = "B"  # type: ignore[misc]  # frozen: the assignment must raise


# --- counts ------------------------------------------------------------------------


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
    declared = background_of(
        {"id": "a", "title": "A"},
        {"id": "b", "title": "B", "entries": [{"key": "k", "value": 1}, {"key": "j", "value": 2}]},
    )
    assert Counts.of(declared) == Counts(sections=2, entries=2)


def test_counts_of_counts_entries_of_the_composed_background() -> None:
    declared = background_of({"id": "a", "title": "A"}, {"id": "b", "title": "B"})
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
    declared = background_of({"id": "a", "title": "A", "entries": [{"key": "k", "value": 1}]})
    assert Counts.of(declared, Background()) == Counts(sections=1, entries=0)


def test_counts_serialise_with_sections_and_entries_keys() -> None:
    assert Counts(sections=1, entries=2).model_dump() == {"sections": 1, "entries": 2}
