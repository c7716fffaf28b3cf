"""The tokenizer (SPEC §6.1): one function for search indexing, querying and label keys.

NFKD-normalise, drop combining marks, casefold, then split into maximal runs of
alphanumeric characters. Linear in the text's length.
"""

from __future__ import annotations

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
