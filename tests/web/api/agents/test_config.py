"""Storing and reading an agent's config through the agents API (SPEC §3.1, §8): PUT
creates or replaces, GET returns what PUT stored, with every type and order kept.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from lens.models import Agent, SectionDeclaration, Team
from tests.api_calls import ApiClient, context_text, normalised, without_revision
from tests.factories import sample_config, with_background
from tests.samples import SAMPLE_CONFIG

pytestmark = pytest.mark.django_db


# --- PUT and GET of a config -------------------------------------------------------


def test_put_creates_an_agent_with_201_and_returns_the_stored_config(
    api: ApiClient, team: Team
) -> None:
    response = api.put("/api/agents/wren", sample_config())
    assert response.status_code == 201
    assert without_revision(response.json()) == normalised(SAMPLE_CONFIG)
    assert without_revision(api.get("/api/agents/wren").json()) == normalised(SAMPLE_CONFIG)
    assert Agent.objects.filter(team=team, slug="wren").count() == 1


def test_put_fills_the_defaults_of_a_minimal_config(api: ApiClient) -> None:
    response = api.put("/api/agents/tiny", {"name": "Tiny"})
    assert response.status_code == 201
    assert response.json() == {
        "name": "Tiny",
        "persona": "",
        "tone": "",
        "objective": "",
        "capabilities": [],
        "manual": "",
        "routing_spec": None,
        "background": {"sections": []},
        "awareness": [],
        "recall_pinned_candidates": False,
        "protected": False,
        "revision": 1,
    }


def test_put_updates_an_existing_agent_with_200(api: ApiClient, agent: Agent) -> None:
    config = sample_config()
    config["name"] = "Wren II"
    config["tone"] = "Brisk."
    config["recall_pinned_candidates"] = True
    response = api.put("/api/agents/wren", config)
    assert response.status_code == 200
    assert without_revision(response.json()) == normalised(config)
    assert without_revision(api.get("/api/agents/wren").json()) == normalised(config)


def test_get_returns_what_put_returned(api: ApiClient) -> None:
    put = api.put("/api/agents/wren", sample_config())
    get = api.get("/api/agents/wren")
    assert get.status_code == 200
    assert get.json() == put.json()


def test_values_keep_their_json_types_on_a_round_trip(api: ApiClient) -> None:
    entries: list[dict[str, object]] = [
        {"key": "string", "value": "9"},
        {"key": "int", "value": 9},
        {"key": "float", "value": 2.5},
        {"key": "whole_float", "value": 3.0},
        {"key": "tiny", "value": 1e-7},
        {"key": "negative", "value": -7},
        {"key": "zero", "value": 0},
        {"key": "true", "value": True},
        {"key": "false", "value": False},
        {"key": "empty", "value": ""},
    ]
    config = with_background({"id": "types", "title": "Types", "entries": entries})
    api.put("/api/agents/typed", config)

    for body in (api.put("/api/agents/typed", config).json(), api.get("/api/agents/typed").json()):
        got = {e["key"]: e["value"] for e in body["background"]["sections"][0]["entries"]}
        assert got == {e["key"]: e["value"] for e in entries}
        assert {key: type(value) for key, value in got.items()} == {
            "string": str,
            "int": int,
            "float": float,
            "whole_float": float,
            "tiny": float,
            "negative": int,
            "zero": int,
            "true": bool,
            "false": bool,
            "empty": str,
        }


def test_the_sample_values_keep_their_types(api: ApiClient, agent: Agent) -> None:
    (entries,) = [
        s["entries"]
        for s in api.get("/api/agents/wren").json()["background"]["sections"]
        if s["id"] == "ground_rules"
    ]
    values = [e["value"] for e in entries]
    assert values == ["Never share what the user says.", 9, 2.5, True]
    assert [type(v) for v in values] == [str, int, float, bool]


def test_put_preserves_the_order_of_sections_entries_and_capabilities(api: ApiClient) -> None:
    config: dict[str, Any] = {
        "name": "Ordered",
        "capabilities": [
            {"name": "zeta", "description": "z"},
            {"name": "alpha", "description": "a"},
            {"name": "mu", "description": "m"},
        ],
        "awareness": [{"name": "Zed"}, {"name": "Abe"}],
        "background": {
            "sections": [
                {"id": "zulu", "title": "Zulu", "entries": [{"key": "z", "value": 1}]},
                {
                    "id": "alpha",
                    "title": "Alpha",
                    "entries": [
                        {"key": "z", "value": 1},
                        {"key": "a", "value": 2},
                        {"key": "m", "value": 3},
                    ],
                },
                {"id": "mike", "title": "Mike"},
            ]
        },
    }
    assert without_revision(api.put("/api/agents/ordered", config).json()) == normalised(config)
    body = without_revision(api.get("/api/agents/ordered").json())
    assert body == normalised(config)
    assert [s["id"] for s in body["background"]["sections"]] == ["zulu", "alpha", "mike"]
    assert [e["key"] for e in body["background"]["sections"][1]["entries"]] == ["z", "a", "m"]
    assert [c["name"] for c in body["capabilities"]] == ["zeta", "alpha", "mu"]

    # A reordering PUT is a reordering, not a no-op.
    config["background"]["sections"].reverse()
    config["capabilities"].reverse()
    assert api.put("/api/agents/ordered", config).status_code == 200
    body = without_revision(api.get("/api/agents/ordered").json())
    assert [s["id"] for s in body["background"]["sections"]] == ["mike", "alpha", "zulu"]
    assert [c["name"] for c in body["capabilities"]] == ["mu", "alpha", "zeta"]


def test_put_replaces_the_whole_config(api: ApiClient, agent: Agent) -> None:
    replacement = with_background(
        {"id": "ground_rules", "title": "Rules", "entries": [{"key": "only", "value": "one"}]},
        name="Wren",
    )
    response = api.put("/api/agents/wren", replacement)
    assert response.status_code == 200
    assert without_revision(response.json()) == normalised(replacement)
    body = without_revision(api.get("/api/agents/wren").json())
    assert body == normalised(replacement)
    assert body["capabilities"] == []
    assert body["awareness"] == []
    assert body["persona"] == ""
    assert SectionDeclaration.objects.filter(agent=agent).count() == 1
    (summary,) = api.get("/api/agents").json()["agents"]
    assert (summary["counts"]["sections"], summary["counts"]["entries"]) == (1, 1)
    composition = api.get("/api/agents/wren/composition").json()
    assert "About the User" not in json.dumps(composition)
    assert "privacy" not in context_text(composition)


def test_sequential_puts_of_one_slug_never_create_two_agents(api: ApiClient, team: Team) -> None:
    first = api.put("/api/agents/wren", sample_config())
    second = api.put("/api/agents/wren", sample_config())
    assert (first.status_code, second.status_code) == (201, 200)
    assert first.json() == second.json()
    assert Agent.objects.filter(team=team, slug="wren").count() == 1
    assert SectionDeclaration.objects.filter(agent__team=team).count() == 2
    assert len(api.get("/api/agents").json()["agents"]) == 1


def test_a_slug_of_64_characters_is_accepted(api: ApiClient) -> None:
    slug = "a" + "-9" * 31 + "z"
    assert len(slug) == 64
    assert api.put(f"/api/agents/{slug}", {"name": "Long"}).status_code == 201
    assert api.get(f"/api/agents/{slug}").json()["name"] == "Long"
