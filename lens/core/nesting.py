"""JSON from outside, bounded in how deep it nests. Pure.

``json.loads`` recurses once per array or object it enters: 100,000 nested brackets end
it with a ``RecursionError`` (not a ``ValueError``, so not the error every reader of
input answers), and a document just shallow enough to parse still sends every recursive
reader after it (``lens.core.text.unstorable_path``, pydantic, ``json.dumps``) past
Python's limit. Nothing this product takes nests anywhere near ``MAX_DEPTH`` (an agent's
config, the deepest, is a few levels), so deeper input is refused as it is read, as
``TooDeep``: a ``ValueError``, which every reader of JSON input already answers with its
one-line refusal.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 64
_CONTAINERS = (dict, list, tuple)


class TooDeep(ValueError):
    def __init__(self) -> None:
        super().__init__(f"nests arrays and objects more than {MAX_DEPTH} deep")


def loads(data: str | bytes, **options: Any) -> Any:
    """``json.loads(data, **options)``, raising ``TooDeep`` for a document that nests
    deeper than ``MAX_DEPTH`` (and ``ValueError`` for one that is not JSON)."""
    try:
        value = json.loads(data, **options)
    except RecursionError:
        raise TooDeep from None
    if _openings(data) > MAX_DEPTH:
        check_depth(value)
    return value


def _openings(data: str | bytes) -> int:
    """How many ``[`` and ``{`` ``data`` holds: no document nests deeper (those in strings
    only add to it). Counted in C, it spares most lines the walk: a bundle's delivery,
    memory or audit line opens a handful."""
    if isinstance(data, str):
        return data.count("[") + data.count("{")
    return data.count(b"[") + data.count(b"{")


def check_depth(value: Any) -> None:
    """Raise ``TooDeep`` when ``value`` (parsed JSON) nests deeper than ``MAX_DEPTH``.

    A loop, not a recursion (it is what keeps the recursive readers safe) that holds
    only the arrays and objects still to look into: a string costs nothing, a flat list
    one type check an item."""
    stack: list[tuple[Any, int]] = [(value, 1)] if isinstance(value, _CONTAINERS) else []
    while stack:
        container, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise TooDeep
        items = container.values() if isinstance(container, dict) else container
        stack.extend((item, depth + 1) for item in items if isinstance(item, _CONTAINERS))
