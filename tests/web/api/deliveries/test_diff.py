"""Comparing two deliveries through the API (SPEC §11): ``GET /api/deliveries/{id}/diff``,
by default against the same agent's previous delivery.
"""

from __future__ import annotations

import difflib
from typing import Any

import pytest
from django.contrib.auth.models import User

from lens.actors import Actor
from lens.models import Agent, Team
from memory.decisions import decide, revoke
from memory.models import Delivery
from tests.api_calls import ApiClient, api_composed_ids, api_prompt_text, assert_error
from tests.factories import create_agent, memory_config, preference, remember

pytestmark = pytest.mark.django_db

DIFF_KEYS = {"from", "to", "diff", "memories", "chars", "tokens", "causes", "causes_total"}


def post_delivery(api: ApiClient, slug: str = "wren") -> dict[str, Any]:
    response = api.post(f"/api/agents/{slug}/deliveries", {})
    assert response.status_code == 201, response.content
    return dict(response.json())


def diff_of(api: ApiClient, delivery_id: str, against: str | None = None) -> dict[str, Any]:
    query = "" if against is None else f"?against={against}"
    response = api.get(f"/api/deliveries/{delivery_id}/diff{query}")
    assert response.status_code == 200, response.content
    body = dict(response.json())
    assert set(body) == DIFF_KEYS
    assert set(body["memories"]) == {"added", "removed"}
    assert set(body["chars"]) == set(body["tokens"]) == {"from", "to"}
    return body


def expected_diff(old: str, new: str, old_label: str, new_label: str) -> str:
    """A unified diff of two prompts, straight from difflib (both end with a newline)."""
    assert old == "" or old.endswith("\n")
    assert new.endswith("\n")
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), old_label, new_label
    )
    return "".join(lines)


def prompt(answer: dict[str, Any]) -> str:
    return api_prompt_text(answer["composition"])


def tokens(answer: dict[str, Any]) -> int:
    return int(answer["composition"]["tokens"]["total"])


# --- the default: the previous delivery -------------------------------------------------


def test_a_composed_memory_shows_as_added_with_its_line(api: ApiClient, wren: Agent) -> None:
    before = post_delivery(api)
    name = remember(wren, "profile", "Doug", label="name")
    after = post_delivery(api)

    body = diff_of(api, after["delivery_id"])
    assert body["from"] == before["delivery_id"]
    assert body["to"] == after["delivery_id"]
    assert body["memories"] == {"added": [name], "removed": []}
    assert body["chars"] == {"from": len(prompt(before)), "to": len(prompt(after))}
    assert body["tokens"] == {"from": tokens(before), "to": tokens(after)}
    assert "+- **name**: Doug\n" in body["diff"].splitlines(keepends=True)
    assert body["diff"] == expected_diff(
        prompt(before),
        prompt(after),
        f"delivery {before['delivery_id']}",
        f"delivery {after['delivery_id']}",
    )


def test_an_agents_first_delivery_adds_every_line(api: ApiClient, wren: Agent) -> None:
    ids = sorted(
        [
            remember(wren, "profile", "Doug", label="name"),
            remember(wren, "profile", "Lisbon", label="city"),
        ]
    )
    first = post_delivery(api)

    body = diff_of(api, first["delivery_id"])
    assert body["from"] is None
    assert body["to"] == first["delivery_id"]
    assert body["memories"] == {"added": ids, "removed": []}
    assert body["chars"] == {"from": 0, "to": len(prompt(first))}
    assert body["tokens"] == {"from": 0, "to": tokens(first)}
    lines = body["diff"].splitlines()
    assert lines[:2] == ["--- (none)", f"+++ delivery {first['delivery_id']}"]
    assert lines[2].startswith("@@ -0,0 +1,")
    assert lines[3:] == ["+" + line for line in prompt(first).splitlines()]
    assert body["diff"] == expected_diff(
        "", prompt(first), "(none)", f"delivery {first['delivery_id']}"
    )


def test_the_same_composition_twice_is_an_empty_diff(api: ApiClient, wren: Agent) -> None:
    remember(wren, "profile", "Doug", label="name")
    first, second = post_delivery(api), post_delivery(api)
    body = diff_of(api, second["delivery_id"])
    assert body["from"] == first["delivery_id"]
    assert body["diff"] == ""
    assert body["memories"] == {"added": [], "removed": []}
    assert body["chars"]["from"] == body["chars"]["to"]


