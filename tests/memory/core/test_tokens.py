"""The tokenizer (SPEC §6.1): NFKD, drop combining marks, casefold, split into maximal
runs of ``str.isalnum`` characters. One function for indexing, querying and label keys.
"""

from __future__ import annotations

import time
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lens.core.identity import ascii_lookalikes, without_format
from memory.core.presets import slug
from memory.core.tokenizer import tokenize
from tests.samples import fastest

# --- whole tokens ----------------------------------------------------------------------


def test_a_word_is_one_whole_token() -> None:
    assert tokenize("name") == ["name"]


def test_a_token_never_matches_part_of_a_word() -> None:
    assert "am" not in tokenize("name")
    assert "prefer" not in tokenize("Prefers dark roast")


def test_tokens_come_in_text_order_with_repeats_kept() -> None:
    assert tokenize("tea, then more tea") == ["tea", "then", "more", "tea"]


@pytest.mark.parametrize("text", ["", " ", "   \t\n", "!?.,;", "😀🎉"])
def test_text_without_letters_or_digits_has_no_tokens(text: str) -> None:
    assert tokenize(text) == []


# --- case and diacritics fold; nothing is stemmed --------------------------------------


@pytest.mark.parametrize("text", ["Café", "CAFÉ", "cafe", "cafe\u0301", "ＣＡＦＥ"])
def test_case_diacritics_and_width_fold_away(text: str) -> None:
    assert tokenize(text) == ["cafe"]


def test_casefold_is_stronger_than_lower() -> None:
    assert tokenize("Straße") == ["strasse"]
    assert tokenize("STRASSE") == ["strasse"]


def test_compatibility_characters_decompose() -> None:
    assert tokenize("ﬁle") == ["file"]  # the fi ligature
    assert tokenize("x²") == ["x2"]


def test_nothing_is_stemmed() -> None:
    assert tokenize("Prefers") == ["prefers"]
    assert tokenize("running dogs") == ["running", "dogs"]


# --- punctuation and query syntax separate tokens --------------------------------------


@pytest.mark.parametrize(
    "separator", ['"', "'", "*", "-", ":", "^", "(", ")", "%", "_", "\\", "/", "+", ".", "|"]
)
def test_punctuation_and_query_syntax_are_separators(separator: str) -> None:
    assert tokenize(f"dark{separator}roast") == ["dark", "roast"]
    assert tokenize(f"{separator}dark{separator}") == ["dark"]


def test_query_syntax_never_survives_into_a_token() -> None:
    assert tokenize('"tea" OR name:* -coffee^2 (NEAR) 100% snake_case') == [
        "tea",
        "or",
        "name",
        "coffee",
        "2",
        "near",
        "100",
        "snake",
        "case",
    ]


# --- scripts, emoji and digits ---------------------------------------------------------


def test_greek_folds_case_and_accents() -> None:
    assert tokenize("Ωμέγα ΑΛΦΑ") == ["ωμεγα", "αλφα"]


def test_cyrillic_is_tokenized_and_casefolded() -> None:
    assert tokenize("Привет, Мир!") == ["привет", "мир"]


def test_cjk_runs_are_tokens_split_on_spaces_and_punctuation() -> None:
    assert tokenize("東京 大阪、京都") == ["東京", "大阪", "京都"]


def test_an_emoji_between_words_separates_them() -> None:
    assert tokenize("hi😀there") == ["hi", "there"]
    assert tokenize("tea☕coffee") == ["tea", "coffee"]


def test_digits_are_tokens_and_join_letters() -> None:
    assert tokenize("route66 v2 2024-05-01") == ["route66", "v2", "2024", "05", "01"]
    assert tokenize("４２") == ["42"]  # full-width digits
    assert tokenize("½") == ["1", "2"]  # one, fraction slash, two


# --- properties ------------------------------------------------------------------------


@given(st.text())
def test_every_token_is_non_empty_and_alphanumeric(text: str) -> None:
    for token in tokenize(text):
        assert token
        assert all(char.isalnum() for char in token)


