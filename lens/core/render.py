"""Rendering an agent's configuration into attributed prompt sections."""

from __future__ import annotations

from lens.core.background import Background, BackgroundEntry, BackgroundSection
from lens.core.config import AgentConfig, AwarenessSource
from lens.core.fragments import (
    SECTION_SEPARATOR,
    FragmentBuilder,
    PromptFragment,
    PromptSection,
    SectionSource,
    authored,
    prompt_section,
)
from lens.core.text import collapse, value_text

CONTEXT_HEADING = "## Context\n"
AWARENESS_HEADING = "### Available Information Sources\n"


def entry_text(key: str, value: str) -> str:
    """One Background entry line from an already collapsed key and value."""
    return f"- **{key}**: {value}\n"


# What a line costs beyond its key and value: the overlay budgets in whole lines.
ENTRY_LINE_OVERHEAD = len(entry_text("", ""))


def entry_line(entry: BackgroundEntry) -> str:
    return entry_text(collapse(entry.key), collapse(value_text(entry.value)))


# Authored entries' lines, by the entry they were rendered from. A stored configuration
# is validated once and its frozen entries reused (``lens.agents``), so every
# composition renders the same thousands of authored lines again: looked up here, they
# cost about half (2,000 entries: 1.1 ms to 0.6). Each value holds its entry, so an id
# in the table is never another object's; the table is emptied when full rather than
# kept in order.
_LINES: dict[int, tuple[BackgroundEntry, str]] = {}
_LINES_MAX = 1 << 16


def _authored_line(entry: BackgroundEntry) -> str:
    found = _LINES.get(id(entry))
    if found is not None and found[0] is entry:
        return found[1]
    line = entry_line(entry)
    if len(_LINES) >= _LINES_MAX:
        _LINES.clear()
    _LINES[id(entry)] = (entry, line)
    return line


# Whole sections of authored entries only, by the section they were rendered from, kept
# as ``_LINES`` keeps lines: a fold leaves a section no memory reached as it was declared,
# so the what-if replay, which composes one agent dozens of times, renders each such
# section once (40 sections of 50 entries: 2.4 ms a render to 0.6).
_BLOCKS: dict[int, tuple[BackgroundSection, str]] = {}
_BLOCKS_MAX = 1 << 12


def _authored_block(section: BackgroundSection) -> str:
    found = _BLOCKS.get(id(section))
    if found is not None and found[0] is section:
        return found[1]
    block = f"### {collapse(section.title)}\n" + "".join(
        _authored_line(entry) for entry in section.entries
    )
    if len(_BLOCKS) >= _BLOCKS_MAX:
        _BLOCKS.clear()
    _BLOCKS[id(section)] = (section, block)
    return block


def add_background_section(out: FragmentBuilder, section: BackgroundSection) -> None:
    """Append one section's heading and entry lines (callers skip empty sections:
    a section without entries renders no heading).
    """
    if not any(entry.memory_ids for entry in section.entries):
        # Adjacent authored text is one fragment however it is appended.
        out.authored(_authored_block(section))
        return
    out.authored(f"### {collapse(section.title)}\n")
    for entry in section.entries:
        if entry.memory_ids:
            # Built afresh by each fold: nothing to look up.
            out.memory(entry_line(entry), entry.memory_ids)
        else:
            out.authored(_authored_line(entry))


def awareness_line(source: AwarenessSource) -> str:
    line = f"- **{collapse(source.name)}**"
    if source.description:
        line += f": {collapse(source.description)}"
    if source.access_method:
        line += f" (access: {collapse(source.access_method)})"
    return line + "\n"


def _prose(text: str) -> str:
    # Authored prose keeps its own line structure; only the edges are trimmed so the
    # "\n\n" section separator stays the single blank line between sections.
    return text.strip()


# A section as rendered, before its tokens are counted: name, source, fragments.
_Part = tuple[str, SectionSource, tuple[PromptFragment, ...]]


def _persona(config: AgentConfig) -> _Part | None:
    persona, tone = _prose(config.persona), _prose(config.tone)
    if not persona and not tone:
        return None
    parts = ["## Persona"]
    if persona:
        parts.append(persona)
    if tone:
        parts.append(f"\n### Tone\n{tone}")
    return _single("Persona", "role", "\n".join(parts))


def _mission(config: AgentConfig) -> _Part | None:
    objective = _prose(config.objective)
    if not objective:
        return None
    return _single("Mission", "role", f"## Mission\n### Objective\n{objective}")


def _capabilities(config: AgentConfig) -> _Part | None:
    if not config.capabilities:
        return None
    blocks = []
    for capability in config.capabilities:
        block = f"### {collapse(capability.name)}"
        if description := _prose(capability.description):
            block += f"\n{description}"
        blocks.append(block)
    return _single("Capabilities", "role", "## Capabilities\n" + "\n\n".join(blocks))


def _manual(config: AgentConfig) -> _Part | None:
    manual = _prose(config.manual)
    if not manual:
        return None
    return _single("Manual", "role", f"## Manual\n{manual}")


def _context(config: AgentConfig, background: Background, recall_text: str | None) -> _Part | None:
    has_entries = any(section.entries for section in background.sections)
    if not has_entries and not config.awareness and not recall_text:
        return None
    out = FragmentBuilder()
    out.authored(CONTEXT_HEADING)
    # Each block below starts a fragment of its own (the lens shows one card a block);
    # the blank line before a block stays with the block above, so no block's text
    # begins with a line break.
    for section in background.sections:
        if section.entries:
            out.authored("\n")
            out.boundary()
            add_background_section(out, section)
    if config.awareness:
        out.authored("\n")
        out.boundary()
        out.authored(AWARENESS_HEADING)
        out.authored("".join(awareness_line(source) for source in config.awareness))
    if recall_text:
        out.authored("\n")
        out.boundary()
        out.authored(recall_text if recall_text.endswith("\n") else recall_text + "\n")
    return ("Context", "instance", out.build())


def _single(name: str, source: SectionSource, text: str) -> _Part:
    return (name, source, (authored(text),))


def _parts(
    config: AgentConfig, background: Background | None, recall_text: str | None
) -> list[_Part]:
    composed = config.background if background is None else background
    candidates = (
        _persona(config),
        _mission(config),
        _capabilities(config),
        _manual(config),
        _context(config, composed, recall_text),
    )
    return [part for part in candidates if part is not None]


def render_sections(
    config: AgentConfig, background: Background | None = None, recall_text: str | None = None
) -> tuple[PromptSection, ...]:
    """The non-empty prompt sections, in order: Persona, Mission, Capabilities, Manual,
    Context. ``background`` is the composed Background (authored plus any memory
    overlay); it defaults to the authored one.
    """
    return tuple(prompt_section(*part) for part in _parts(config, background, recall_text))


def render_text(config: AgentConfig, background: Background | None = None) -> str:
    """The prompt ``render_sections`` gives, as its text alone: no section's tokens are
    counted (a diff of two prompts counts only the stretch that changed)."""
    return SECTION_SEPARATOR.join(
        "".join(fragment.text for fragment in fragments)
        for _name, _source, fragments in _parts(config, background, None)
    )
