"""The tokenizer (SPEC §6.1): one function for search indexing, querying and label keys.

NFKD-normalise, drop combining marks, casefold, then split into maximal runs of
alphanumeric characters. Linear in the text's length.
"""

from __future__ import annotations

import hashlib
import unicodedata


def tokenize(text: str) -> list[str]:
    """The searchable tokens of ``text``, in order (``"Café au lait!"`` → cafe, au, lait)."""
    decomposed = unicodedata.normalize("NFKD", text)
    bare = "".join(char for char in decomposed if not unicodedata.combining(char))
    tokens: list[str] = []
    current: list[str] = []
    for char in bare.casefold():
        if char.isalnum():
            current.append(char)
        elif current:
            tokens.append("".join(current))
            current = []
    if current:
        tokens.append("".join(current))
    return tokens


# Index terms are tokens, except that a token longer than this many code points is
# replaced by a fixed-length digest of itself: every backend bounds a term's size
# (PostgreSQL: 2 KB per lexeme), and equal tokens still give equal terms.
TERM_MAX = 64
_DIGEST_PREFIX = "h"


def term(token: str) -> str:
    """The index term of one token: the token itself, or a digest of a very long one."""
    if len(token) <= TERM_MAX:
        return token
    return _DIGEST_PREFIX + hashlib.sha256(token.encode()).hexdigest()


def terms(text: str) -> list[str]:
    """The index terms of ``text``, in order. Every term is a non-empty run of
    alphanumeric characters, so no backend can read one as query syntax.
    """
    return [term(token) for token in tokenize(text)]


def record_terms(content: str, label: str | None, tags: tuple[str, ...] | list[str]) -> list[str]:
    """What search reads of a record (SPEC §6.1): its content, label and tags."""
    return terms(" ".join([content, label or "", *tags]))
