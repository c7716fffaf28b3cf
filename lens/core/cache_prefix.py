"""How much of a prompt a provider can serve from its cache (SPEC §17): the prefix it
shares with the prompt delivered before it, and where the two first differ.

Providers cache a prompt's longest unchanged prefix, so the figures are counted from the
start: the leading ``o200k_base`` token ids the two prompts share (tokens near the first
change can merge differently, so this is never more than the tokens of the shared text),
the leading code points they share, and the section of *this* prompt holding the first
code point that differs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lens.core.background import Background
from lens.core.fragments import SECTION_SEPARATOR, PromptSection
from lens.core.outline import BlocksMismatch, context_blocks
from lens.core.token_prefix import common_prefix, shared_token_prefix

CONTEXT = "Context"


@dataclass(frozen=True, slots=True)
class FirstChange:
    """Where this prompt first differs from the one before: a prompt section's name and,
    inside the Context, the id of the Background section holding it (None elsewhere)."""

    section: str
    background_section: str | None = None

    def as_json(self) -> dict[str, str | None]:
        return {"section": self.section, "background_section": self.background_section}


@dataclass(frozen=True, slots=True)
class CachePrefix:
    """A delivery's figures (SPEC §17); ``first_change`` is None when the prompt is the
    previous one exactly, or there was none (then both prefixes are 0)."""

    prefix_tokens: int
    prefix_chars: int
    total_tokens: int
    first_change: FirstChange | None

    def as_json(self) -> dict[str, Any]:
        return {
            "prefix_tokens": self.prefix_tokens,
            "prefix_chars": self.prefix_chars,
            "total_tokens": self.total_tokens,
            "first_change": None if self.first_change is None else self.first_change.as_json(),
        }


def first_change_at(
    sections: Sequence[PromptSection], background: Background, offset: int
) -> FirstChange:
    """The section of the prompt made of ``sections`` (joined by the separator) that
    holds code point ``offset``.

    A separator belongs to the section before it, as the blank line before a Background
    block belongs to the block above (it ends what came before). An offset at or past
    the end (this prompt stops where the previous one went on) is placed in the last
    section: that is where this prompt changed.
    """
    if not sections:
        raise ValueError("a prompt without sections has no first change")
    start = 0
    for index, section in enumerate(sections):
        text = section.text
        last = index == len(sections) - 1
        end = start + len(text) + (0 if last else len(SECTION_SEPARATOR))
        if offset < end or last:
            inside = min(offset - start, len(text) - 1)
            if section.name != CONTEXT:
                return FirstChange(section.name)
            return FirstChange(section.name, _background_section(section, background, inside))
        start = end
    raise AssertionError("unreachable: the last section takes every offset")


def _background_section(context: PromptSection, background: Background, offset: int) -> str | None:
    """The id of the Background section whose block holds ``offset`` of the Context's
    text; None for the ``## Context`` head, the information sources and the recall."""
    try:
        blocks = context_blocks(context, background)
    except BlocksMismatch:
        # Not this Background's rendering (an older composition's shape): say Context.
        return None
    start = 0
    for block in blocks:
        end = start + len(block.text)
        if offset < end:
            if block.kind == "background" and block.section is not None:
                return block.section.id
            return None
        start = end
    return None


def cache_prefix(
    previous: tuple[str, Sequence[int] | None] | None,
    text: str,
    ids: Sequence[int],
    sections: Sequence[PromptSection],
    background: Background,
) -> CachePrefix:
    """The figures of a delivery whose prompt is ``text`` (the sections joined), its
    token ``ids``, against ``previous``: the previous delivery's prompt and its ids
    (None when they are not at hand: then only the lines around the first difference
    are tokenised), or None for an agent's first delivery. ``background`` is the
    composed Background the Context was rendered from. An empty prompt has no section
    to name: its change is None too (and its figures 0).
    """
    total = len(ids)
    if previous is None:
        return CachePrefix(0, 0, total, None)
    before, before_ids = previous
    chars = common_prefix(before, text)
    if chars == len(before) == len(text):
        return CachePrefix(total, chars, total, None)
    if not sections:
        return CachePrefix(0, 0, total, None)
    if before_ids is None:
        tokens = shared_token_prefix(before, text, ids, chars)
    elif type(before_ids) is not type(ids):
        # A view and a list never compare equal: compare them as lists.
        tokens = common_prefix(list(before_ids), list(ids))
    else:
        tokens = common_prefix(before_ids, ids)
    return CachePrefix(
        prefix_tokens=tokens,
        prefix_chars=chars,
        total_tokens=total,
        first_change=first_change_at(sections, background, chars),
    )
