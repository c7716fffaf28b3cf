"""Template filters for showing prompt text exactly."""

from __future__ import annotations

import re

from django import template
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString, mark_safe

from memory.core.screening import Screen, highlight_spans, screen

register = template.Library()


@register.filter
def exact_text(value: str) -> SafeString:
    """HTML-escape ``value`` so that the element's ``textContent`` is exactly ``value``.

    HTML parsing turns every raw CR (and CRLF) into LF before it reads the markup, so a
    prompt with CRLF line endings (which admin textareas submit) would reach the reader
    and the "Copy prompt" button altered; a character reference survives that step.
    """
    # One pass; format_html_join over the lines measured ~100 times slower on CRLF text.
    return mark_safe(str(conditional_escape(value)).replace("\r", "&#13;"))  # noqa: S308  # escaped first


_WORD_TAGS = {"delete": ("<del>", "</del>"), "insert": ("<ins>", "</ins>"), "equal": ("", "")}


@register.filter
def word_diff_html(parts: list[tuple[str, str]]) -> SafeString:
    """A word diff (``lens.core.diffs.word_diff``) as markup: deleted runs in ``<del>``,
    inserted ones in ``<ins>``, runs separated by a space. Built here rather than in a
    template loop: a worst-case diff has thousands of runs, and the template engine
    spends microseconds on each (a page of 50 such rows took most of its time there)."""
    out = []
    for op, words in parts:
        start, end = _WORD_TAGS[op]
        out.append(f"{start}{conditional_escape(words)}{end}")
    return mark_safe(" ".join(out))  # noqa: S308  # every run escaped above


# How ``lens.actors.Actor.for_token`` labels a token: its prefix, then its name if any.
_TOKEN_LABEL = re.compile(r"token (?P<prefix>\S+)…(?: \((?P<name>.+)\))?", re.DOTALL)


@register.filter
def actor(label: str | None) -> SafeString:
    """Who did something, in a row: a token's label (``token cl_OrAbRfD… (demo seed)``)
    shows as its name after a small "token" mark, the whole label in its title, so rows
    stay narrow; a person's name, ``system`` and any other label as they are. Labels are
    at most 200 characters (``lens.actors.LABEL_MAX``), so the match is bounded."""
    text = label or ""
    found = _TOKEN_LABEL.fullmatch(text)
    if found is None:
        return conditional_escape(text)
    shown = found["name"] or f"{found['prefix']}…"
    return format_html(
        '<span class="actor-token" title="{}"><span class="actor-kind">token</span> {}</span>',
        text,
        shown,
    )


@register.filter
def instruction_screen(content: str) -> Screen | None:
    """The screen of ``content`` (SPEC §19.4) when it reads as an instruction to the
    model, else None. Computed at display time: pure, and bounded by a save's length."""
    found = screen(content)
    return found if found.verdict == "instruction" else None


@register.filter
def instruction_marks(content: str, found: Screen) -> SafeString:
    """``content`` escaped, each of the screen's signals in ``<mark>`` (its kind in a
    ``data-signal`` attribute): the words that make it read as an instruction."""
    return mark_safe(signal_marks(content, found))  # noqa: S308  # escaped in signal_marks


def signal_marks(content: str, found: Screen) -> str:
    out = []
    kinds = {signal.start: signal.kind for signal in found.signals}
    at = 0
    for piece, marked in highlight_spans(content, found.signals):
        text = str(conditional_escape(piece)).replace("\r", "&#13;")
        if marked:
            out.append(f'<mark data-signal="{kinds.get(at, "")}">{text}</mark>')
        else:
            out.append(text)
        at += len(piece)
    return "".join(out)
