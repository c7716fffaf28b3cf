"""Prompt-cache stability (SPEC §17), the pure half: a delivered prompt cut into the
parts a provider's cache sees change (each prompt section, and within Context each
Background section's block), how often each part changed between deliveries, an order
of Background sections that changes least early, and a prompt re-rendered in that order.

A part is keyed ``(section, background_section)``: ``("Persona", None)``,
``("Context", "prefs")`` for the Background section ``prefs``, and ``("Context", None)``
for the rest of Context (its heading, and what follows the Background: awareness).
The parts' texts, in order, join to the prompt's text exactly.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lens.core.background import Background, BackgroundSection
from lens.core.fragments import SECTION_SEPARATOR, FragmentBuilder
from lens.core.prompt import Prompt
from lens.core.render import CONTEXT_HEADING, add_background_section

CONTEXT = "Context"
Key = tuple[str, str | None]


@dataclass(frozen=True)
class Part:
    section: str  # the prompt section: Persona, Mission, Capabilities, Manual, Context
    background: str | None  # the Background section a block of Context renders
    text: str

    @property
    def key(self) -> Key:
        return (self.section, self.background)


def block_text(section: BackgroundSection) -> str:
    """A Background section's block as Context renders it (its heading and lines)."""
    out = FragmentBuilder()
    add_background_section(out, section)
    return "".join(fragment.text for fragment in out.build())


def parts_of(prompt: Prompt, background: Background) -> tuple[Part, ...]:
    """``prompt`` (rendered with the composed ``background``) cut into its parts, in
    order. A Context that does not read as heading, blocks, rest (it cannot, as the
    renderer writes it) stays one part, so the texts always join to the prompt."""
    parts: list[Part] = []
    for index, section in enumerate(prompt.sections):
        text = (SECTION_SEPARATOR if index else "") + section.text
        if section.name != CONTEXT:
            parts.append(Part(section.name, None, text))
            continue
        head = text[: len(text) - len(section.text)] + CONTEXT_HEADING
        blocks = [
            Part(CONTEXT, item.id, "\n" + block_text(item))
            for item in background.sections
            if item.entries
        ]
        expected = head + "".join(block.text for block in blocks)
        if not text.startswith(expected):
            parts.append(Part(CONTEXT, None, text))
            continue
        parts.append(Part(CONTEXT, None, head))
        parts.extend(blocks)
        if len(text) > len(expected):
            parts.append(Part(CONTEXT, None, text[len(expected) :]))
    return tuple(parts)


def texts_by_key(parts: Iterable[Part]) -> dict[Key, str]:
    """Each part's text by its key (Context's heading and its rest joined as one)."""
    found: dict[Key, str] = {}
    for part in parts:
        found[part.key] = found.get(part.key, "") + part.text
    return found


def changed_in(history: Sequence[Sequence[Part]]) -> Counter[Key]:
    """For each part, in how many deliveries of ``history`` (oldest first) its own text
    differs from the delivery before; a part that only moved has not changed, one that
    appears or goes has."""
    counts: Counter[Key] = Counter()
    previous: dict[Key, str] | None = None
    for parts in history:
        current = texts_by_key(parts)
        if previous is not None:
            for key in current.keys() | previous.keys():
                if current.get(key) != previous.get(key):
                    counts[key] += 1
        previous = current
    return counts


def suggested_order(current: Sequence[str], changes: Mapping[str, int]) -> list[str]:
    """Background sections most stable first: fewest changes, ties in the current
    order (a stable sort, so an order that is already the most stable is kept)."""
    place = {section: index for index, section in enumerate(current)}
    return sorted(current, key=lambda section: (changes.get(section, 0), place[section]))


def reordered(parts: Sequence[Part], order: Sequence[str]) -> str:
    """The prompt's text with its Background blocks in ``order`` (blocks it does not
    name keep their places after those it does, in their order); nothing else moves."""
    first = next((i for i, part in enumerate(parts) if part.background is not None), None)
    if first is None:
        return "".join(part.text for part in parts)
    blocks = [part for part in parts if part.background is not None]
    rank = {section: index for index, section in enumerate(order)}
    places = sorted(
        range(len(blocks)),
        key=lambda index: (rank.get(blocks[index].background or "", len(rank)), index),
    )
    ordered = [blocks[index] for index in places]
    before = "".join(part.text for part in parts[:first])
    after = "".join(part.text for part in parts[first + len(blocks) :])
    return before + "".join(part.text for part in ordered) + after


def parts_of_data(data: Mapping[str, Any]) -> tuple[Part, ...] | None:
    """``parts_of`` read straight from a stored composition's JSON (a dict), without
    validating it into models or rendering anything: each Background block is a fragment
    of its own that starts with its heading (the renderer's boundaries), in the order of
    the Background's sections with entries. None when the fragments do not read so."""
    blocks = [section["id"] for section in data["background"]["sections"] if section["entries"]]
    parts: list[Part] = []
    for index, section in enumerate(data["prompt"]["sections"]):
        texts = [fragment["text"] for fragment in section["fragments"]]
        separator = SECTION_SEPARATOR if index else ""
        if section["name"] != CONTEXT:
            parts.append(Part(section["name"], None, separator + "".join(texts)))
            continue
        if not texts or not texts[0].startswith(CONTEXT_HEADING):
            return None
        # A block is a fragment of its own that starts with its heading; the blank line
        # before it ends the fragment above, and belongs to the block in a part.
        text, starts, offset = separator + "".join(texts), [], len(separator)
        for n, fragment in enumerate(texts):
            if n and fragment.startswith("### "):
                starts.append(offset - 1)
            offset += len(fragment)
        cuts = starts[: len(blocks) + 1]  # after the last block, the rest is one part
        found = min(len(starts), len(blocks))
        keys: list[str | None] = [None, *blocks[:found], None]
        bounds = [0, *cuts, len(text)]
        for key, start, end in zip(keys, bounds, bounds[1:], strict=False):
            parts.append(Part(CONTEXT, key, text[start:end]))
        if found != len(blocks):
            return None
    return tuple(part for part in parts if part.text)
