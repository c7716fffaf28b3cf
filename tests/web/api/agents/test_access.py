"""The agents API's doors (SPEC §6, §8): bearer tokens, revoked and foreign tokens, the
public OpenAPI document, and one team never reaching another's agents.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from lens.models import Agent, ApiToken, Team
from tests.api_calls import ApiClient, assert_error, db_snapshot, normalised, without_revision
from tests.factories import sample_config, with_background
from tests.samples import SAMPLE_CONFIG

pytestmark = pytest.mark.django_db


def bearer(header: str) -> ApiClient:
    client = ApiClient(None)
    client.headers = {"Authorization": header}
    return client


AGENT_ENDPOINTS = [
    ("get", "/api/agents"),
    ("get", "/api/agents/wren"),
    ("put", "/api/agents/wren"),
    ("get", "/api/agents/wren/composition"),
]


def call(client: ApiClient, method: str, path: str) -> Any:
    if method == "put":
        return client.put(path, sample_config())
    return client.get(path)


# --- authentication ----------------------------------------------------------------


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


# --- team isolation ----------------------------------------------------------------


@pytest.mark.parametrize("path", ["/api/agents/wren", "/api/agents/wren/composition"])
def test_it_returns_404_for_another_teams_agent(
    other_api: ApiClient, agent: Agent, path: str
) -> None:
    error = assert_error(other_api.get(path), 404, "agent_not_found")
    # Indistinguishable from a slug that exists nowhere: no hint the agent exists.
    missing = assert_error(other_api.get(path.replace("wren", "ghost")), 404, "agent_not_found")
    assert error == {k: v.replace("ghost", "wren") for k, v in missing.items()}
    assert "Wren" not in error["message"]
    assert "Acme" not in error["message"]
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
    assert without_revision(response.json()) == normalised(theirs)
    assert (
        without_revision(api.get("/api/agents/wren").json())
        == without_revision(ours_before)
        == normalised(SAMPLE_CONFIG)
    )
    assert without_revision(other_api.get("/api/agents/wren").json()) == normalised(theirs)
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
