"""The Context section in blocks, and an outline of the Background for people reading it.

A big agent's Context is tens of thousands of characters; the lens shows it as one card
per Background section. The blocks come from the section's own fragments (rendering
starts a fragment at each block), so the cards join back to exactly the section's text.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from lens.core.background import Background, BackgroundSection, Tier
from lens.core.fragments import PromptFragment, PromptSection
from lens.core.render import AWARENESS_HEADING, CONTEXT_HEADING
from lens.core.text import collapse
from lens.core.token_counts import count_tokens

BlockKind = Literal["head", "background", "awareness", "recall"]


class BlocksMismatch(ValueError):
    """The fragments are not the rendering of this Background (a programming error)."""


@dataclass(frozen=True, slots=True)
class ContextBlock:
    kind: BlockKind
    fragments: tuple[PromptFragment, ...]
    # The composed Background section a "background" block shows; None for the others.
    section: BackgroundSection | None = None

    @property
    def text(self) -> str:
        return "".join(fragment.text for fragment in self.fragments)

    @property
    def memory_ids(self) -> tuple[str, ...]:
        """The memories in this block, each once, in prompt order."""
        return tuple(dict.fromkeys(mid for f in self.fragments for mid in f.memory_ids))


def heading(section: BackgroundSection) -> str:
    return f"### {collapse(section.title)}\n"


def context_blocks(
    context: PromptSection, background: Background, recall_text: str | None = None
) -> tuple[ContextBlock, ...]:
    """Split the rendered Context of ``background`` (the composed one) into its blocks:
    the ``## Context`` head, one per Background section with entries, the awareness list,
    and the recalled memories when ``recall_text`` was rendered too.

    Rendering starts each block with a fragment whose text begins with its heading, and
    no other fragment can begin with ``### `` (entry lines begin with ``- **``, a blank
    line with a line break): so each block is found at its heading, in declaration order.
    """
    fragments = list(context.fragments)
    recall: ContextBlock | None = None
    if recall_text:
        # Recall text is free-form (it may hold any heading): it is the last fragment.
        expected = recall_text if recall_text.endswith("\n") else recall_text + "\n"
        if not fragments or fragments[-1].text != expected:
            raise BlocksMismatch("the Context does not end with the recalled memories")
        recall = ContextBlock("recall", (fragments.pop(),))
    if not fragments or not fragments[0].text.startswith(CONTEXT_HEADING):
        raise BlocksMismatch("the Context does not start with its heading")

    shown = [section for section in background.sections if section.entries]
    starts = [(section, heading(section)) for section in shown]
    blocks: list[ContextBlock] = []
    kind: BlockKind = "head"
    section: BackgroundSection | None = None
    current: list[PromptFragment] = [fragments[0]]
    for fragment in fragments[1:]:
        if starts and fragment.text.startswith(starts[0][1]):
            blocks.append(ContextBlock(kind, tuple(current), section))
            kind, section = "background", starts.pop(0)[0]
            current = [fragment]
        elif not starts and kind != "awareness" and fragment.text.startswith(AWARENESS_HEADING):
            blocks.append(ContextBlock(kind, tuple(current), section))
            kind, section = "awareness", None
            current = [fragment]
        else:
            current.append(fragment)
    blocks.append(ContextBlock(kind, tuple(current), section))
    if starts:
        raise BlocksMismatch(f"no block for Background section {starts[0][0].id!r}")
    if recall is not None:
        blocks.append(recall)
    return tuple(blocks)


@dataclass(frozen=True, slots=True)
class OutlineItem:
    """One declared Background section as the lens lists it."""

    id: str
    title: str
    tier: Tier
    entries: int
    memory_entries: int  # entries that came from memories
    memories: int  # distinct memories behind those entries
    # The section's block in the prompt; None when it has no entries (nothing rendered).
    block: ContextBlock | None
    chars: int
    tokens: int

    @property
    def rendered(self) -> bool:
        return self.block is not None

    @property
    def anchor(self) -> str:
        # Section ids are [a-z0-9][a-z0-9_-]*: safe in an HTML id and a URL fragment.
        return f"section-{self.id}"


def outline(background: Background, blocks: Iterable[ContextBlock]) -> tuple[OutlineItem, ...]:
    """Every declared section of the composed ``background``, in declaration order, with
    its sizes (characters and o200k_base tokens of its block, blank line included)."""
    by_id = {
        block.section.id: block
        for block in blocks
        if block.kind == "background" and block.section is not None
    }
    items = []
    for section in background.sections:
        block = by_id.get(section.id)
        text = block.text if block is not None else ""
        items.append(
            OutlineItem(
                id=section.id,
                title=section.title,
                tier=section.promotion,
                entries=len(section.entries),
                memory_entries=sum(1 for entry in section.entries if entry.memory_ids),
                memories=len(block.memory_ids) if block is not None else 0,
                block=block,
                chars=len(text),
                tokens=count_tokens(text) if text else 0,
            )
        )
    return tuple(items)
