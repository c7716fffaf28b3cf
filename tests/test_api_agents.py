"""The agents API (SPEC §8): auth, team isolation, config round trips, composition, errors."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
from django.apps import apps
from django.conf import settings
from django.utils import timezone

from lens.core.config import AgentConfig
from lens.core.render import render_sections
from lens.models import Agent, ApiToken, SectionDeclaration, Team
from tests.factories import SAMPLE_CONFIG, ApiClient, create_agent

pytestmark = pytest.mark.django_db

ONE_MIB = 1024 * 1024
SNAKE_CASE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")


# --- helpers ---------------------------------------------------------------------------


def sample() -> dict[str, Any]:
    """A private copy of the sample config, safe to mutate."""
    return copy.deepcopy(SAMPLE_CONFIG)


def normalised(config: dict[str, Any]) -> dict[str, Any]:
    """What the server stores for ``config``: every default filled in (SPEC §3.1, §8)."""
    return {
        "name": config["name"],
        "persona": config.get("persona", ""),
        "tone": config.get("tone", ""),
        "objective": config.get("objective", ""),
        "capabilities": [
            {"name": c["name"], "description": c.get("description", "")}
            for c in config.get("capabilities", [])
        ],
        "manual": config.get("manual", ""),
        "routing_spec": config.get("routing_spec"),
        "background": {
            "sections": [
                {
                    "id": s["id"],
                    "title": s["title"],
                    "promotion": s.get("promotion", "locked"),
                    "entries": [
                        {"key": e["key"], "value": e["value"], "memory_ids": []}
                        for e in s.get("entries", [])
                    ],
                }
                for s in config.get("background", {}).get("sections", [])
            ]
        },
        "awareness": [
            {
                "name": a["name"],
                "description": a.get("description", ""),
                "access_method": a.get("access_method", ""),
            }
            for a in config.get("awareness", [])
        ],
        "recall_pinned_candidates": config.get("recall_pinned_candidates", False),
    }


def db_snapshot() -> dict[str, list[dict[str, Any]]]:
    """Every row of every table, so a test can prove that nothing at all was written."""
    return {
        model._meta.label: list(model._default_manager.order_by("pk").values())
        for model in apps.get_models()
    }


def assert_error(response: Any, status: int, code: str | None = None) -> dict[str, Any]:
    """The response is the error envelope ``{"error": {"code", "message", ...}}``."""
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    error = body["error"]
    assert SNAKE_CASE.fullmatch(error["code"]), error
    assert isinstance(error["message"], str) and error["message"].strip()
    if code is not None:
        assert error["code"] == code, error
    return error


def bearer(header: str) -> ApiClient:
    client = ApiClient(None)
    client.headers = {"Authorization": header}
    return client


def context_text(composition: dict[str, Any]) -> str:
    (context,) = [s for s in composition["prompt"]["sections"] if s["name"] == "Context"]
    return "".join(fragment["text"] for fragment in context["fragments"])


def with_background(*sections: dict[str, Any], name: str = "Probe") -> dict[str, Any]:
    return {"name": name, "background": {"sections": list(sections)}}


AGENT_ENDPOINTS = [
    ("get", "/api/agents"),
    ("get", "/api/agents/wren"),
    ("put", "/api/agents/wren"),
    ("get", "/api/agents/wren/composition"),
]


def call(client: ApiClient, method: str, path: str) -> Any:
    if method == "put":
        return client.put(path, sample())
    return client.get(path)


# --- authentication --------------------------------------------------------------------


@pytest.mark.parametrize(("method", "path"), AGENT_ENDPOINTS)
def test_it_refuses_a_request_without_an_authorization_header(
    anon_api: ApiClient, agent: Agent, method: str, path: str
) -> None:
    before = db_snapshot()
    assert_error(call(anon_api, method, path), 401, "unauthorized")
    assert db_snapshot() == before


@pytest.mark.parametrize(
    "header",
    [
        "Token abc",
        "Basic dXNlcjpwYXNz",
        "Bearer",
        "Bearer ",
        "Bearercl_abc",
        "cl_abc",
        "",
    ],
)
@pytest.mark.parametrize(("method", "path"), AGENT_ENDPOINTS)
def test_it_refuses_a_malformed_authorization_header(
    agent: Agent, header: str, method: str, path: str
) -> None:
    assert_error(call(bearer(header), method, path), 401, "unauthorized")


@pytest.mark.parametrize(("method", "path"), AGENT_ENDPOINTS)
def test_it_refuses_a_token_it_never_issued(agent: Agent, method: str, path: str) -> None:
    client = ApiClient("cl_" + "x" * 43)
    before = db_snapshot()
    assert_error(call(client, method, path), 401, "unauthorized")
    assert db_snapshot() == before


def test_it_refuses_a_token_whose_digest_is_sent_instead_of_the_token(
    team: Team, agent: Agent
) -> None:
    token, _raw = ApiToken.objects.issue(team)
    assert_error(ApiClient(token.digest).get("/api/agents"), 401, "unauthorized")


@pytest.mark.parametrize(("method", "path"), AGENT_ENDPOINTS)
def test_it_refuses_a_revoked_token(team: Team, agent: Agent, method: str, path: str) -> None:
    token, raw = ApiToken.objects.issue(team)
    client = ApiClient(raw)
    assert client.get("/api/agents").status_code == 200
    token.revoked_at = timezone.now()
    token.save()
    before = db_snapshot()
    assert_error(call(client, method, path), 401, "unauthorized")
    assert db_snapshot() == before


def test_revoking_one_token_leaves_the_teams_other_tokens_working(
    team: Team, api: ApiClient, agent: Agent
) -> None:
    token, raw = ApiToken.objects.issue(team)
    ApiToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())
    assert_error(ApiClient(raw).get("/api/agents"), 401, "unauthorized")
    assert api.get("/api/agents").status_code == 200


def test_the_openapi_document_is_public_and_lists_the_agents_paths(anon_api: ApiClient) -> None:
    response = anon_api.get("/api/openapi.json")
    assert response.status_code == 200
    paths = response.json()["paths"]
    assert {"/api/agents", "/api/agents/{slug}", "/api/agents/{slug}/composition"} <= set(paths)
    assert "get" in paths["/api/agents"]
    assert {"get", "put"} <= set(paths["/api/agents/{slug}"])
    assert "get" in paths["/api/agents/{slug}/composition"]


def test_the_api_docs_page_is_public(anon_api: ApiClient) -> None:
    response = anon_api.get("/api/docs")
    assert response.status_code == 200
    assert b"openapi.json" in response.content


# --- team isolation --------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/api/agents/wren", "/api/agents/wren/composition"])
def test_it_returns_404_for_another_teams_agent(
    other_api: ApiClient, agent: Agent, path: str
) -> None:
    error = assert_error(other_api.get(path), 404, "agent_not_found")
    # Indistinguishable from a slug that exists nowhere: no hint the agent exists.
    missing = assert_error(other_api.get(path.replace("wren", "ghost")), 404, "agent_not_found")
    assert error == {k: v.replace("ghost", "wren") for k, v in missing.items()}
    assert "Wren" not in error["message"] and "Acme" not in error["message"]
    assert "acme" not in error["message"]


def test_it_returns_404_for_an_agent_that_does_not_exist(api: ApiClient) -> None:
    assert_error(api.get("/api/agents/nobody"), 404, "agent_not_found")
    assert_error(api.get("/api/agents/nobody/composition"), 404, "agent_not_found")


def test_another_teams_agent_list_does_not_include_the_agent(
    other_api: ApiClient, agent: Agent
) -> None:
    response = other_api.get("/api/agents")
    assert response.status_code == 200
    assert response.json() == {"agents": []}


def test_put_of_the_same_slug_by_another_team_creates_its_own_agent(
    api: ApiClient, other_api: ApiClient, team: Team, other_team: Team, agent: Agent
) -> None:
    ours_before = api.get("/api/agents/wren").json()
    theirs = with_background(
        {"id": "theirs", "title": "Theirs", "entries": [{"key": "k", "value": "v"}]},
        name="Other Wren",
    )

    response = other_api.put("/api/agents/wren", theirs)

    assert response.status_code == 201
    assert response.json() == normalised(theirs)
    assert api.get("/api/agents/wren").json() == ours_before == normalised(SAMPLE_CONFIG)
    assert other_api.get("/api/agents/wren").json() == normalised(theirs)
    assert Agent.objects.get(team=team, slug="wren").name == "Wren"
    assert Agent.objects.get(team=other_team, slug="wren").name == "Other Wren"
    assert [a["name"] for a in api.get("/api/agents").json()["agents"]] == ["Wren"]
    assert [a["name"] for a in other_api.get("/api/agents").json()["agents"]] == ["Other Wren"]


def test_another_teams_update_never_reaches_the_first_teams_agent(
    api: ApiClient, other_api: ApiClient, agent: Agent
) -> None:
    ours_before = api.get("/api/agents/wren").json()
    other_api.put("/api/agents/wren", {"name": "First"})
    assert other_api.put("/api/agents/wren", {"name": "Second"}).status_code == 200
    assert api.get("/api/agents/wren").json() == ours_before
    composition = api.get("/api/agents/wren/composition").json()
    assert composition["counts"]["sections"] == 2


# --- listing ---------------------------------------------------------------------------


def test_the_agent_list_has_the_contract_shape_and_counts(api: ApiClient, agent: Agent) -> None:
    response = api.get("/api/agents")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"agents"}
    (summary,) = body["agents"]
    assert set(summary) == {"slug", "name", "routing_spec", "counts"}
    assert summary["slug"] == "wren"
    assert summary["name"] == "Wren"
    assert summary["routing_spec"] is None
    assert summary["counts"]["sections"] == 2
    assert summary["counts"]["entries"] == 4


def test_the_agent_list_is_empty_for_a_team_without_agents(api: ApiClient) -> None:
    assert api.get("/api/agents").json() == {"agents": []}


def test_the_agent_list_counts_each_agent_separately(api: ApiClient, team: Team) -> None:
    create_agent(team, "wren")
    create_agent(team, "empty", {"name": "Empty"})
    create_agent(
        team,
        "one",
        with_background(
            {"id": "a", "title": "A", "entries": [{"key": "k", "value": 1}]},
            {"id": "b", "title": "B"},
            {"id": "c", "title": "C"},
            name="One",
        ),
    )
    counts = {
        a["slug"]: (a["counts"]["sections"], a["counts"]["entries"])
        for a in api.get("/api/agents").json()["agents"]
    }
    assert counts == {"wren": (2, 4), "empty": (0, 0), "one": (3, 1)}


# --- PUT and GET of a config -----------------------------------------------------------


def test_put_creates_an_agent_with_201_and_returns_the_stored_config(
    api: ApiClient, team: Team
) -> None:
    response = api.put("/api/agents/wren", sample())
    assert response.status_code == 201
    assert response.json() == normalised(SAMPLE_CONFIG)
    assert api.get("/api/agents/wren").json() == normalised(SAMPLE_CONFIG)
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
    }


def test_put_updates_an_existing_agent_with_200(api: ApiClient, agent: Agent) -> None:
    config = sample()
    config["name"] = "Wren II"
    config["tone"] = "Brisk."
    config["recall_pinned_candidates"] = True
    response = api.put("/api/agents/wren", config)
    assert response.status_code == 200
    assert response.json() == normalised(config)
    assert api.get("/api/agents/wren").json() == normalised(config)


def test_get_returns_what_put_returned(api: ApiClient) -> None:
    put = api.put("/api/agents/wren", sample())
    get = api.get("/api/agents/wren")
    assert get.status_code == 200
    assert get.json() == put.json()


def test_values_keep_their_json_types_on_a_round_trip(api: ApiClient) -> None:
    entries = [
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
    config = {
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
    assert api.put("/api/agents/ordered", config).json() == normalised(config)
    body = api.get("/api/agents/ordered").json()
    assert body == normalised(config)
    assert [s["id"] for s in body["background"]["sections"]] == ["zulu", "alpha", "mike"]
    assert [e["key"] for e in body["background"]["sections"][1]["entries"]] == ["z", "a", "m"]
    assert [c["name"] for c in body["capabilities"]] == ["zeta", "alpha", "mu"]

    # A reordering PUT is a reordering, not a no-op.
    config["background"]["sections"].reverse()
    config["capabilities"].reverse()
    assert api.put("/api/agents/ordered", config).status_code == 200
    body = api.get("/api/agents/ordered").json()
    assert [s["id"] for s in body["background"]["sections"]] == ["mike", "alpha", "zulu"]
    assert [c["name"] for c in body["capabilities"]] == ["mu", "alpha", "zeta"]


def test_put_replaces_the_whole_config(api: ApiClient, agent: Agent) -> None:
    replacement = with_background(
        {"id": "ground_rules", "title": "Rules", "entries": [{"key": "only", "value": "one"}]},
        name="Wren",
    )
    response = api.put("/api/agents/wren", replacement)
    assert response.status_code == 200
    assert response.json() == normalised(replacement)
    body = api.get("/api/agents/wren").json()
    assert body == normalised(replacement)
    assert body["capabilities"] == [] and body["awareness"] == [] and body["persona"] == ""
    assert SectionDeclaration.objects.filter(agent=agent).count() == 1
    (summary,) = api.get("/api/agents").json()["agents"]
    assert (summary["counts"]["sections"], summary["counts"]["entries"]) == (1, 1)
    composition = api.get("/api/agents/wren/composition").json()
    assert "About the User" not in json.dumps(composition)
    assert "privacy" not in context_text(composition)


def test_sequential_puts_of_one_slug_never_create_two_agents(api: ApiClient, team: Team) -> None:
    first = api.put("/api/agents/wren", sample())
    second = api.put("/api/agents/wren", sample())
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


# --- composition -----------------------------------------------------------------------


def test_composition_has_the_contract_shape(api: ApiClient, agent: Agent) -> None:
    response = api.get("/api/agents/wren/composition")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"agent", "spec", "background", "prompt", "report", "counts"}
    assert body["agent"] == "wren"
    assert body["spec"] is None
    assert body["background"] == normalised(SAMPLE_CONFIG)["background"]
    assert set(body["prompt"]) == {"sections"}
    for section in body["prompt"]["sections"]:
        assert set(section) == {"name", "source", "fragments"}
        assert section["source"] in {"role", "instance"}
        assert section["fragments"]
        for fragment in section["fragments"]:
            assert set(fragment) <= {"source", "text", "memory_ids"}
            assert fragment["source"] == "authored"  # no memories exist yet
            assert isinstance(fragment["text"], str) and fragment["text"] != ""
            assert fragment.get("memory_ids", []) == []
    assert body["report"]["drops"] == []
    assert isinstance(body["report"]["stats"], dict)
    assert body["counts"]["sections"] == 2
    assert body["counts"]["entries"] == 4


def test_composition_sections_match_the_pure_renderer(api: ApiClient, agent: Agent) -> None:
    body = api.get("/api/agents/wren/composition").json()
    expected = render_sections(AgentConfig.model_validate(SAMPLE_CONFIG))

    got = body["prompt"]["sections"]
    assert [(s["name"], s["source"]) for s in got] == [(s.name, s.source) for s in expected]
    assert [(s["name"], s["source"]) for s in got] == [
        ("Persona", "role"),
        ("Mission", "role"),
        ("Capabilities", "role"),
        ("Manual", "role"),
        ("Context", "instance"),
    ]
    texts = ["".join(f["text"] for f in s["fragments"]) for s in got]
    assert texts == [s.text for s in expected]
    assert "\n\n".join(texts) == "\n\n".join(s.text for s in expected)


def test_composition_renders_the_background_as_the_spec_says(api: ApiClient, agent: Agent) -> None:
    text = context_text(api.get("/api/agents/wren/composition").json())
    assert text.startswith("## Context\n")
    assert (
        "### Ground Rules\n"
        "- **privacy**: Never share what the user says.\n"
        "- **check_in_hour**: 9\n"
        "- **ratio**: 2.5\n"
        "- **proactive**: true\n"
    ) in text
    # A section without entries renders nothing, not even its heading.
    assert "About the User" not in text
    assert "### Available Information Sources" in text
    assert text.index("### Ground Rules") < text.index("### Available Information Sources")
    assert "### Recalled Memories" not in text
    assert [line for line in text.splitlines() if line.startswith("## ")] == ["## Context"]


def test_composition_records_nothing(api: ApiClient, agent: Agent) -> None:
    before = db_snapshot()
    first = api.get("/api/agents/wren/composition")
    second = api.get("/api/agents/wren/composition")
    assert first.status_code == second.status_code == 200
    assert first.json() == second.json()
    assert db_snapshot() == before


def test_composition_of_an_agent_without_background_omits_the_context(api: ApiClient) -> None:
    api.put("/api/agents/bare", {"name": "Bare", "persona": "Just a persona."})
    body = api.get("/api/agents/bare/composition").json()
    assert [s["name"] for s in body["prompt"]["sections"]] == ["Persona"]
    assert body["counts"]["sections"] == 0 and body["counts"]["entries"] == 0


# --- bad input -------------------------------------------------------------------------


def _entry_config(value: Any) -> dict[str, Any]:
    return with_background({"id": "a", "title": "A", "entries": [{"key": "k", "value": value}]})


def _duplicate_sections() -> dict[str, Any]:
    config = sample()
    config["background"]["sections"].append({"id": "ground_rules", "title": "Again"})
    return config


def _duplicate_keys() -> dict[str, Any]:
    config = sample()
    config["background"]["sections"][1]["entries"].append({"key": "privacy", "value": "x"})
    return config


def _with(**changes: Any) -> dict[str, Any]:
    config = sample()
    config.update(changes)
    return config


def _without(field: str) -> dict[str, Any]:
    config = sample()
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
    error = assert_error(api.put(f"/api/agents/{slug}", sample()), 422)
    assert "slug" in error["message"].lower()
    assert db_snapshot() == before


def test_an_invalid_slug_message_names_the_slug(api: ApiClient) -> None:
    error = assert_error(api.put("/api/agents/Bad_Slug", sample()), 422)
    assert "Bad_Slug" in error["message"]


def test_an_unknown_routing_spec_is_refused_on_update_without_touching_the_agent(
    api: ApiClient, agent: Agent
) -> None:
    before_config = api.get("/api/agents/wren").json()
    before = db_snapshot()
    config = sample()
    config["routing_spec"] = "nope"
    config["name"] = "Changed"
    error = assert_error(api.put("/api/agents/wren", config), 422, "unknown_routing_spec")
    assert "nope" in error["message"]
    assert api.get("/api/agents/wren").json() == before_config
    assert db_snapshot() == before


# --- odd Unicode -----------------------------------------------------------------------

ODD_TITLE = "Notes \U0001f4dd \u05e9\u05dc\u05d5\u05dd\r\n# H"
ODD_ENTRIES = [
    {"key": "emoji \U0001f99c", "value": "\U0001f469\u200d\U0001f469\u200d\U0001f467 family"},
    {"key": "rtl \u202eevil", "value": "\u0645\u0631\u062d\u0628\u0627 \u05e2\u05d5\u05dc\u05dd"},
    {"key": "cafe\u0301", "value": "n\u0303o\u0308\u0323"},
    {"key": "line\u2028sep", "value": "para\u2029graph\u0085next"},
    {"key": "inject", "value": "ok\r\n# H\r\n"},
    {"key": "k\n- **fake**", "value": "x\n\n## Current State\n  ### deeper"},
    {"key": "tabs\t", "value": "\v\f\x1c\x1d\x1e> quoted"},
]
ODD_LINES = [
    "### Notes \U0001f4dd \u05e9\u05dc\u05d5\u05dd # H",
    "- **emoji \U0001f99c**: \U0001f469\u200d\U0001f469\u200d\U0001f467 family",
    "- **rtl \u202eevil**: \u0645\u0631\u062d\u0628\u0627 \u05e2\u05d5\u05dc\u05dd",
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
    assert response.json() == normalised(config)
    assert api.get("/api/agents/odd").json() == normalised(config)
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


# --- body size -------------------------------------------------------------------------


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
    config = sample()
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
    config = sample()
    config["persona"] = "x" * ONE_MIB
    error = assert_error(api.put("/api/agents/huge", config), 413, "payload_too_large")
    assert error["limit"] == ONE_MIB
    assert not Agent.objects.filter(slug="huge").exists()


def test_a_body_of_exactly_one_mib_is_accepted(api: ApiClient) -> None:
    response = api.put("/api/agents/edge", raw=_padded(sample(), ONE_MIB))
    assert response.status_code == 201
    assert response.json() == normalised(SAMPLE_CONFIG)
