"""Prompt-cache stability's pure half (SPEC §17): parts that join to the prompt, changes
counted per part, a most-stable-first order, and a re-render in any order that equals
what the real renderer writes for the config in that order."""

from __future__ import annotations

from collections import Counter
from random import Random

from hypothesis import given, settings
from hypothesis import strategies as st

from lens.core.background import Background, BackgroundEntry, BackgroundSection
from lens.core.config import AgentConfig, AwarenessSource
from lens.core.prompt import Prompt
from lens.core.render import render_sections
from lens.core.token_counts import token_ids
from lens.core.token_prefix import common_prefix, segments, shared_tokens
from memory.core.stability import (
    changed_in,
    parts_of,
    parts_of_data,
    reordered,
    suggested_order,
)

IDS = ["about", "prefs", "goals", "people", "style", "notes", "empty"]


@st.composite
def agent_configs(draw: st.DrawFn) -> AgentConfig:
    ids = draw(st.permutations(IDS).map(lambda ids: ids[: draw(st.integers(0, len(IDS)))]))
    sections = tuple(
        BackgroundSection(
            id=section_id,
            title=draw(st.sampled_from(["About", "Préférences", "Goals ✓", "x"])),
            entries=tuple(
                BackgroundEntry(key=f"k{n}", value=draw(st.sampled_from(["a", "b b", 3, True])))
                for n in range(0 if section_id == "empty" else draw(st.integers(0, 3)))
            ),
        )
        for section_id in ids
    )
    awareness = draw(st.sampled_from([(), (AwarenessSource(name="wiki", description="Docs"),)]))
    return AgentConfig(
        name="Wren",
        persona=draw(st.sampled_from(["", "You help.", "Tu aides\nles gens."])),
        objective=draw(st.sampled_from(["", "Answer well."])),
        background=Background(sections=sections),
        awareness=awareness,
    )


def prompt_of(config: AgentConfig) -> Prompt:
    return Prompt(sections=render_sections(config))


def in_order(config: AgentConfig, order: list[str]) -> AgentConfig:
    place = {section_id: n for n, section_id in enumerate(order)}
    moved = sorted(config.background.sections, key=lambda s: place.get(s.id, len(place)))
    return config.model_copy(update={"background": Background(sections=tuple(moved))})


# Rendering counts tokens: the first example loads the encoding (half a second).
@settings(deadline=None)
@given(agent_configs())
def test_the_parts_join_to_the_prompt(config: AgentConfig) -> None:
    prompt = prompt_of(config)
    parts = parts_of(prompt, config.background)
    assert "".join(part.text for part in parts) == prompt.text
    blocks = [part.background for part in parts if part.background is not None]
    assert blocks == [s.id for s in config.background.sections if s.entries]


@settings(deadline=None)
@given(agent_configs(), st.randoms(use_true_random=False))
def test_a_re_render_in_any_order_is_what_the_renderer_writes(
    config: AgentConfig, random: Random
) -> None:
    order = [s.id for s in config.background.sections]
    random.shuffle(order)
    parts = parts_of(prompt_of(config), config.background)
    assert reordered(parts, order) == prompt_of(in_order(config, order)).text
    assert reordered(parts, []) == prompt_of(config).text


def test_changes_are_counted_per_part_and_a_move_is_no_change() -> None:
    a = BackgroundSection(id="a", title="A", entries=(BackgroundEntry(key="k", value="1"),))
    b = BackgroundSection(id="b", title="B", entries=(BackgroundEntry(key="k", value="1"),))
    b2 = b.model_copy(update={"entries": (BackgroundEntry(key="k", value="2"),)})
    configs = [
        AgentConfig(name="W", persona="P", background=Background(sections=(a, b))),
        AgentConfig(name="W", persona="P", background=Background(sections=(b, a))),  # moved
        AgentConfig(name="W", persona="Q", background=Background(sections=(b2, a))),
        AgentConfig(name="W", persona="Q", background=Background(sections=(b2,))),  # a goes
    ]
    history = [parts_of(prompt_of(c), c.background) for c in configs]
    assert changed_in(history) == Counter(
        {("Persona", None): 1, ("Context", "b"): 1, ("Context", "a"): 1}
    )


def test_the_suggestion_is_most_stable_first_and_keeps_ties_in_place() -> None:
    assert suggested_order(["a", "b", "c", "d"], {"a": 3, "b": 0, "c": 3, "d": 1}) == [
        "b",
        "d",
        "a",
        "c",
    ]
    assert suggested_order(["a", "b"], {}) == ["a", "b"]


@settings(deadline=None)
@given(agent_configs())
def test_parts_read_from_the_stored_json_are_the_rendered_parts(config: AgentConfig) -> None:
    prompt = prompt_of(config)
    data = {
        "prompt": prompt.model_dump(mode="json"),
        "background": config.background.model_dump(mode="json"),
    }
    assert parts_of_data(data) == parts_of(prompt, config.background)


@settings(deadline=None)
@given(agent_configs(), agent_configs())
def test_shared_tokens_of_two_prompts_is_the_independent_count(
    one: AgentConfig, two: AgentConfig
) -> None:
    a, b = prompt_of(one).text, prompt_of(two).text
    assert shared_tokens(segments(a), segments(b), token_ids) == common_prefix(
        token_ids(a), token_ids(b)
    )
