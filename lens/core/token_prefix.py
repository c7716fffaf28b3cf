"""The leading tokens two texts share (SPEC §17), counted without tokenising both
whole: a delivery tokenises only the lines around its first difference from the prompt
before (``shared_token_prefix``), and the stability card cuts many prompts at the same
safe line starts and tokenises each distinct segment once (``segments``,
``shared_tokens``). A revision diff counts two prompts' tokens the same way
(``token_totals``). All rest on one rule, ``_SAFE_CUT``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from lens.core.token_counts import count_tokens, encode, keep_count, known_count, token_lengths

# Slices compared at once before narrowing down: long enough that a long shared prefix
# is a few C-level comparisons, short enough that a change near the start costs little.
_STRIDE = 4096


class _Sliceable(Protocol):
    def __len__(self) -> int: ...
    def __getitem__(self, index: slice, /) -> Any: ...


_S = TypeVar("_S", bound=_Sliceable)


# A line start where a text's o200k tokenisation can be cut without changing it: after
# a line break, before a character that no piece carries across the break (neither
# whitespace nor ``/``, which a punctuation piece may swallow with the break). Both
# ways of counting a shared prefix below rest on this one rule.
_SAFE_CUT = re.compile(r"(?<=\n)(?=[^\s/])")


def segments(text: str) -> list[str]:
    """``text`` cut at its safe line starts: tokenising each and joining the ids gives
    the ids of the whole (no piece crosses such a cut)."""
    return _SAFE_CUT.split(text)


def heading_segments(text: str) -> list[str]:
    """``text`` cut at the safe line starts that begin a heading (``#`` is neither
    whitespace nor ``/``): fewer, longer pieces than ``segments``, each a run of whole
    segments, so they keep its property. One per prompt section and Background block
    rather than one per line, so many prompts built of the same blocks are cut, counted
    and compared block by block (what-if). A plain split: a look-behind pattern takes
    twenty times as long over a long prompt."""
    pieces = text.split("\n#")
    if len(pieces) == 1:
        return pieces
    last = len(pieces) - 1
    return [
        ("#" if i else "") + piece + ("\n" if i < last else "") for i, piece in enumerate(pieces)
    ]


def shared_tokens(a: Sequence[str], b: Sequence[str], ids: Callable[[str], Sequence[int]]) -> int:
    """The leading token ids two texts share, from their ``segments``: equal leading
    segments count whole (their ids are equal), then the first pair that differs is
    compared id by id. ``ids`` tokenises one segment (memoised by the caller), so many
    prompts that share most of their segments tokenise each distinct one once."""
    shared = 0
    for left, right in zip(a, b, strict=False):
        if left == right:
            shared += len(ids(left))
            continue
        return shared + common_prefix(ids(left), ids(right))
    return shared


def common_prefix(a: _S, b: _S) -> int:
    """How many leading items ``a`` and ``b`` share (strings, bytes, lists, views).

    Equal slices are compared in C: strides first, then halving the first stride that
    differs, so a shared prefix of n items costs n/4096 + 12 comparisons, not n steps.
    """
    n = min(len(a), len(b))
    low = 0
    while low < n:
        high = min(n, low + _STRIDE)
        if a[low:high] == b[low:high]:
            low = high
            continue
        # a[:low] == b[:low], and they differ somewhere in [low, high).
        while high - low > 1:
            middle = (low + high) // 2
            if a[low:middle] == b[low:middle]:
                low = middle
            else:
                high = middle
        return low
    return n


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
    return head + common_prefix(old, new)


def token_totals(before: str, after: str) -> tuple[int, int]:
    """How many tokens ``before`` and ``after`` are, tokenising at most one of them
    whole: when one is counted already (``known_count``) the other is not tokenised
    whole either, only the stretch where the two differ.

    That stretch runs from a safe line start before their first difference to one past
    their last, found in the shared text on either side, so it is a safe cut in both:
    the tokens before it and after it are the same in both texts (``segments``), and
    the counts differ by the tokens of the two stretches alone. The count found so is
    kept, so the next diff that shows the text finds it.
    """
    if before == after:
        n = count_tokens(before)
        return n, n
    n_before, n_after = known_count(before), known_count(after)
    if n_before is None and n_after is None:
        n_after = count_tokens(after)
    if n_after is None:
        assert n_before is not None
        n_after = n_before + _stretch_difference(before, after)
        keep_count(after, n_after)
    elif n_before is None:
        n_before = n_after + _stretch_difference(after, before)
        keep_count(before, n_before)
    return n_before, n_after


def _stretch_difference(known: str, other: str) -> int:
    """``other``'s tokens less ``known``'s, from the stretch where they differ."""
    shortest = min(len(known), len(other))
    head = common_prefix(known, other)
    tail = min(common_prefix(known[::-1], other[::-1]), shortest - head)
    start = _line_start_before(known, head)  # in the shared head, so a cut in both
    end = _line_start_after(known, len(known) - tail)  # in the shared tail, likewise
    other_end = end - len(known) + len(other)
    if (end - start) + (other_end - start) >= len(other):
        # The texts differ almost throughout: counting ``other`` whole is cheaper.
        return count_tokens(other) - count_tokens(known)
    return len(encode(other[start:other_end])) - len(encode(known[start:end]))


def _piece_starts_at(text: str, line_start: int) -> bool:
    """Whether ``line_start`` (just after a line break) is a safe cut: ``_SAFE_CUT``."""
    return _SAFE_CUT.match(text, line_start) is not None


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
