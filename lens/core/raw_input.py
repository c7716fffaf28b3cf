"""Request text as it arrives, before any framework decodes it: which part of a path, a
query string or a form body cannot be stored.

Frameworks decode bytes that are not UTF-8 leniently (a replacement character, or the
bytes percent-encoded again), so a lone surrogate sent as ``%ED%A0%80`` would reach a
view as harmless-looking text. Reading the raw bytes strictly finds it, and NUL with it.
"""

from __future__ import annotations

import re
from urllib.parse import unquote_to_bytes

from lens.core.text import unstorable

# (where, why): ``where`` is ``path``, ``query.<name>``, ``form.<name>``...
Problem = tuple[str, str]

NOT_UTF8 = "text must be valid UTF-8 (no unpaired surrogates, no stray bytes)"

_PART_NAME = re.compile(rb'\bname="([^"]*)"', re.IGNORECASE)
_PART_FILENAME = re.compile(rb"\bfilename\*?=", re.IGNORECASE)


def bytes_problem(raw: bytes, charset: str = "utf-8") -> str | None:
    """Why ``raw`` (text in ``charset``) cannot be stored, or None."""
    try:
        text = raw.decode(charset)
    except (UnicodeDecodeError, LookupError):
        return NOT_UTF8
    return unstorable(text)


def path_problem(path: str) -> str | None:
    """Why a request path (as the server decoded it) cannot be stored, or None.

    Django percent-encodes again the bytes of a path that are not UTF-8, so the path is
    percent-decoded once more: no address of the product holds a literal ``%``.
    """
    if (why := unstorable(path)) is not None:
        return why
    return bytes_problem(unquote_to_bytes(path)) if "%" in path else None


def form_problem(raw: bytes, where: str, charset: str = "utf-8") -> Problem | None:
    """The first field of an ``application/x-www-form-urlencoded`` body (or a query
    string) whose name or value cannot be stored, or None."""
    for pair in raw.split(b"&"):
        if not pair:
            continue
        name, _, value = pair.partition(b"=")
        name_bytes = unquote_to_bytes(name.replace(b"+", b" "))
        if (why := bytes_problem(name_bytes, charset)) is not None:
            return where, why
        value_bytes = unquote_to_bytes(value.replace(b"+", b" "))
        if (why := bytes_problem(value_bytes, charset)) is not None:
            return f"{where}.{name_bytes.decode(charset, 'replace')}", why
    return None


def multipart_problem(body: bytes, boundary: bytes, charset: str = "utf-8") -> Problem | None:
    """The first text field of a ``multipart/form-data`` body whose name or value cannot
    be stored, or None. File parts are bytes, not text, and are left alone."""
    for part in body.split(b"--" + boundary):
        head, separator, content = part.partition(b"\r\n\r\n")
        if not separator or _PART_FILENAME.search(head):
            continue
        found = _PART_NAME.search(head)
        if found is None:
            continue  # not a field (a framework ignores it too)
        if (why := bytes_problem(found.group(1), charset)) is not None:
            return "form", why
        name = found.group(1).decode(charset)
        if (why := bytes_problem(content.removesuffix(b"\r\n"), charset)) is not None:
            return f"form.{name}", why
    return None