def test_a_revoked_memory_shows_as_removed_with_its_line(
    api: ApiClient, wren: Agent, reviewer: User
) -> None:
    drink = preference(wren, "Tea, never coffee.", label="drink")
    decide(drink, True, Actor.for_user(reviewer))
    with_drink = post_delivery(api)
    assert api_composed_ids(with_drink["composition"]) == [drink]
    revoke(drink, Actor.for_user(reviewer))
    without = post_delivery(api)

    body = diff_of(api, without["delivery_id"])
    assert body["from"] == with_drink["delivery_id"]
    assert body["memories"] == {"added": [], "removed": [drink]}
    assert "-- **drink**: Tea, never coffee.\n" in body["diff"].splitlines(keepends=True)
    assert body["chars"]["to"] < body["chars"]["from"]


def test_the_previous_delivery_is_the_same_agents(
    api: ApiClient, team: Team, wren: Agent, monkeypatch: pytest.MonkeyPatch
) -> None:
    create_agent(team, "orca", memory_config(name="Orca"))
    d1 = post_delivery(api)["delivery_id"]
    other = post_delivery(api, "orca")["delivery_id"]
    d2 = post_delivery(api)["delivery_id"]
    d3 = post_delivery(api)["delivery_id"]
    assert diff_of(api, d2)["from"] == d1  # not orca's, delivered in between
    assert diff_of(api, other)["from"] is None

    # Deliveries asking for one moment are a microsecond apart, in the order they came.
    moment = Delivery.objects.get(pk=d3).delivered_at
    monkeypatch.setattr("memory.deliveries.ledger.timezone.now", lambda: moment)
    d4, d5 = post_delivery(api)["delivery_id"], post_delivery(api)["delivery_id"]
    assert [diff_of(api, d)["from"] for d in (d3, d4, d5)] == [d2, d3, d4]


# --- against ------------------------------------------------------------------------------


def test_against_compares_with_any_delivery_of_the_same_agent(api: ApiClient, wren: Agent) -> None:
    first = post_delivery(api)
    name = remember(wren, "profile", "Doug", label="name")
    post_delivery(api)
    city = remember(wren, "profile", "Lisbon", label="city")
    last = post_delivery(api)

    forward = diff_of(api, last["delivery_id"], against=first["delivery_id"])
    assert (forward["from"], forward["to"]) == (first["delivery_id"], last["delivery_id"])
    assert forward["memories"] == {"added": sorted([name, city]), "removed": []}

    backward = diff_of(api, first["delivery_id"], against=last["delivery_id"])
    assert backward["memories"] == {"added": [], "removed": sorted([name, city])}
    assert backward["chars"] == {"from": forward["chars"]["to"], "to": forward["chars"]["from"]}
    assert "-- **name**: Doug\n" in backward["diff"].splitlines(keepends=True)

    itself = diff_of(api, last["delivery_id"], against=last["delivery_id"])
    assert itself["from"] == itself["to"] == last["delivery_id"]
    assert itself["diff"] == ""
    assert itself["memories"] == {"added": [], "removed": []}


def test_against_another_agents_delivery_is_not_found(
    api: ApiClient, team: Team, wren: Agent
) -> None:
    create_agent(team, "orca", memory_config(name="Orca"))
    mine = post_delivery(api)["delivery_id"]
    theirs = post_delivery(api, "orca")["delivery_id"]
    for path in (f"{mine}/diff?against={theirs}", f"{theirs}/diff?against={mine}"):
        assert_error(api.get(f"/api/deliveries/{path}"), 404, "delivery_not_found")


def test_against_another_teams_delivery_is_not_found(
    api: ApiClient, other_api: ApiClient, wren: Agent, other_team: Team
) -> None:
    create_agent(other_team, "wren", memory_config())
    mine = post_delivery(api)["delivery_id"]
    theirs = post_delivery(other_api)["delivery_id"]
    assert_error(
        api.get(f"/api/deliveries/{mine}/diff?against={theirs}"), 404, "delivery_not_found"
    )
    assert_error(
        other_api.get(f"/api/deliveries/{theirs}/diff?against={mine}"), 404, "delivery_not_found"
    )


@pytest.mark.parametrize("against", ["0" * 18, "nope", "x" * 40])
def test_against_an_unknown_delivery_is_not_found(
    api: ApiClient, wren: Agent, against: str
) -> None:
    mine = post_delivery(api)["delivery_id"]
    assert_error(
        api.get(f"/api/deliveries/{mine}/diff?against={against}"), 404, "delivery_not_found"
    )
