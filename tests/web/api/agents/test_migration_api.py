"""``/api/agents/{slug}/migration`` (SPEC §18.3): the plan, applying it, and every
error answering in the envelope with nothing changed."""

from __future__ import annotations

from typing import Any

import pytest

from lens.core.config import AgentConfig
from lens.models import ApiToken, Team
from memory.configuring import store_config
from memory.models import MigratedPromotion, Promotion
from tests.api_calls import ApiClient, assert_error, db_snapshot
from tests.factories import create_agent, memory_config, migration_story, race, remember, v2_config
from tests.samples import V2_SPECS

pytestmark = pytest.mark.django_db

URL = "/api/agents/wren/migration"


def test_it_answers_the_plan(
    team: Team, settings: Any, api: ApiClient, django_assert_max_num_queries: Any
) -> None:
    _agent, ids = migration_story(team, settings)
    api.get(URL)
    with django_assert_max_num_queries(5):  # the token, the agent, the plan's two
        response = api.get(URL)
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"spec", "spec_version", "moves", "plan_sha256"}
    assert (body["spec"], body["spec_version"]) == ("user-background", "2")
    assert body["moves"][0] == {
        "memory_id": ids["name"],
        "from": {"section": "user_profile", "key": "name"},
        "to": {"section": "about_user", "key": "name"},
        "tier": "auto",
        "outcome": "approved",
    }
    assert [m["outcome"] for m in body["moves"]] == ["approved", "approved", "pending"]
    assert len(body["plan_sha256"]) == 64


def test_an_agent_of_another_team_is_not_found(
    team: Team, settings: Any, other_api: ApiClient, anon_api: ApiClient
) -> None:
    migration_story(team, settings)
    assert_error(other_api.get(URL), 404, "agent_not_found")
    assert_error(other_api.post(URL, {"plan_sha256": "0" * 64}), 404, "agent_not_found")
    assert_error(anon_api.get(URL), 401, "unauthorized")


def test_applying_moves_them_and_guarded_moves_wait(
    team: Team, settings: Any, api: ApiClient
) -> None:
    _agent, ids = migration_story(team, settings)
    sha = api.get(URL).json()["plan_sha256"]
    response = api.post(URL, {"plan_sha256": sha})
    assert response.status_code == 200, response.content
    body = response.json()
    assert {m["memory_id"]: m["outcome"] for m in body["moved"]} == {
        ids["name"]: "approved",
        ids["city"]: "approved",
        ids["theme"]: "pending",
    }
    assert body["stayed"] == []
    assert api.get(URL).json()["moves"] == []
    assert Promotion.objects.get(pk=ids["theme"]).status == "pending"


def test_a_selection_moves_only_those(team: Team, settings: Any, api: ApiClient) -> None:
    _agent, ids = migration_story(team, settings)
    sha = api.get(URL).json()["plan_sha256"]
    body = api.post(URL, {"plan_sha256": sha, "memory_ids": [ids["city"]]}).json()
    assert [m["memory_id"] for m in body["moved"]] == [ids["city"]]
    assert sorted(m["memory_id"] for m in body["stayed"]) == sorted([ids["name"], ids["theme"]])


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"plan_sha256": "0" * 64}, 409, "plan_changed"),
        ({"plan_sha256": "zz"}, 422, "invalid_request"),
        ({}, 422, "invalid_request"),
        ({"plan_sha256": "SHA", "memory_ids": ["x"]}, 422, "invalid_request"),
        ({"plan_sha256": "PLAN", "memory_ids": ["nope"]}, 422, "not_in_plan"),
        ({"plan_sha256": "PLAN", "memory_ids": []}, 422, "invalid_request"),
        ({"plan_sha256": "PLAN", "extra": 1}, 422, "invalid_request"),
    ],
)
def test_errors_change_nothing(
    team: Team, settings: Any, api: ApiClient, body: dict[str, Any], status: int, code: str
) -> None:
    migration_story(team, settings)
    sha = api.get(URL).json()["plan_sha256"]
    if body.get("plan_sha256") == "PLAN":
        body = {**body, "plan_sha256": sha}
    before = db_snapshot()
    error = assert_error(api.post(URL, body), status, code)
    assert db_snapshot() == before
    if code == "plan_changed":
        assert error["plan_sha256"] == sha


def test_a_protected_agent_needs_a_reviewer(team: Team, settings: Any, api: ApiClient) -> None:
    agent, _ids = migration_story(team, settings)
    type(agent).objects.filter(pk=agent.pk).update(protected=True)
    sha = api.get(URL).json()["plan_sha256"]
    assert_error(api.post(URL, {"plan_sha256": sha}), 403, "migration_needs_reviewer")
    assert MigratedPromotion.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_of_two_applies_racing_one_lands_and_the_other_is_told_the_plan_changed(
    settings: Any,
) -> None:
    team = Team.objects.create(slug="acme", name="Acme")
    _token, raw = ApiToken.objects.issue(team)
    migration_story(team, settings)
    sha = ApiClient(raw).get(URL).json()["plan_sha256"]
    answers = race(2, lambda _i: ApiClient(raw).post(URL, {"plan_sha256": sha}))
    statuses = sorted(answer.status_code for answer in answers)
    assert statuses == [200, 409], [a.content for a in answers]
    lost = next(answer for answer in answers if answer.status_code == 409)
    assert lost.json()["error"]["code"] == "plan_changed"
    assert MigratedPromotion.objects.count() == 3


def test_moves_into_an_earned_section_and_instruction_shaped_ones_are_pending(
    team: Team, settings: Any, api: ApiClient
) -> None:
    # Saved while their section was undeclared, then ``preferences`` declared earned.
    agent = create_agent(team, "wren", memory_config(preferences=None))
    fact = remember(agent, "preference", "Dark theme", label="theme")
    order = remember(agent, "profile", "Always answer in French", label="lang")
    settings.MEMORY_ROUTING_SPECS = V2_SPECS
    store_config(team, "wren", AgentConfig.model_validate(v2_config(preferences="earned")))
    body = api.get(URL).json()
    outcomes = {m["memory_id"]: (m["tier"], m["outcome"]) for m in body["moves"]}
    assert outcomes == {fact: ("earned", "pending"), order: ("auto", "pending")}
    applied = api.post(URL, {"plan_sha256": body["plan_sha256"]}).json()
    assert {m["memory_id"]: m["outcome"] for m in applied["moved"]} == {
        fact: "pending",
        order: "pending",
    }
    reasons = dict(Promotion.objects.values_list("record_id", "reason"))
    assert reasons == {fact: "earning", order: "instruction-shaped"}
