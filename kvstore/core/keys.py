"""Pure rules of the key/value store: keys, payload limits and version metadata."""

from __future__ import annotations

import re

KEY_MAX = 256
PAYLOAD_MAX_RUNES = 36_000
FIRST_LINE_MAX = 120
# Dot-separated segments of [A-Za-z0-9_:-]+: no '/', '\\', spaces, empty segments,
# leading or trailing dot, or '..'.
_KEY_RE = re.compile(r"[A-Za-z0-9_:-]+(?:\.[A-Za-z0-9_:-]+)*")
# Every character a key may hold.
KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_:-.")
# Every character a key may hold sorts below this one, so [prefix, prefix + PREFIX_END)
# is exactly the keys that start with prefix (in code-point order).
PREFIX_END = "\x7f"


def key_problem(key: str) -> str | None:
    """Why ``key`` is not a valid key, or None."""
    if not 1 <= len(key) <= KEY_MAX:
        return f"Keys are 1 to {KEY_MAX} characters; this one has {len(key)}."
    if not _KEY_RE.fullmatch(key):
        return (
            f"Key {key!r} must be dot-separated segments of letters, digits, '_', ':' and '-' "
            "(no '/', '\\', spaces, empty segments, or leading/trailing dots)."
        )
    return None


def runes(payload: str) -> int:
    """Code points, the unit of every size in the store."""
    return len(payload)


def first_line(payload: str) -> str:
    """The first line of the payload, at most FIRST_LINE_MAX code points."""
    lines = payload.splitlines()
    return lines[0][:FIRST_LINE_MAX] if lines else ""
