"""Text primitives shared by every renderer: line-break collapse and scalar formatting."""

from __future__ import annotations

import math
import re
from typing import Any

# Everything str.splitlines() breaks on. A run starting with one of these and
# continuing with any whitespace becomes one space, so interpolated data can never
# begin a line of the prompt.
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"

# Python's \s on str patterns is exactly str.isspace(); tests pin that equivalence.
_BREAK_RUN = re.compile(f"[{re.escape(LINE_BREAKS)}]\\s*")


def collapse(text: str) -> str:
    """Replace each line break (and the whitespace after it) by a single space."""
    if text.isprintable():
        # Every line break is unprintable (Cc, Zl or Zp), so printable text has none;
        # the check is one pass in C, where most keys and values would go through the
        # regex for nothing (a composition collapses thousands of them).
        return text
    return _BREAK_RUN.sub(" ", text)


def value_text(value: str | int | float | bool) -> str:
    """The text a Background value renders as.

    Booleans are ``true``/``false``; numbers use the shortest decimal that round-trips
    (``3``, ``2.5``), so ``3.0`` and ``3`` read the same to the model.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer() and abs(value) < 1e16:
            return str(int(value))
        return repr(value)
    return value


def normalise_line_breaks(text: str) -> str:
    """``text`` with every CR LF pair and every lone CR turned into LF.

    Browsers submit a textarea's line breaks as CR LF (the HTML form-submission rule)
    whatever the page showed, so text stored as typed in a form needs this to read as
    it did: a form saved unchanged then changes nothing.
    """
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def unstorable(text: str) -> str | None:
    """Why ``text`` cannot be stored, or None. No database stores U+0000 alike (PostgreSQL
    refuses it), and an unpaired surrogate (JSON allows "\\ud800") has no UTF-8 form.
    """
    found = _UNSTORABLE.search(text)
    if found is None:
        return None
    if found.group() == "\x00":
        return "text must not contain NUL (U+0000) characters"
    return "text must not contain unpaired surrogates (U+D800 to U+DFFF)"


def unstorable_path(
    value: Any, path: tuple[str | int, ...] = ()
) -> tuple[tuple[str | int, ...], str] | None:
    """Where the first unstorable text in parsed JSON (strings, keys, lists, objects) is,
    and why, or None: every input channel refuses it alike."""
    if isinstance(value, str):
        return (path, why) if (why := unstorable(value)) else None
    if isinstance(value, dict | list | tuple):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            if isinstance(key, str) and (why := unstorable(key)):
                return (*path, key), why
            if (found := unstorable_path(item, (*path, key))) is not None:
                return found
    return None
