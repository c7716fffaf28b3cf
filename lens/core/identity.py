"""When two spellings are one name, and which characters no name may hold. Pure.

Everything that decides whether two names are the same (memory labels and the keys they
become, authored entry keys, section titles against the reserved one, capability and
awareness names) compares through this module, so every path agrees:

- ``identity(text)``: the text as a reader takes it in. Format characters (Unicode
  category Cf: zero-width spaces and joiners, soft hyphens, bidi controls, tag
  characters) are invisible, so they are removed; NFKC folds compatibility forms
  (fullwidth ``ｎａｍｅ``, ligatures, superscripts) to what they look like; case folding
  makes ``Name`` and ``name`` one name.
- ``key_skeleton(text)``: the identity, then the confusable skeleton of Unicode
  Technical Standard #39 (ICU's ``SpoofChecker.getSkeleton``), so that look-alikes from
  other scripts (Cyrillic ``а`` for Latin ``a``) are one name too.
- ``ascii_lookalikes(text)``: a readable spelling of a key, for keys the system derives
  (memory labels): non-ASCII look-alikes become the ASCII letter or digit they are
  confusable with; ASCII stays as written.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import icu  # type: ignore[import-untyped]  # PyICU publishes no type stubs

# Bidirectional controls: they reorder what is displayed around them, so a name holding
# one can show as another name. Refused (not removed) wherever a name is given: the
# embeddings and overrides U+202A-U+202E, the isolates U+2066-U+2069, the marks
# U+200E, U+200F and the Arabic letter mark U+061C.
BIDI_CONTROLS = frozenset(
    "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
)
_BIDI_RE = re.compile(f"[{''.join(sorted(BIDI_CONTROLS))}]")


def bidi_control(text: str) -> str | None:
    """The first bidirectional control character in ``text``, or None."""
    found = _BIDI_RE.search(text)
    return found.group() if found else None


def bidi_problem(text: str, what: str) -> str | None:
    """Why ``text`` cannot be ``what`` (a field's name) for its bidi controls, or None."""
    if (control := bidi_control(text)) is None:
        return None
    return (
        f"{what} must not contain bidirectional control characters "
        f"(found U+{ord(control):04X} at position {text.index(control) + 1})"
    )


def without_format(text: str) -> str:
    """``text`` without its format characters (Unicode category Cf): they draw nothing."""
    if text.isascii():
        return text  # no ASCII character is Cf
    return "".join(char for char in text if unicodedata.category(char) != "Cf")


def identity(text: str) -> str:
    """What ``text`` reads as: without format characters, NFKC-normalised, case-folded.

    NFKC runs again after case folding because folding can undo it (``ǰ`` folds to
    ``j`` plus a combining caron, which NFKC composes back); the result is stable
    (``identity(identity(t)) == identity(t)``).
    """
    if text.isascii():
        return text.lower()  # NFKC leaves ASCII alone; casefold is lower() on it
    stripped = without_format(text)
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", stripped).casefold())
    # NFKC can turn a character into a format character (none in Unicode 15, but the
    # table is the interpreter's): strip again so the result never holds one.
    return without_format(folded)


# ICU's checker is immutable once built, and getSkeleton reads it only: one instance
# serves every thread.
_CHECKER = icu.SpoofChecker()
# The prototype table maps characters towards a prototype that may itself change under
# NFKC or case folding (``0`` to ``O``, ``β`` to ``ß``): a few rounds reach a fixed point.
_ROUNDS = 4


def _skeleton(text: str) -> str:
    # The ``type`` argument is ignored by ICU since 58: one table (UTS #39 "MA") serves.
    return str(_CHECKER.getSkeleton(0, text))


@lru_cache(maxsize=8192)
def _slow_key_skeleton(text: str) -> str:
    current = identity(text)
    for _ in range(_ROUNDS):
        following = identity(_skeleton(current))
        if following == current:
            break
        current = following
    return current


# An ASCII text's skeleton is the concatenation of its characters' (NFKC and NFD leave
# ASCII alone, and lower() and the prototype table work per character), so one table of
# 128 entries answers for keys derived from ASCII labels and content hashes without ICU.
_ASCII_SKELETONS = {code: _slow_key_skeleton(chr(code)) for code in range(128)}
# The few ASCII characters whose skeleton is not their lower case (``m``, ``0``, ``1``,
# ``|``, quotes...), with their skeletons: no skeleton holds one of them, so replacing
# them one after the other in any order gives the table's answer (a test pins this
# fast path to ICU's).
_ASCII_CHANGES = tuple(
    (chr(code), skeleton)
    for code, skeleton in _ASCII_SKELETONS.items()
    if skeleton != chr(code).lower() and not chr(code).isupper()
)


def key_skeleton(text: str) -> str:
    """The confusable skeleton of ``identity(text)``: equal for texts that look alike.

    Only for comparing: it is not meant to be read (``m`` becomes ``rn``, ``0`` becomes
    ``o``). Stable: ``key_skeleton(key_skeleton(t)) == key_skeleton(t)``.
    """
    return _cached_skeleton(text)


# A composition compares every authored key of its sections and every placed memory's
# key, thousands a request, and the same keys again on the next one: a hit costs about
# half the ASCII path (the 40-section agent's fold: 1.6 ms to 1.15). Skeletons are
# short; 65,536 of them hold a few megabytes.
@lru_cache(maxsize=1 << 16)
def _cached_skeleton(text: str) -> str:
    if text.isascii():
        lowered = text.lower()
        for char, skeleton in _ASCII_CHANGES:
            if char in lowered:
                lowered = lowered.replace(char, skeleton)
        return lowered
    return _slow_key_skeleton(text)


# Each skeleton an ASCII letter or digit has, mapped to that character; where several
# share one (``o`` and ``0``, ``l`` and ``1``), the letter is kept.
_ASCII_BY_SKELETON = {key_skeleton(char): char for char in "0123456789zyxwvutsrqponmlkjihgfedcba"}


@lru_cache(maxsize=4096)
def _ascii_lookalike(char: str) -> str:
    return _ASCII_BY_SKELETON.get(key_skeleton(char), char)


def ascii_lookalikes(text: str) -> str:
    """``text`` with each non-ASCII character that is confusable with an ASCII letter or
    digit replaced by it (Cyrillic ``nаme`` becomes ``name``; ``名前`` stays).

    For keys the system derives and shows: readable, and one spelling for every
    cross-script look-alike. ASCII is kept as written, so distinct ASCII spellings stay
    distinct keys (``v1`` is not ``vl``) and no key reads ``rn`` for ``m``.
    """
    if text.isascii():
        return text
    return "".join(char if char.isascii() else _ascii_lookalike(char) for char in text)
