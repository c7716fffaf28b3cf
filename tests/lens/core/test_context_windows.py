"""Context windows (lens/core/context_windows.py): which window a model name has, the
operator's table, and when a prompt's share of its window is a warning or an alarm."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lens.core.context_windows import (
    ALARM_PERCENT,
    DEFAULT_WINDOWS,
    WARNING_PERCENT,
    WINDOW_MAX,
    ContextFigure,
    context_figure,
    merged_windows,
    model_problem,
    parse_windows,
    window_for,
)

# --- looking a model up ---------------------------------------------------------------


def test_an_exact_name_has_its_own_window() -> None:
    assert window_for("gpt-4o", DEFAULT_WINDOWS) == 128_000
    assert window_for("gpt-4.1", DEFAULT_WINDOWS) == 1_047_576
    assert window_for("gemini-1.5-pro", DEFAULT_WINDOWS) == 2_097_152
    assert window_for("claude-sonnet-4", DEFAULT_WINDOWS) == 200_000


def test_a_dated_snapshot_finds_its_family_by_the_longest_prefix() -> None:
    windows = {"gpt-4o": 128_000, "gpt-4o-mini": 64_000, "gpt": 8_000}
    assert window_for("gpt-4o-2024-08-06", windows) == 128_000
    # Not ``gpt-4o``: the longer name it starts with wins.
    assert window_for("gpt-4o-mini-2024-07-18", windows) == 64_000
    assert window_for("gpt-3.5-turbo", windows) == 8_000
    assert window_for("claude-sonnet-4-20250514", DEFAULT_WINDOWS) == 200_000
    assert window_for("claude-3-5-haiku-20241022", DEFAULT_WINDOWS) == 200_000
    assert window_for("gemini-2.5-flash-preview-05-20", DEFAULT_WINDOWS) == 1_048_576


def test_an_exact_name_beats_a_longer_prefix_match() -> None:
    windows = {"model-a": 1_000, "model-a-b": 2_000}
    assert window_for("model-a", windows) == 1_000
    assert window_for("model-a-b-c", windows) == 2_000


def test_names_are_case_insensitive_and_lose_a_provider_path_or_fine_tune_prefix() -> None:
    assert window_for("GPT-4o", DEFAULT_WINDOWS) == 128_000
    assert window_for("openai/gpt-4o-mini", DEFAULT_WINDOWS) == 128_000
    assert window_for("models/gemini-1.5-flash-002", DEFAULT_WINDOWS) == 1_048_576
    assert window_for("meta-llama/Llama-3.1-70B-Instruct", DEFAULT_WINDOWS) == 128_000
    assert window_for("meta-llama/Meta-Llama-3.1-8B-Instruct", DEFAULT_WINDOWS) == 128_000
    assert window_for("llama3.1:70b", DEFAULT_WINDOWS) == 128_000
    assert window_for("ft:gpt-4o-2024-08-06:acme-corp:triage:9aBcDeFg", DEFAULT_WINDOWS) == 128_000
    # A path the table names is found as it is.
    assert window_for("Acme/Tuned", {"acme/tuned": 4_096, "tuned": 1}) == 4_096


def test_a_name_nothing_matches_has_no_window() -> None:
    for unknown in ("my-model", "gpt-3.5-turbo", "4o", "", "o1-preview"):
        assert window_for(unknown, DEFAULT_WINDOWS) is None


def test_an_operators_entries_add_models_and_replace_built_in_figures() -> None:
    windows = merged_windows(parse_windows("my-model=32000, gpt-4o=64000"))
    assert window_for("my-model-v2", windows) == 32_000
    assert window_for("gpt-4o-2024-08-06", windows) == 64_000
    assert window_for("gpt-4o-mini", windows) == 128_000  # untouched, and longer
    assert DEFAULT_WINDOWS["gpt-4o"] == 128_000  # the defaults are never changed


def test_the_built_in_table_is_case_folded_and_well_formed() -> None:
    for name, window in DEFAULT_WINDOWS.items():
        assert name == name.casefold()
        assert model_problem(name) is None
        assert 0 < window <= WINDOW_MAX
    with pytest.raises(TypeError):
        DEFAULT_WINDOWS["gpt-4o"] = 1  # type: ignore[index]  # read-only on purpose


# --- the operator's setting -----------------------------------------------------------


def test_the_setting_reads_name_equals_tokens_items() -> None:
    assert parse_windows("") == {}
    assert parse_windows(" , ") == {}
    assert parse_windows("My-Model=32000,other = 128000 ,") == {
        "my-model": 32_000,
        "other": 128_000,
    }


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("my-model", "item 1 ('my-model') is not name=tokens"),
        ("a=1,my model=2", "item 2: model 'my model' is not a model name"),
        ("=32000", "item 1: model '' is not a model name"),
        ("a=0", "from 1 to 100,000,000"),
        ("a=-5", "from 1 to 100,000,000"),
        ("a=32k", "from 1 to 100,000,000"),
        ("a=1_000", "from 1 to 100,000,000"),
        ("a=３２", "from 1 to 100,000,000"),  # fullwidth digits are not digits here
        (f"a={WINDOW_MAX + 1}", "from 1 to 100,000,000"),
        ("a=1,A=2", "item 2: model 'A' is given twice"),
    ],
)
def test_a_bad_item_is_refused_naming_it(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=r"^item \d") as refused:
        parse_windows(text)
    assert says in str(refused.value)


def test_model_names_are_ids_without_spaces_of_at_most_128_characters() -> None:
    for good in ("gpt-4o", "claude-3-5-sonnet@20240620", "llama3.1:70b", "a", "x" * 128):
        assert model_problem(good) is None
    for bad in ("", " gpt-4o", "gpt 4o", "-gpt", "gpt\n4o", "gpt‮4o", "x" * 129, "gpt,4o"):
        assert model_problem(bad) is not None


# --- the figure -----------------------------------------------------------------------


def test_the_figure_reads_as_the_pages_show_it() -> None:
    figure = context_figure(14_002, "gpt-4o", DEFAULT_WINDOWS)
    assert (figure.tokens_label, figure.window_label, figure.percent) == (
        "14,002",
        "128,000",
        "11%",
    )
    assert figure.level == "ok"
    assert figure.share == 14_002 / 128_000
    assert figure.as_json() == {
        "model": "gpt-4o",
        "window": 128_000,
        "share": 14_002 / 128_000,
        "level": "ok",
    }


def test_without_a_model_or_a_known_window_there_is_no_figure() -> None:
    none = context_figure(500, None, DEFAULT_WINDOWS)
    unknown = context_figure(500, "my-model", DEFAULT_WINDOWS)
    assert (none.level, unknown.level) == ("none", "unknown")
    for figure in (none, unknown):
        assert (figure.window, figure.share, figure.percent, figure.over) == (None, None, "", False)
    assert none.as_json() == {"model": None, "window": None, "share": None, "level": None}
    assert unknown.as_json() == {"model": "my-model", "window": None, "share": None, "level": None}


@pytest.mark.parametrize(
    ("tokens", "level", "percent"),
    [
        (0, "ok", "0%"),
        (1, "ok", "<1%"),
        (489, "ok", "49%"),
        (499, "ok", "49.9%"),  # rounds to 50%, which it has not reached
        (500, "warning", "50%"),
        (894, "warning", "89%"),
        (899, "warning", "89.9%"),
        (900, "alarm", "90%"),
        (999, "alarm", "99.9%"),
        (1_000, "alarm", "100%"),
        (1_001, "alarm", "100%"),
        (2_500, "alarm", "250%"),
    ],
)
def test_a_warning_from_half_the_window_and_an_alarm_from_ninety_percent(
    tokens: int, level: str, percent: str
) -> None:
    figure = ContextFigure(tokens=tokens, model="m", window=1_000)
    assert (figure.level, figure.percent) == (level, percent)
    assert figure.over is (tokens > 1_000)


@given(tokens=st.integers(0, 10**9), window=st.integers(1, WINDOW_MAX))
def test_the_level_follows_the_exact_share_and_the_meter_turns_where_the_words_do(
    tokens: int, window: int
) -> None:
    figure = ContextFigure(tokens=tokens, model="m", window=window)
    share = tokens / window  # exact enough away from the edges; the edges are integers
    expected = (
        "alarm"
        if tokens * 100 >= ALARM_PERCENT * window
        else "warning"
        if tokens * 100 >= WARNING_PERCENT * window
        else "ok"
    )
    assert figure.level == expected
    assert figure.share == share
    # An HTML meter's low region is value < low, its high region value > high.
    assert figure.meter_low is not None
    assert figure.meter_high is not None
    assert (tokens >= figure.meter_low) == (figure.level != "ok")
    assert (tokens > figure.meter_high) == (figure.level == "alarm")


@given(tokens=st.integers(0, 10**9), window=st.integers(1, WINDOW_MAX))
def test_the_percent_shown_never_claims_a_threshold_the_prompt_has_not_reached(
    tokens: int, window: int
) -> None:
    figure = ContextFigure(tokens=tokens, model="m", window=window)
    shown = figure.percent
    value = 0.5 if shown == "<1%" else float(shown.rstrip("%").replace(",", ""))
    for limit in (WARNING_PERCENT, ALARM_PERCENT, 100):
        if tokens * 100 < limit * window:
            assert value < limit, (tokens, window, shown)
        else:
            assert value >= limit, (tokens, window, shown)
    assert abs(value - tokens * 100 / window) <= 0.5 or shown == "<1%"
