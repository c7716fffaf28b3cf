"""The HTML of a prompt's fragments and of the drops panel, built in Python.

The one place pages build HTML outside templates. A big agent's prompt is a few hundred
fragments and its drops panel thousands of items; through the template engine each item
costs about 100 µs, and through ``format_html`` building the items measured about 8
times slower than these f-strings (5,000 drops: 128 ms against 16 ms). So every piece of
text is escaped here by ``esc`` (or ``exact``, which also keeps a CR), and
tests/web/pages/test_lens_markup.py checks hostile text against an HTML parser.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime, timedelta
from functools import lru_cache
from html import escape
from itertools import count
from typing import Any
from urllib.parse import quote

from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from lens.core.fragments import PromptFragment, PromptSection
from lens.core.outline import ContextBlock
from lens.core.token_counts import count_tokens
from memory.core.explain import Explanation
from memory.core.screening import Screen, highlight_spans, screen

CONTEXT = "Context"  # the prompt section the lens shows one card a block


# A memory fragment whose validity window closes within this is marked (SPEC §19.2).
EXPIRY_WARNING = timedelta(days=7)


def expires_in(valid_until: datetime, now: datetime) -> str:
    """ "expires in 3 days": how long a window has left, in the largest whole unit."""
    left = valid_until - now
    if left >= timedelta(days=1):
        days = left.days
        return f"expires in {days} day{'s' if days != 1 else ''}"
    if left >= timedelta(hours=1):
        hours = left.seconds // 3600
        return f"expires in {hours} hour{'s' if hours != 1 else ''}"
    minutes = max(1, left.seconds // 60)
    return f"expires in {minutes} minute{'s' if minutes != 1 else ''}"


def expiry_marks(windows: Mapping[str, datetime | None], now: datetime) -> dict[str, str]:
    """For each memory whose window closes within ``EXPIRY_WARNING`` of ``now`` (and
    has not closed), its "expires in …" words."""
    return {
        memory_id: expires_in(until, now)
        for memory_id, until in windows.items()
        if until is not None and now < until <= now + EXPIRY_WARNING
    }


def prompt_section_items(
    sections: Iterable[PromptSection],
    tip: Callable[[tuple[str, ...]], str],
    blocks: tuple[ContextBlock, ...] | None = None,
    expiring: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """What ``lens/_prompt_sections.html`` renders: each section with its sizes, its
    fragments as HTML and, for memory fragments, the tooltip ``tip`` gives for their
    ids. With ``blocks`` (the lens), the Context comes as one item per block instead.
    ``expiring``: the "expires in …" words of memories whose window closes soon.

    The fragments are built here rather than in a template loop: a big Background is
    tens of thousands of characters in a few hundred fragments.
    """
    tip_ids = count(1)
    items: list[dict[str, Any]] = []
    for section in sections:
        item: dict[str, Any] = {
            "section": section,
            "chars": f"{len(section.text):,}",
            "tokens": f"{section.tokens:,}",
        }
        if blocks is not None and section.name == CONTEXT:
            item["blocks"] = [_block_item(block, tip, tip_ids, expiring) for block in blocks]
        else:
            item.update(fragments_html(section.fragments, tip, tip_ids, expiring))
        items.append(item)
    return items


def _block_item(
    block: ContextBlock,
    tip: Callable[[tuple[str, ...]], str],
    tip_ids: Iterator[int],
    expiring: Mapping[str, str] | None,
) -> dict[str, Any]:
    text = block.text
    return {
        "block": block,
        "chars": f"{len(text):,}",
        "tokens": f"{count_tokens(text):,}",
        # The blank line before the next block ends this card's text; it stands in for
        # the card's bottom padding.
        "ends_blank": text.endswith("\n\n"),
        **fragments_html(block.fragments, tip, tip_ids, expiring),
    }


def fragments_html(
    fragments: Iterable[PromptFragment],
    tip: Callable[[tuple[str, ...]], str],
    tip_ids: Iterator[int],
    expiring: Mapping[str, str] | None = None,
) -> dict[str, SafeString]:
    """A ``<pre>``'s fragment elements (the contract hooks: ``data-source``, exact
    ``textContent``, ``data-memory-ids``), and the tooltips of its memory fragments.

    The tooltips are elements of their own, placed after every section (a fragment's
    ``textContent`` must stay exactly its text), tied to their fragment by
    ``aria-describedby`` so screen readers hear them; ``data-tip`` holds the same text
    for the CSS tooltip shown when scripts do not run.

    A memory fragment whose window closes soon (``expiring``, by memory id) says so in
    ``data-expires`` ("expires in 3 days", shown beside it by CSS) and in its tooltip:
    never in its text, which must stay the prompt's.
    """
    prefix = reverse("memory-list")  # detail pages live at <prefix><id>/
    parts = []
    tips = []
    for fragment in fragments:
        text = exact(fragment.text)
        if fragment.source != "memory":
            parts.append(f'<span class="frag" data-source="authored">{text}</span>')
            continue
        tip_id = f"tip-{next(tip_ids)}"
        words = tip(fragment.memory_ids)
        expires = ""
        soonest = _soonest(fragment.memory_ids, expiring)
        if soonest is not None:
            words = f"{words} · {soonest}" if words else soonest
            expires = f' data-expires="{esc(soonest)}"'
        words = esc(words)
        ids = esc(" ".join(fragment.memory_ids))
        first = esc(fragment.memory_ids[0])
        parts.append(
            f'<a class="frag frag-memory" data-source="memory" data-memory-ids="{ids}" '
            f'href="{prefix}{first}/" aria-describedby="{tip_id}" data-tip="{words}"'
            f"{expires}>{text}</a>"
        )
        tips.append(f'<span class="frag-tip" role="tooltip" id="{tip_id}" hidden>{words}</span>')
    # Every piece is escaped above.
    return {"html": mark_safe("".join(parts)), "tips": mark_safe("".join(tips))}  # noqa: S308


def _soonest(memory_ids: tuple[str, ...], expiring: Mapping[str, str] | None) -> str | None:
    """The words of the first of a fragment's memories that expires soon (a fragment of
    several memories: they corroborate one line, so the first said is enough)."""
    if not expiring:
        return None
    return next((expiring[mid] for mid in memory_ids if mid in expiring), None)


def exact(text: str) -> str:
    """HTML for ``text`` whose ``textContent`` is exactly ``text``: a raw CR would reach
    the reader as LF (HTML's input preprocessing), a character reference survives."""
    return esc(text).replace("\r", "&#13;")


_NEEDS_ESCAPE = re.compile(r"[&<>\"']")


def esc(text: str) -> str:
    # Most text needs no escaping; one C-level scan is cheaper than escaping it.
    return escape(text) if _NEEDS_ESCAPE.search(text) else text


SCREEN_WORDS = "Reads as an instruction to the model: the marked words give it an order."


def _marked(text: str, found: Screen) -> str:
    """``text`` escaped, each of the screen's signals in ``<mark>`` with its kind in a
    ``data-signal`` attribute, as the queue's and the memory page's marks have it."""
    kinds = {signal.start: signal.kind for signal in found.signals}
    out = []
    at = 0
    for piece, marked in highlight_spans(text, found.signals):
        out.append(
            f'<mark data-signal="{kinds.get(at, "")}">{esc(piece)}</mark>' if marked else esc(piece)
        )
        at += len(piece)
    return "".join(out)


@lru_cache(maxsize=4096)
def _screened(snippet: str) -> tuple[str, str]:
    """A waiting memory's snippet in HTML, its signals marked when it reads as an
    instruction, and the words that say so (else ""). The screen is pure and the same
    snippets come back on every view of a queue, so each is screened once: ~0.1 ms each,
    a hundred on a lens."""
    found = screen(snippet)
    if found.verdict != "instruction":
        return esc(snippet), ""
    return _marked(snippet, found), _SCREENED


_SCREENED = f'<p class="drop-screen" data-screen="instruction">{SCREEN_WORDS}</p>'


def drop_items(reason: str, explained: list[Explanation], briefs: dict[str, Any]) -> SafeString:
    """The drops panel's list items, built here rather than in a template loop: an
    agent can have thousands of drops, and the template engine costs ~100 µs per item.
    Each item links to its memory and says in words what keeps it out.
    """
    prefix = reverse("memory-list")  # detail pages live at <prefix><id>/
    queue = reverse("approvals") + "?agent="
    code = esc(reason)
    # Where a memory waits, say when it reads as an instruction (SPEC §19.4): screened
    # here from its snippet, pure and bounded, only for the waiting ones.
    waiting = reason == "awaiting-approval"
    items = []
    for explanation in explained:
        memory_id = explanation.memory_id
        brief = briefs.get(memory_id)
        shown = esc(memory_id)  # server-assigned [0-9a-z], escaped all the same
        screened = ""
        if brief is None:
            body = f"<code>{shown}</code>"
        else:
            label = f' <span class="label">{esc(brief["label"])}</span>' if brief["label"] else ""
            if waiting:
                snippet, screened = _screened(brief["snippet"])
            else:
                snippet = esc(brief["snippet"])
            body = (
                f'<span class="kind">{esc(brief["kind"])}</span>{label} '
                f'<span class="drop-text">{snippet}</span>'
            )
        place = explanation.place
        where = f'<p class="drop-place">{esc(place)}</p>' if place else ""
        why = []
        for piece in explanation.pieces:
            text = esc(piece.text)
            if piece.link is None:
                why.append(text)
            elif piece.link.kind == "memory":
                why.append(f'<a href="{prefix}{esc(piece.link.target)}/">{text}</a>')
            else:
                why.append(f'<a href="{queue}{quote(piece.link.target)}">{text}</a>')
        items.append(
            f'<li class="drop" data-memory-id="{shown}" data-drop-reason="{code}">'
            f'<a class="drop-memory" href="{prefix}{shown}/">{body}</a>'
            f'<p class="drop-why">{"".join(why)}</p>{screened}{where}</li>'
        )
    # Everything above is escaped. Building the items with format_html measured about 8
    # times slower (5,000 items: 128 ms vs 16 ms).
    return mark_safe("".join(items))  # noqa: S308  # every piece escaped above
