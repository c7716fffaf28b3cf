"""The leading tokens two texts share, tokenising only around their first difference
(SPEC §17): a delivery whose previous prompt's ids are not at hand reads that prompt
back and tokenises a few of its lines, not all of it.
"""

from __future__ import annotations

from collections.abc import Sequence

from lens.core.token_counts import encode, token_lengths


def shared_token_prefix(before: str, text: str, ids: Sequence[int], chars: int) -> int:
    """How many leading token ids the encodings of ``before`` and ``text`` share, when
    ``ids`` are ``text``'s and the two share ``chars`` leading code points; only the
    lines around their first difference are tokenised, not ``before`` whole.

    Encoding splits a text into pieces (``lens.core.token_counts.PATTERN``) and
    encodes each alone, and no piece spans a line break followed by a character that
    is neither whitespace nor ``/``: the break ends a piece of whitespace, or one of
    punctuation that may only go on with more breaks and slashes. At such a line start
    the pieces before it were decided by the text up to it, and the pieces from it on
    are those of the rest alone (the pattern has no anchor and looks behind nothing).
    So up to a line start inside the shared text both encodings are ``ids``' first
    tokens, and from there to a line start past the difference each is the encoding of
    that stretch alone: the first differing token is in those stretches.
    """
    start = _line_start_before(text, chars)
    old = encode(before[start : _line_start_after(before, chars)])
    if (len(text) - start) * _SUM_PER_TOKENISED < start:
        # Little follows the line start: counting back from the end is cheaper than
        # summing the lengths of every token before it. Its tokens begin with the
        # window's, so they compare alike.
        new = encode(text[start:])
        head = len(ids) - len(new)
    else:
        head = _tokens_in(ids, len(text[:start].encode("utf-8", "surrogatepass")))
        new = encode(text[start : _line_start_after(text, chars)])
    shared = 0
    for a, b in zip(old, new, strict=False):
        if a != b:
            break
        shared += 1
    return head + shared


def _piece_starts_at(text: str, line_start: int) -> bool:
    """Whether a piece of ``text``'s encoding starts at ``line_start`` (just after a
    line break) whatever follows: its character is neither whitespace nor ``/``."""
    char = text[line_start]
    return not char.isspace() and char != "/"


def _line_start_before(text: str, chars: int) -> int:
    """The last such line start whose character is among the first ``chars``, or 0."""
    if chars < 2:
        return 0
    end = chars - 1
    while (newline := text.rfind("\n", 0, end)) >= 0:
        if _piece_starts_at(text, newline + 1):
            return newline + 1
        end = newline
    return 0


def _line_start_after(text: str, chars: int) -> int:
    """The first such line start past code point ``chars``, or the end of ``text``."""
    position = chars
    while (newline := text.find("\n", position)) >= 0 and newline + 1 < len(text):
        if _piece_starts_at(text, newline + 1):
            return newline + 1
        position = newline + 1
    return len(text)


_CHUNK = 4096
# Summing the byte lengths of the tokens of a stretch of text costs about an eighth of
# tokenising it (both measured on the 40-section agent's prompt).
_SUM_PER_TOKENISED = 8


def _tokens_in(ids: Sequence[int], size: int) -> int:
    """How many of the leading ``ids`` make the text's first ``size`` bytes (ids
    begin a piece there): their lengths summed a chunk at a time, in C."""
    lengths = token_lengths()
    count = total = 0
    while count < len(ids):
        chunk = ids[count : count + _CHUNK]
        length = sum(map(lengths.__getitem__, chunk))
        if total + length > size:
            break
        total, count = total + length, count + len(chunk)
    for token in ids[count:]:
        if total >= size:
            break
        total, count = total + lengths[token], count + 1
    if total != size:
        raise ValueError("the ids do not start a piece at that byte: not this text's")
    return count
