"""The prompt-cache figures, pure (SPEC §17): over random edits of an agent's sections,
the shared prefixes equal an independent count (both prompts tokenised by tiktoken
directly, code points compared one by one) and the first change names the section that
holds the first differing code point.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lens.core.background import Background, BackgroundEntry, BackgroundSection
from lens.core.cache_prefix import (
    CachePrefix,
    FirstChange,
    cache_prefix,
    first_change_at,
)
from lens.core.config import AgentConfig
from lens.core.fragments import PromptSection, prompt_text
from lens.core.render import render_sections
from lens.core.token_counts import load_encoding, token_ids
from lens.core.token_prefix import common_prefix
from tests.samples import expected_change, leading_equal

_encoding = load_encoding()  # tiktoken's Encoding over the shipped ranks, not our cache


# --- an agent as plain data, and edits of it ----------------------------------------------


@dataclass(frozen=True)
class Block:
    id: str
    title: str
    # (key, value, memory id or None): a memory entry renders as a memory fragment.
    entries: tuple[tuple[str, str, str | None], ...]


@dataclass(frozen=True)
class Agent:
    persona: str = ""
    objective: str = ""
    capabilities: tuple[str, ...] = ()
    manual: str = ""
    blocks: tuple[Block, ...] = ()
    awareness: bool = False
    counter: int = field(default=0, compare=False)


def render(agent: Agent) -> tuple[tuple[PromptSection, ...], Background]:
    background = Background(
        sections=tuple(
            BackgroundSection(
                id=block.id,
                title=block.title,
                entries=tuple(
                    BackgroundEntry(key=key, value=value, memory_ids=(mid,) if mid else ())
                    for key, value, mid in block.entries
                ),
            )
            for block in agent.blocks
        )
    )
    config = AgentConfig.model_validate(
        {
            "name": "Probe",
            "persona": agent.persona,
            "objective": agent.objective,
            "capabilities": [
                {"name": f"Tool {i}", "description": text}
                for i, text in enumerate(agent.capabilities)
            ],
            "manual": agent.manual,
            "awareness": (
                [{"name": "Calendar", "description": "next days"}] if agent.awareness else []
            ),
        }
    )
    return render_sections(config, background), background


WORDS = st.text(alphabet="abcdefgh ijk,.-é中😀0123/'\t", min_size=1, max_size=24).filter(
    lambda s: s.strip() != ""
)
ENTRIES = st.lists(
    st.tuples(WORDS, st.one_of(st.none(), st.just("m0hon0000000000001"))),
    max_size=4,
)


@st.composite
def blocks(draw: Any, prefix: str = "s") -> tuple[Block, ...]:
    count = draw(st.integers(0, 5))
    made = []
    for i in range(count):
        entries = draw(ENTRIES)
        made.append(
            Block(
                id=f"{prefix}{i}",
                title=f"Title {prefix}{i}",
                entries=tuple((f"k{e}", value, mid) for e, (value, mid) in enumerate(entries)),
            )
        )
    return tuple(made)


AGENTS = st.builds(
    Agent,
    persona=st.one_of(st.just(""), WORDS),
    objective=st.one_of(st.just(""), WORDS),
    capabilities=st.lists(WORDS, max_size=2).map(tuple),
    manual=st.one_of(st.just(""), WORDS),
    blocks=blocks(),
    awareness=st.booleans(),
)


def _edit(agent: Agent, kind: str, data: Any) -> Agent:
    blocks_ = list(agent.blocks)
    if kind == "persona":
        return replace(agent, persona=data.draw(st.one_of(st.just(""), WORDS)))
    if kind == "objective":
        return replace(agent, objective=data.draw(WORDS))
    if kind == "manual":
        return replace(agent, manual=data.draw(st.one_of(st.just(""), WORDS)))
    if kind == "awareness":
        return replace(agent, awareness=not agent.awareness)
    if kind == "add" or not blocks_:
        n = agent.counter + 1
        new = Block(
            f"n{n}",
            f"New {n}",
            tuple((f"k{e}", v, m) for e, (v, m) in enumerate(data.draw(ENTRIES))),
        )
        blocks_.insert(data.draw(st.integers(0, len(blocks_))), new)
        return replace(agent, blocks=tuple(blocks_), counter=n)
    i = data.draw(st.integers(0, len(blocks_) - 1))
    block = blocks_[i]
    if kind == "remove":
        del blocks_[i]
    elif kind == "move":
        blocks_.insert(data.draw(st.integers(0, len(blocks_) - 1)), blocks_.pop(i))
    elif kind == "title":
        blocks_[i] = replace(block, title=block.title + " " + data.draw(WORDS))
    elif kind == "value" and block.entries:
        e = data.draw(st.integers(0, len(block.entries) - 1))
        key, _value, mid = block.entries[e]
        changed = list(block.entries)
        changed[e] = (key, data.draw(WORDS), mid)
        blocks_[i] = replace(block, entries=tuple(changed))
    else:  # an entry more, at the end of the section
        more = (*block.entries, (f"k{len(block.entries)}x", data.draw(WORDS), None))
        blocks_[i] = replace(block, entries=more)
    return replace(agent, blocks=tuple(blocks_))


EDITS = st.sampled_from(
    [
        "persona",
        "objective",
        "manual",
        "awareness",
        "add",
        "remove",
        "move",
        "title",
        "value",
        "entry",
    ]
)


# --- the independent count ----------------------------------------------------------------


def check(before: Agent, after: Agent) -> CachePrefix:
    old_sections, _old_background = render(before)
    sections, background = render(after)
    old, new = prompt_text(old_sections), prompt_text(sections)
    figures = cache_prefix((old, token_ids(old)), new, token_ids(new), sections, background)
    # Without the previous prompt's ids (only the lines around the change tokenised):
    # the same figures.
    assert cache_prefix((old, None), new, token_ids(new), sections, background) == figures

    old_ids, new_ids = _encoding.encode_ordinary(old), _encoding.encode_ordinary(new)
    assert figures.total_tokens == len(new_ids)
    assert figures.prefix_tokens == leading_equal(old_ids, new_ids)
    assert figures.prefix_chars == leading_equal(old, new)
    if old == new:
        assert figures.first_change is None
        assert figures.prefix_tokens == figures.total_tokens
    elif not sections:
        assert figures.first_change is None
    else:
        expected = expected_change(sections, background, leading_equal(old, new))
        assert figures.first_change == expected
    return figures


@settings(max_examples=300, deadline=None)
@given(AGENTS, st.lists(EDITS, min_size=1, max_size=4), st.data())
def test_the_figures_equal_an_independent_count_over_random_edits(
    agent: Agent, edits: list[str], data: Any
) -> None:
    after = agent
    for kind in edits:
        after = _edit(after, kind, data)
    check(agent, after)


@settings(max_examples=50, deadline=None)
@given(AGENTS)
def test_an_unchanged_prompt_is_cached_whole(agent: Agent) -> None:
    figures = check(agent, agent)
    assert figures.first_change is None
    assert figures.prefix_tokens == figures.total_tokens
    assert figures.prefix_chars == len(prompt_text(render(agent)[0]))


@settings(max_examples=30, deadline=None)
@given(AGENTS)
def test_the_first_delivery_shares_nothing(agent: Agent) -> None:
    sections, background = render(agent)
    text = prompt_text(sections)
    figures = cache_prefix(None, text, token_ids(text), sections, background)
    assert figures == CachePrefix(0, 0, len(_encoding.encode_ordinary(text)), None)
    assert figures.as_json() == {
        "prefix_tokens": 0,
        "prefix_chars": 0,
        "total_tokens": figures.total_tokens,
        "first_change": None,
    }


# --- examples a reader can follow ---------------------------------------------------------

BASE = Agent(
    persona="You are Wren.",
    objective="Help the user.",
    blocks=(
        Block("profile", "About the User", (("name", "Ada", None),)),
        Block("prefs", "Preferences", (("drink", "tea", "m0hon0000000000001"),)),
    ),
    awareness=True,
)


def test_a_changed_preference_is_placed_in_its_background_section() -> None:
    prefs = replace(BASE.blocks[1], entries=(("drink", "coffee", "m0hon0000000000001"),))
    figures = check(BASE, replace(BASE, blocks=(BASE.blocks[0], prefs)))
    assert figures.first_change == FirstChange("Context", "prefs")
    assert figures.as_json()["first_change"] == {
        "section": "Context",
        "background_section": "prefs",
    }
    assert 0 < figures.prefix_tokens < figures.total_tokens


def test_a_changed_persona_shares_only_what_comes_before_it() -> None:
    figures = check(BASE, replace(BASE, persona="You are Wren, kind."))
    assert figures.first_change == FirstChange("Persona")
    assert figures.prefix_chars == len("## Persona\nYou are Wren")


def test_a_removed_last_section_is_placed_at_the_end_of_this_prompt() -> None:
    figures = check(BASE, replace(BASE, awareness=False))
    assert figures.first_change == FirstChange("Context", "prefs")


def test_an_added_section_is_placed_in_itself_and_sources_in_the_context() -> None:
    figures = check(replace(BASE, blocks=BASE.blocks[:1]), BASE)
    assert figures.first_change == FirstChange("Context", "prefs")
    figures = check(BASE, replace(BASE, blocks=()))
    assert figures.first_change == FirstChange("Context", None)


@pytest.mark.parametrize(
    ("a", "b", "n"),
    [
        ("", "", 0),
        ("abc", "abd", 2),
        ("abc", "abc", 3),
        ("abc", "ab", 2),
        ("x" * 10_000 + "a", "x" * 10_000 + "b", 10_000),
        ("y" + "x" * 9_999, "x" * 10_000, 0),
        (b"\x00\x01", b"\x00\x02", 1),
        ([1, 2, 3], [1, 2], 2),
    ],
)
def test_common_prefix(a: Any, b: Any, n: int) -> None:
    assert common_prefix(a, b) == n


SMALL = st.lists(st.integers(0, 3), max_size=40)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 9000), SMALL, SMALL)
def test_common_prefix_is_the_count_of_leading_equal_items(
    shared: int, a_tail: list[int], b_tail: list[int]
) -> None:
    a, b = [7] * shared + a_tail, [7] * shared + b_tail
    assert common_prefix(a, b) == leading_equal(a, b)
    assert common_prefix("".join(map(str, a)), "".join(map(str, b))) == leading_equal(
        "".join(map(str, a)), "".join(map(str, b))
    )


def test_an_offset_needs_a_prompt() -> None:
    with pytest.raises(ValueError, match="without sections"):
        first_change_at((), Background(), 0)