@given(st.text())
def test_no_token_holds_a_combining_mark_or_an_upper_case_letter(text: str) -> None:
    for token in tokenize(text):
        assert not any(unicodedata.combining(char) for char in token)
        assert token == token.casefold()


@given(st.text())
def test_tokenizing_tokens_again_changes_nothing(text: str) -> None:
    tokens = tokenize(text)
    assert tokenize(" ".join(tokens)) == tokens


@given(st.lists(st.text(), max_size=5))
def test_tokens_of_joined_texts_are_the_tokens_of_each_text(texts: list[str]) -> None:
    assert tokenize(" ".join(texts)) == [token for text in texts for token in tokenize(text)]


@given(st.text())
def test_a_label_slug_is_its_tokens_joined_by_hyphens(text: str) -> None:
    # Format characters go first (a zero-width space is no word break), and non-ASCII
    # look-alikes are spelt in ASCII (tests/memory/test_lookalike_labels.py).
    assert slug(text) == "-".join(ascii_lookalikes(t) for t in tokenize(without_format(text)))
    if text.isascii():
        assert slug(text) == "-".join(tokenize(text))


def test_labels_that_differ_in_case_spacing_and_accents_share_one_slug() -> None:
    assert slug("Name") == slug("name ") == slug(" NAME") == "name"
    assert slug("Favourite Café") == slug("favourite-cafe") == "favourite-cafe"


# --- bounded work ----------------------------------------------------------------------


# One code point that decomposes into eighteen: four Arabic words.
SALLALLAHOU = [
    "\u0635\u0644\u0649",
    "\u0627\u0644\u0644\u0647",
    "\u0639\u0644\u064a\u0647",
    "\u0648\u0633\u0644\u0645",
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a\u0301" * 5000, ["a" * 5000]),
        ("a-" * 5000, ["a"] * 5000),
        ("\u0301" * 10_000, []),
        ("é😀" * 5000, ["e"] * 5000),
        ("\ufdfa " * 5000, SALLALLAHOU * 5000),
        ("x" * 10_000, ["x" * 10_000]),
    ],
    ids=["combining", "alternating", "only-marks", "emoji", "expanding", "one-run"],
)
def test_ten_thousand_adversarial_code_points_tokenize_in_well_under_a_second(
    text: str, expected: list[str]
) -> None:
    assert len(text) == 10_000
    started = time.perf_counter()
    tokens = tokenize(text)
    elapsed = time.perf_counter() - started
    assert elapsed < 0.5, f"{elapsed:.3f}s"
    assert tokens == expected


def reference_tokens(text: str) -> list[str]:
    """SPEC §6.1 spelt out one character at a time, as the definition reads."""
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


@given(st.text() | st.text(alphabet=st.characters(codec="ascii")))
def test_the_tokenizer_is_the_definition(text: str) -> None:
    assert tokenize(text) == reference_tokens(text)


@pytest.mark.parametrize("char", ["_", "\u00b2", "\u2460", "\u0660", "\u3007", "\u00aa", "ǅ"])
def test_underscores_split_and_every_kind_of_alphanumeric_joins(char: str) -> None:
    text = f"a{char}b {char}"
    assert tokenize(text) == reference_tokens(text)


def test_a_long_query_tokenizes_twice_as_fast_as_character_by_character() -> None:
    # A 4,000-character query of common words (search's worst case): measured as a ratio
    # against the definition in the same run, each the fastest of several interleaved
    # rounds, so a busy machine cannot fail it (alone the ratio is about 4.5).
    text = ("preference coffee morning " * 160)[:4000]
    slow = fast = float("inf")
    for _ in range(7):
        _, taken = fastest(lambda: reference_tokens(text), runs=1)
        slow = min(slow, taken)
        _, taken = fastest(lambda: tokenize(text), runs=1)
        fast = min(fast, taken)
    assert fast * 2 < slow, (fast, slow)
