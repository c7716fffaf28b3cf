"""The Context in blocks and the Background outline (the lens's cards), without a
database: the blocks join back to exactly the Context's fragments for any config.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lens.core.background import TIERS, Background, BackgroundEntry, BackgroundSection
from lens.core.config import AgentConfig, AwarenessSource
from lens.core.fragments import authored, prompt_section
from lens.core.outline import BlocksMismatch, context_blocks, heading, outline
from lens.core.render import AWARENESS_HEADING, entry_line, render_sections
from tests.samples import SPEC_LINE_BREAKS, agent_config, background_of

# --- generated configs ---------------------------------------------------------------

# Text that makes line breaks, markdown and headings (even the awareness one) likely.
PIECES = [*SPEC_LINE_BREAKS, "#", "### ", "- **", "\n\n", " ", AWARENESS_HEADING, "Available"]
text = st.lists(st.one_of(st.text(max_size=5), st.sampled_from(PIECES)), max_size=4).map("".join)
visible = st.tuples(text, st.sampled_from(["a", "#", "Z", "\u00e9", "-"]), text).map("".join)
titles = st.one_of(visible, st.just("Available Information Sources"), st.just("Same"))
memory_ids = st.one_of(
    st.just(()),
    st.lists(st.text("0123456789abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=4), max_size=3)
    .filter(bool)
    .map(tuple),
)


@st.composite
def backgrounds(draw: st.DrawFn) -> Background:
    ids = draw(
        st.lists(st.from_regex(r"[a-z0-9][a-z0-9_-]{0,6}", fullmatch=True), unique=True, max_size=5)
    )
    sections = []
    for section_id in ids:
        keys = draw(st.lists(visible, unique=True, max_size=4))
        entries = tuple(
            BackgroundEntry(
                key=key,
                value=draw(
                    st.one_of(
                        text,
                        st.integers(),
                        st.booleans(),
                        st.floats(allow_nan=False, allow_infinity=False),
                    )
                ),
                memory_ids=draw(memory_ids),
            )
            for key in keys
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


awareness = st.lists(
    st.builds(AwarenessSource, name=visible, description=text, access_method=text),
    unique_by=lambda source: source.name,
    max_size=2,
)


@settings(max_examples=300, deadline=None)
@given(backgrounds(), awareness, st.one_of(st.none(), text))
def test_the_blocks_join_to_exactly_the_context_fragments(
    background: Background, sources: list[AwarenessSource], recall: str | None
) -> None:
    config = AgentConfig(name="Any", awareness=tuple(sources))
    sections = render_sections(config, background, recall)
    if not sections:
        assert not any(s.entries for s in background.sections)
        assert not sources
        assert not recall
        return
    (context,) = sections
    blocks = context_blocks(context, background, recall)

    assert tuple(f for block in blocks for f in block.fragments) == context.fragments
    assert "".join(block.text for block in blocks) == context.text
    for block in blocks:
        assert block.fragments
        # The HTML parser drops a line feed right after <pre>: no card may start with one
        # (recalled text is the recall module's own, which starts with its heading).
        if block.kind != "recall":
            assert not block.text.startswith(("\n", "\r"))

    shown = [s for s in background.sections if s.entries]
    kinds = [block.kind for block in blocks]
    expected_kinds = ["head", *["background"] * len(shown)]
    expected_kinds += ["awareness"] if sources else []
    expected_kinds += ["recall"] if recall else []
    assert kinds == expected_kinds
    assert blocks[0].text.startswith("## Context\n")

    background_blocks = [block for block in blocks if block.kind == "background"]
    assert [block.section for block in background_blocks] == shown
    for block in background_blocks:
        assert block.section is not None
        lines = "".join(entry_line(entry) for entry in block.section.entries)
        # Its own heading and lines, and the blank line before the next block (if any).
        assert block.text in (heading(block.section) + lines, heading(block.section) + lines + "\n")
        ids = [mid for entry in block.section.entries for mid in entry.memory_ids]
        assert block.memory_ids == tuple(dict.fromkeys(ids))
    for block in blocks[:-1]:
        assert block.text.endswith("\n\n")

    items = outline(background, blocks)
    assert [item.id for item in items] == [s.id for s in background.sections]
    for item, section in zip(items, background.sections, strict=True):
        assert item.rendered == bool(section.entries)
        assert item.entries == len(section.entries)
        assert item.memory_entries == sum(1 for e in section.entries if e.memory_ids)
        assert item.chars == (len(item.block.text) if item.block else 0)
        assert (item.tokens > 0) == item.rendered


# --- examples ------------------------------------------------------------------------


def two_sections() -> Background:
    return background_of(
        {"id": "a", "title": "A", "promotion": "auto", "entries": [{"key": "k", "value": 1}]},
        {"id": "empty", "title": "Empty"},
        {
            "id": "b",
            "title": "B",
            "entries": [
                {"key": "x", "value": "y"},
                {"key": "m", "value": "from memory", "memory_ids": ["m1", "m2"]},
            ],
        },
    )


def test_each_background_section_starts_a_fragment_of_its_own() -> None:
    background = two_sections()
    config = agent_config(awareness=[{"name": "Docs"}])
    (context,) = render_sections(config, background)
    assert [(f.source, f.text) for f in context.fragments] == [
        ("authored", "## Context\n\n"),
        ("authored", "### A\n- **k**: 1\n\n"),
        ("authored", "### B\n- **x**: y\n"),
        ("memory", "- **m**: from memory\n"),
        ("authored", "\n"),
        ("authored", "### Available Information Sources\n- **Docs**\n"),
    ]
    blocks = context_blocks(context, background)
    assert [(b.kind, b.section.id if b.section else None) for b in blocks] == [
        ("head", None),
        ("background", "a"),
        ("background", "b"),
        ("awareness", None),
    ]
    assert blocks[2].memory_ids == ("m1", "m2")


def test_the_outline_lists_every_declared_section_even_without_entries() -> None:
    background = two_sections()
    (context,) = render_sections(agent_config(), background)
    items = outline(background, context_blocks(context, background))
    assert [(i.id, i.title, i.tier, i.entries, i.memories, i.rendered) for i in items] == [
        ("a", "A", "auto", 1, 0, True),
        ("empty", "Empty", "locked", 0, 0, False),
        ("b", "B", "locked", 2, 2, True),
    ]
    assert [i.anchor for i in items] == ["section-a", "section-empty", "section-b"]
    assert items[2].memory_entries == 1
    assert items[0].chars == len("### A\n- **k**: 1\n\n")
    assert items[1].chars == 0
    assert items[1].tokens == 0


def test_a_context_rendered_as_one_run_does_not_split() -> None:
    # A Context whose blocks were coalesced (an older rendering) has no block starts.
    background = two_sections()
    (context,) = render_sections(agent_config(), background)
    joined = prompt_section("Context", "instance", (authored(context.text),))
    with pytest.raises(BlocksMismatch):
        context_blocks(joined, background)
    with pytest.raises(BlocksMismatch):
        context_blocks(context, background, recall_text="### Recalled Memories\n- x\n")
