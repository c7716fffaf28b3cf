"""``POST /api/agents/{slug}/what-if`` (SPEC §18.2): each kind of change, each refusal
with its code, the team's agents only, and nothing written."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User

from lens.actors import Actor
from lens.agents import get_agent
from lens.models import Agent, Team
from memory.decisions import decide
from memory.deliveries.ledger import deliver
from tests.api_calls import ApiClient, assert_error, db_snapshot
from tests.factories import create_agent, memory_config, remember

pytestmark = pytest.mark.django_db

URL = "/api/agents/wren/what-if"


@pytest.fixture
def wren_ids(team: Team, member: User) -> dict[str, str]:
    agent = create_agent(team, "wren", memory_config())
    decider = Actor.for_user(member)
    ids = {"name": remember(agent, "profile", "Mira", label="name")}
    deliver(get_agent(team, "wren"), Actor(label="runtime"))
    ids["pending"] = remember(agent, "preference", "Prefers a dark theme.", label="theme")
    ids["drink"] = remember(agent, "preference", "Tea, never coffee.", label="drink")
    decide(ids["drink"], True, decider)
    ids["jokes"] = remember(agent, "preference", "Wants daily jokes.", label="jokes")
    decide(ids["jokes"], False, decider)
    deliver(get_agent(team, "wren"), Actor(label="runtime"))
    return ids


def test_approving_a_pending_memory(api: ApiClient, wren_ids: dict[str, str]) -> None:
    response = api.post(
        URL + "?last=50", {"decide": {"memory_id": wren_ids["pending"], "decision": "approve"}}
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {"now", "replay"}
    assert set(body["now"]) == {"before", "after", "diff", "memories"}
    assert set(body["now"]["before"]) == {"tokens", "prompt_sha256"}
    assert body["now"]["memories"] == [
        {"memory_id": wren_ids["pending"], "before": "awaiting-approval", "after": "composed"}
    ]
    assert body["now"]["after"]["tokens"] > body["now"]["before"]["tokens"]
    assert body["now"]["diff"].startswith("--- now\n+++ with the change\n")
    assert set(body["replay"]) == {
        "deliveries",
        "changed",
        "tokens_delta_mean",
        "prefix_tokens_mean_before",
        "prefix_tokens_mean_after",
    }
    assert body["replay"]["deliveries"] == 2
    assert body["replay"]["changed"] == 1  # the one made after its save


@pytest.mark.parametrize(
    "change",
    [
        {"config": memory_config()},
        {"order": ["user_profile", "user_preferences"]},
        {"spec": "user-background"},
    ],
)
def test_an_empty_change_changes_nothing(
    api: ApiClient, wren_ids: dict[str, str], change: dict[str, Any]
) -> None:
    body = api.post(URL, change).json()
    assert body["now"]["before"] == body["now"]["after"]
    assert body["now"]["diff"] == ""
    assert body["now"]["memories"] == []
    assert body["replay"]["changed"] == 0


def test_other_kinds(api: ApiClient, wren_ids: dict[str, str]) -> None:
    for change in (
        {"config": {**memory_config(), "persona": "Terse."}},
        {"order": ["user_preferences", "user_profile"]},
        {"spec": None},
        {"spec": "project"},
        {"decide": {"memory_id": wren_ids["drink"], "decision": "revoke"}},
        {"decide": {"memory_id": wren_ids["jokes"], "decision": "reopen"}},
        {"decide": {"memory_id": wren_ids["pending"], "decision": "reject"}},
    ):
        response = api.post(URL + "?last=1", change)
        assert response.status_code == 200, (change, response.content)
        assert response.json()["replay"]["deliveries"] == 1


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({}, 422, "invalid_request"),
        ({"spec": None, "order": []}, 422, "invalid_request"),
        ({"config": None}, 422, "invalid_request"),
        ({"surprise": 1}, 422, "invalid_request"),
        ({"spec": "nope"}, 422, "unknown_routing_spec"),
        ({"order": ["user_profile"]}, 422, "invalid_request"),
        ({"order": ["user_profile", "user_profile", "user_preferences"]}, 422, "invalid_request"),
        ({"config": {"name": ""}}, 422, "invalid_request"),
        ({"config": {**memory_config(), "routing_spec": "nope"}}, 422, "unknown_routing_spec"),
        ({"decide": {"memory_id": "x", "decision": "undo"}}, 422, "invalid_request"),
        ({"decide": {"memory_id": "0000000000000000zz", "decision": "approve"}}, 404, None),
        # Not found whatever its length or shape, as deciding on it is, up to a bound.
        ({"decide": {"memory_id": "x" * 33, "decision": "approve"}}, 404, None),
        ({"decide": {"memory_id": "0" * 200, "decision": "revoke"}}, 404, None),
        ({"decide": {"memory_id": "no such/memory?", "decision": "reopen"}}, 404, None),
        ({"decide": {"memory_id": "x" * 201, "decision": "approve"}}, 422, "invalid_request"),
        ({"decide": {"memory_id": "", "decision": "approve"}}, 422, "invalid_request"),
    ],
)
def test_refusals(
    api: ApiClient, wren_ids: dict[str, str], body: dict[str, Any], status: int, code: str | None
) -> None:
    error = assert_error(api.post(URL, body), status, code)
    if status == 404:
        assert error["code"] == "promotion_not_found"


def test_an_unknown_long_id_is_not_found_as_the_decide_page_answers_it(
    api: ApiClient, member_client: Any, wren_ids: dict[str, str]
) -> None:
    """The page that decides answers an id it does not know with 404, whatever its
    length; asking what deciding would do answers the same."""
    long_id = "0hou" + "z" * 60
    assert member_client.post(f"/approvals/{long_id}/decide/", {"team": "acme"}).status_code == 404
    body = {"decide": {"memory_id": long_id, "decision": "approve"}}
    assert assert_error(api.post(URL, body), 404)["code"] == "promotion_not_found"


def test_an_invalid_background_gets_puts_code(api: ApiClient, wren_ids: dict[str, str]) -> None:
    config = memory_config()
    config["background"]["sections"].append(config["background"]["sections"][0])
    put = assert_error(api.put("/api/agents/wren", config), 422)
    asked = assert_error(api.post(URL, {"config": config}), 422)
    assert asked["code"] == put["code"] == "invalid_background"
    assert asked["errors"] == put["errors"]


@pytest.mark.parametrize(
    ("memory", "decision", "code"),
    [
        ("drink", "approve", "not_pending"),
        ("jokes", "reject", "not_pending"),
        ("pending", "revoke", "not_approved"),
        ("pending", "reopen", "not_reopenable"),
    ],
)
def test_a_decision_its_state_refuses_is_409(
    api: ApiClient, wren_ids: dict[str, str], memory: str, decision: str, code: str
) -> None:
    body = {"decide": {"memory_id": wren_ids[memory], "decision": decision}}
    assert_error(api.post(URL, body), 409, code)


@pytest.mark.parametrize("last", ["0", "201", "x", "-1"])
def test_last_out_of_range_is_422(api: ApiClient, wren_ids: dict[str, str], last: str) -> None:
    assert_error(api.post(f"{URL}?last={last}", {"spec": None}), 422, "invalid_request")


def test_another_teams_agent_is_not_found_and_anonymous_is_401(
    other_api: ApiClient, anon_api: ApiClient, wren_ids: dict[str, str]
) -> None:
    assert_error(other_api.post(URL, {"spec": None}), 404, "agent_not_found")
    body = {"decide": {"memory_id": wren_ids["pending"], "decision": "approve"}}
    assert_error(other_api.post(URL, body), 404, "agent_not_found")
    assert_error(anon_api.post(URL, {"spec": None}), 401, "unauthorized")


def test_a_memory_of_another_agent_is_not_found(
    api: ApiClient, team: Team, wren_ids: dict[str, str]
) -> None:
    other: Agent = create_agent(team, "ada", memory_config())
    theirs = remember(other, "preference", "Likes rain.", label="weather")
    body = {"decide": {"memory_id": theirs, "decision": "approve"}}
    assert_error(api.post(URL, body), 404, "promotion_not_found")


def test_nothing_is_written(api: ApiClient, wren_ids: dict[str, str]) -> None:
    before = db_snapshot()
    for change in (
        {"config": {**memory_config(), "persona": "Terse."}},
        {"decide": {"memory_id": wren_ids["pending"], "decision": "approve"}},
        {"decide": {"memory_id": wren_ids["drink"], "decision": "revoke"}},
        {"decide": {"memory_id": wren_ids["jokes"], "decision": "reopen"}},
        {"order": ["user_preferences", "user_profile"]},
        {"spec": None},
        {"spec": "nope"},
    ):
        api.post(URL, change)
    assert db_snapshot() == before


def test_deep_bodies_are_refused(api: ApiClient, wren_ids: dict[str, str]) -> None:
    deep = json.dumps({"config": {"name": [[[]]] * 1}}).replace("[[[]]]", "[" * 200 + "]" * 200)
    assert_error(api.post(URL, raw=deep), 422, "invalid_request")
