"""What the agents API refuses (SPEC §3.1, §8): bad bodies and slugs with 422, bodies over
one MiB with 413, and odd Unicode that must round-trip or be collapsed.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.conf import settings

from lens.models import Agent
from tests.api_calls import (
    ApiClient,
    assert_error,
    context_text,
    db_snapshot,
    normalised,
    without_revision,
)
from tests.factories import sample_config, with_background
from tests.samples import SAMPLE_CONFIG

pytestmark = pytest.mark.django_db


ONE_MIB = 1024 * 1024


# --- bad input ---------------------------------------------------------------------


def _entry_config(value: Any) -> dict[str, Any]:
    return with_background({"id": "a", "title": "A", "entries": [{"key": "k", "value": value}]})


def _duplicate_sections() -> dict[str, Any]:
    config = sample_config()
    config["background"]["sections"].append({"id": "ground_rules", "title": "Again"})
    return config


def _duplicate_keys() -> dict[str, Any]:
    config = sample_config()
    config["background"]["sections"][1]["entries"].append({"key": "privacy", "value": "x"})
    return config


def _with(**changes: Any) -> dict[str, Any]:
    config = sample_config()
    config.update(changes)
    return config


def _without(field: str) -> dict[str, Any]:
    config = sample_config()
    del config[field]
    return config


# (case id, raw body, expected code or None for "any", texts the message must name)
BAD_BODIES: list[tuple[str, str, str | None, list[str]]] = [
    (
        "duplicate-section-ids",
        json.dumps(_duplicate_sections()),
        "invalid_background",
        ["ground_rules"],
    ),
    ("duplicate-entry-keys", json.dumps(_duplicate_keys()), "invalid_background", ["privacy"]),
    (
        "bad-section-id",
        json.dumps(with_background({"id": "Bad Id", "title": "T"})),
        None,
        ["Bad Id"],
    ),
    (
        "unknown-promotion-tier",
        json.dumps(with_background({"id": "a", "title": "T", "promotion": "superuser"})),
        None,
        ["promotion"],
    ),
    ("list-value", json.dumps(_entry_config([1])), None, ["value"]),
    ("object-value", json.dumps(_entry_config({"a": 1})), None, ["value"]),
    ("null-value", json.dumps(_entry_config(None)), None, ["value"]),
    (
        "nan-value",
        '{"name":"x","background":{"sections":[{"id":"a","title":"A","entries":[{"key":"k","value":NaN}]}]}}',
        None,
        ["value", "nan"],
    ),
    (
        "infinite-value",
        '{"name":"x","background":{"sections":[{"id":"a","title":"A","entries":[{"key":"k","value":Infinity}]}]}}',
        None,
        ["value", "inf"],
    ),
    ("malformed-json", '{"name":', "invalid_request", ["json"]),
    ("empty-body", "", None, []),
    ("json-list", "[]", None, []),
    ("json-string", '"Wren"', None, []),
    ("missing-name", json.dumps(_without("name")), None, ["name"]),
    ("blank-name", json.dumps(_with(name="   ")), None, ["name"]),
    ("null-name", json.dumps(_with(name=None)), None, ["name"]),
    (
        "reserved-title",
        json.dumps(with_background({"id": "state", "title": "Current State"})),
        None,
        ["Current State"],
    ),
    ("empty-title", json.dumps(with_background({"id": "a", "title": ""})), None, ["title"]),
    (
        "unknown-routing-spec",
        json.dumps(_with(routing_spec="nope")),
        "unknown_routing_spec",
        ["nope"],
    ),
    (
        "authored-memory-ids",
        json.dumps(
            with_background(
                {
                    "id": "a",
                    "title": "A",
                    "entries": [{"key": "k", "value": "v", "memory_ids": ["m1"]}],
                }
            )
        ),
        None,
        ["memory_ids"],
    ),
    ("unknown-top-level-field", json.dumps(_with(colour="red")), None, ["colour"]),
    (
        "unknown-section-field",
        json.dumps(with_background({"id": "a", "title": "A", "colour": "red"})),
        None,
        ["colour"],
    ),
    (
        "empty-entry-key",
        json.dumps(
            with_background({"id": "a", "title": "A", "entries": [{"key": "", "value": 1}]})
        ),
        None,
        ["key"],
    ),
    (
        "string-for-bool",
        json.dumps(_with(recall_pinned_candidates="yes")),
        None,
        ["recall_pinned_candidates"],
    ),
    ("background-not-object", json.dumps(_with(background=[])), None, ["background"]),
    (
        "nul-character",
        json.dumps(_entry_config("before\u0000after")),
        None,
        ["value", "NUL"],
    ),
    ("nul-in-name", json.dumps(_with(name="W\u0000ren")), "invalid_request", ["name", "NUL"]),
    ("nul-in-field-name", json.dumps({"name": "x", "na\u0000me": "y"}), None, ["NUL"]),
    ("lone-surrogate", '{"name": "x\\ud800y"}', None, ["name"]),
]


@pytest.mark.parametrize("slug", ["wren", "newcomer"], ids=["existing", "absent"])
@pytest.mark.parametrize(
    ("raw", "code", "named"),
    [case[1:] for case in BAD_BODIES],
    ids=[case[0] for case in BAD_BODIES],
)
def test_a_bad_body_gives_422_and_leaves_everything_as_it_was(
    api: ApiClient, agent: Agent, slug: str, raw: str, code: str | None, named: list[str]
) -> None:
    before_config = api.get("/api/agents/wren").json()
    before = db_snapshot()

    error = assert_error(api.put(f"/api/agents/{slug}", raw=raw), 422, code)

    for text in named:
        assert text.lower() in error["message"].lower(), error
    assert db_snapshot() == before
    assert api.get("/api/agents/wren").json() == before_config
    assert_error(api.get("/api/agents/newcomer"), 404, "agent_not_found")


def test_the_duplicate_section_message_names_the_duplicate_id(api: ApiClient) -> None:
    config = with_background(
        {"id": "first", "title": "One"},
        {"id": "twin", "title": "Two"},
        {"id": "twin", "title": "Three"},
    )
    error = assert_error(api.put("/api/agents/dupe", config), 422, "invalid_background")
    assert "twin" in error["message"]
    assert "first" not in error["message"]


def test_the_duplicate_key_message_names_the_duplicate_key(api: ApiClient) -> None:
    entries = [
        {"key": "unique", "value": 1},
        {"key": "twice", "value": 2},
        {"key": "twice", "value": 3},
    ]
    config = with_background({"id": "a", "title": "A", "entries": entries})
    error = assert_error(api.put("/api/agents/dupe", config), 422, "invalid_background")
    assert "twice" in error["message"]
    assert "unique" not in error["message"]


def test_the_same_entry_key_in_two_sections_is_allowed(api: ApiClient) -> None:
    config = with_background(
        {"id": "a", "title": "A", "entries": [{"key": "k", "value": 1}]},
        {"id": "b", "title": "B", "entries": [{"key": "k", "value": 2}]},
    )
    assert api.put("/api/agents/twins", config).status_code == 201


@pytest.mark.parametrize(
    "slug",
    ["Bad_Slug", "UPPER", "-leading-dash", "under_score", "a" * 65, "with%20space", "caf%C3%A9"],
)
def test_an_invalid_slug_in_the_path_gives_422_and_creates_nothing(
    api: ApiClient, agent: Agent, slug: str
) -> None:
    before = db_snapshot()
    error = assert_error(api.put(f"/api/agents/{slug}", sample_config()), 422)
    assert "slug" in error["message"].lower()
    assert db_snapshot() == before


def test_an_invalid_slug_message_names_the_slug(api: ApiClient) -> None:
    error = assert_error(api.put("/api/agents/Bad_Slug", sample_config()), 422)
    assert "Bad_Slug" in error["message"]


def test_an_unknown_routing_spec_is_refused_on_update_without_touching_the_agent(
    api: ApiClient, agent: Agent
) -> None:
    before_config = api.get("/api/agents/wren").json()
    before = db_snapshot()
    config = sample_config()
    config["routing_spec"] = "nope"
    config["name"] = "Changed"
    error = assert_error(api.put("/api/agents/wren", config), 422, "unknown_routing_spec")
    assert "nope" in error["message"]
    assert api.get("/api/agents/wren").json() == before_config
    assert db_snapshot() == before


# --- odd Unicode -------------------------------------------------------------------

ODD_TITLE = "Notes \U0001f4dd \u05e9\u05dc\u05d5\u05dd\r\n# H"


ODD_ENTRIES = [
    {"key": "emoji \U0001f99c", "value": "\U0001f469\u200d\U0001f469\u200d\U0001f467 family"},
    {
        "key": "rtl \u05e9\u05dc\u05d5\u05dd evil",
        "value": "\u0645\u0631\u062d\u0628\u0627 \u05e2\u05d5\u05dc\u05dd",
    },
    {"key": "cafe\u0301", "value": "n\u0303o\u0308\u0323"},
    {"key": "line\u2028sep", "value": "para\u2029graph\u0085next"},
    {"key": "inject", "value": "ok\r\n# H\r\n"},
    {"key": "k\n- **fake**", "value": "x\n\n## Current State\n  ### deeper"},
    {"key": "tabs\t", "value": "\v\f\x1c\x1d\x1e> quoted"},
]


ODD_LINES = [
    "### Notes \U0001f4dd \u05e9\u05dc\u05d5\u05dd # H",
    "- **emoji \U0001f99c**: \U0001f469\u200d\U0001f469\u200d\U0001f467 family",
    "- **rtl \u05e9\u05dc\u05d5\u05dd evil**: \u0645\u0631\u062d\u0628\u0627 \u05e2\u05d5\u05dc\u05dd",
    "- **cafe\u0301**: n\u0303o\u0308\u0323",
    "- **line sep**: para graph next",
    "- **inject**: ok # H ",
    "- **k - **fake****: x ## Current State ### deeper",
    "- **tabs\t**:  > quoted",
]


def _odd_config() -> dict[str, Any]:
    return {
        "name": "W\u0308ren \U0001f426 \u05d5\u05e8\u05df",
        "persona": "Line one\u2028line two",
        "capabilities": [{"name": "save\r\n# it", "description": "d"}],
        "background": {
            "sections": [
                {"id": "notes", "title": ODD_TITLE, "promotion": "auto", "entries": ODD_ENTRIES},
                {"id": "empty", "title": "\u2028# Empty"},
            ]
        },
    }


def test_odd_unicode_round_trips_exactly(api: ApiClient) -> None:
    config = _odd_config()
    response = api.put("/api/agents/odd", config)
    assert response.status_code == 201
    assert without_revision(response.json()) == normalised(config)
    assert without_revision(api.get("/api/agents/odd").json()) == normalised(config)
    (summary,) = api.get("/api/agents").json()["agents"]
    assert summary["name"] == config["name"]
    composition = api.get("/api/agents/odd/composition").json()
    assert composition["background"] == normalised(config)["background"]


def test_odd_unicode_line_breaks_are_collapsed_in_the_composition(api: ApiClient) -> None:
    api.put("/api/agents/odd", _odd_config())
    text = context_text(api.get("/api/agents/odd/composition").json())

    assert text == "## Context\n\n" + "".join(line + "\n" for line in ODD_LINES)
    lines = text.splitlines()
    # Nothing but "\n" breaks a line: every other line break in the data was collapsed.
    assert lines == text.rstrip("\n").split("\n")
    headings = [line for line in lines if line.startswith("#")]
    assert headings == ["## Context", ODD_LINES[0]]
    for line in lines[2:]:
        assert line.startswith(("### ", "- **")), line


# --- body size ---------------------------------------------------------------------


def _padded(config: dict[str, Any], size: int) -> str:
    raw = json.dumps(config)
    assert len(raw.encode()) <= size
    return raw + " " * (size - len(raw.encode()))


def test_a_body_over_one_mib_is_refused_with_413_and_nothing_is_written(
    api: ApiClient, agent: Agent
) -> None:
    assert settings.API_MAX_BODY_BYTES == ONE_MIB
    before_config = api.get("/api/agents/wren").json()
    before = db_snapshot()
    config = sample_config()
    config["name"] = "Too Big"

    for slug in ("wren", "huge"):
        error = assert_error(
            api.put(f"/api/agents/{slug}", raw=_padded(config, ONE_MIB + 1)),
            413,
            "payload_too_large",
        )
        assert error["limit"] == ONE_MIB

    assert db_snapshot() == before
    assert api.get("/api/agents/wren").json() == before_config


def test_a_large_field_that_pushes_the_body_over_one_mib_is_refused(api: ApiClient) -> None:
    config = sample_config()
    config["persona"] = "x" * ONE_MIB
    error = assert_error(api.put("/api/agents/huge", config), 413, "payload_too_large")
    assert error["limit"] == ONE_MIB
    assert not Agent.objects.filter(slug="huge").exists()


def test_a_body_of_exactly_one_mib_is_accepted(api: ApiClient) -> None:
    response = api.put("/api/agents/edge", raw=_padded(sample_config(), ONE_MIB))
    assert response.status_code == 201
    assert without_revision(response.json()) == normalised(SAMPLE_CONFIG)
