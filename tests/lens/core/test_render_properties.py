"""Properties of render_sections() over generated configs (SPEC §4.1–4.3): every section
is exactly its fragments, no line made from data can begin with markdown, and rendering is
deterministic.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lens.core.background import (
    TIERS,
    Background,
    BackgroundEntry,
    BackgroundSection,
    title_problem,
)
from lens.core.config import AgentConfig, AwarenessSource, Capability, prose_problem
from lens.core.counts import Counts
from lens.core.fragments import PromptFragment, PromptSection, prompt_text
from lens.core.identity import bidi_control, key_skeleton
from lens.core.render import render_sections, render_text
from lens.core.text import collapse, value_text
from tests.samples import SECTION_ORDER, SPEC_LINE_BREAKS


def by_name(sections: tuple[PromptSection, ...]) -> dict[str, PromptSection]:
    return {s.name: s for s in sections}


# --- property tests ----------------------------------------------------------------

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


# No bidi controls: keys and names refuse them.
keys = nonblank_text.filter(lambda k: bidi_control(k) is None)  # below KEY_MAX (200)


names = keys  # below NAME_MAX (200)


# Prose keeps its lines but none may read as a `#` or `##` heading: deepen the pieces
# that would make one (the filter catches the rare generated one).
prose_text = unicode_text.map(lambda t: t.replace("#", "###")).filter(
    lambda t: prose_problem(t) is None
)


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
        # Keys are unique as names (case, NFKC, look-alikes), as the schema requires.
        entry_keys = draw(st.lists(keys, unique_by=key_skeleton, max_size=3))
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
    unique_by=lambda a: key_skeleton(a.name),
    max_size=2,
)


@st.composite
def full_configs(draw: st.DrawFn) -> AgentConfig:
    return AgentConfig(
        name=draw(names),
        persona=draw(prose_text),
        tone=draw(prose_text),
        objective=draw(prose_text),
        manual=draw(prose_text),
        capabilities=tuple(
            draw(
                st.lists(
                    st.builds(Capability, name=names, description=prose_text),
                    unique_by=lambda c: key_skeleton(c.name),
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


@settings(max_examples=60, deadline=None)
@given(full_configs(), st.one_of(st.none(), backgrounds(with_memory=True)))
def test_the_text_alone_is_the_text_of_the_sections(
    cfg: AgentConfig, composed: Background | None
) -> None:
    # A revision diff renders the text without counting sections: the same prompt.
    assert render_text(cfg, composed) == prompt_text(render_sections(cfg, composed))
