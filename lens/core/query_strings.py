"""Query strings with their values taken out, for what leaves the process (trace
attributes): a search's ``q`` carries what someone typed, so no value survives.

Parameter names survive when they look like names (``q``, ``as_of``, ``page[size]``
does not): they say which filters a request used. Anything else becomes ``REDACTED``
whole, so a bare ``?some words`` is not kept as a "name" either.
"""

from __future__ import annotations

import re

REDACTED = "REDACTED"
# A parameter name worth keeping: what an API's own names look like.
SAFE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")


def redact_query(query: str) -> str:
    """``q=some+words&limit=5`` → ``q=REDACTED&limit=REDACTED``."""
    parts: list[str] = []
    for part in query.split("&"):
        name, equals, _value = part.partition("=")
        if not part:
            parts.append(part)  # ``a=1&&b=2``: nothing there to hide
        elif not SAFE_NAME.fullmatch(name):
            parts.append(REDACTED)
        elif equals:
            parts.append(f"{name}={REDACTED}")
        else:
            parts.append(name)
    return "&".join(parts)


def redact_url(url: str) -> str:
    """A URL or request target with its query redacted (``redact_query``) and any
    fragment dropped; one without a query comes back as it was."""
    base, question, rest = url.partition("#")[0].partition("?")
    return f"{base}?{redact_query(rest)}" if question else base
