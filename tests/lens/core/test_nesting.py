"""JSON from outside nests at most ``MAX_DEPTH`` deep (``lens.core.nesting``): deeper is
``TooDeep``, a ``ValueError``, however deep (never a ``RecursionError``)."""

from __future__ import annotations

import json

import pytest

from lens.core.nesting import MAX_DEPTH, TooDeep, check_depth, loads


def nested(depth: int, open_: str = "[", close: str = "]") -> str:
    return open_ * depth + close * depth


def objects(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


@pytest.mark.parametrize("text", [nested(MAX_DEPTH), objects(MAX_DEPTH), "1", '"x"', "[]"])
def test_as_deep_as_allowed_reads(text: str) -> None:
    assert loads(text) == json.loads(text)


@pytest.mark.parametrize(
    "text",
    [nested(MAX_DEPTH + 1), objects(MAX_DEPTH + 1), nested(900), nested(100_000)],
    ids=["one-more", "objects", "parses", "past-the-parser"],
)
def test_deeper_is_too_deep(text: str) -> None:
    with pytest.raises(TooDeep, match=f"nests arrays and objects more than {MAX_DEPTH} deep"):
        loads(text)


def test_too_deep_is_a_value_error_and_invalid_json_still_is_one() -> None:
    assert issubclass(TooDeep, ValueError)
    with pytest.raises(json.JSONDecodeError) as caught:
        loads("[1,")
    assert not isinstance(caught.value, TooDeep)


def test_width_costs_no_depth() -> None:
    check_depth([[0] * 100_000, {"k": "v" * 1_000_000}])
    check_depth("a string")
