"""The agent list of the agents API (SPEC §8): its shape, its counts, and a query count
that does not grow with the agents.
"""

from __future__ import annotations

from typing import Any

import pytest

from lens.models import Agent, Team
from tests.api_calls import ApiClient
from tests.factories import create_agent, memory_config, remember, with_background

pytestmark = pytest.mark.django_db


# --- listing -----------------------------------------------------------------------


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


def test_the_agent_list_query_count_does_not_grow_with_agents(
    api: ApiClient, team: Team, django_assert_max_num_queries: Any
) -> None:
    def add_agent(n: int) -> None:
        # Sections, entries and composed memories: everything the counts are made of.
        agent = create_agent(team, f"agent-{n}", memory_config(name=f"Agent {n}"))
        remember(agent, "profile", f"Name {n}", label="name")
        remember(agent, "preference", f"Preference {n}", label="theme")  # pending

    add_agent(0)
    api.get("/api/agents")  # warm-up: the token's first use
    with django_assert_max_num_queries(10) as captured:
        response = api.get("/api/agents")
    one = len(captured)
    assert response.status_code == 200
    assert len(response.json()["agents"]) == 1

    for n in range(1, 30):
        add_agent(n)
    with django_assert_max_num_queries(one, info="the list of 30 agents"):
        response = api.get("/api/agents")
    assert response.status_code == 200
    agents = response.json()["agents"]
    assert len(agents) == 30
    assert {a["slug"]: a["counts"]["entries"] for a in agents} == {
        f"agent-{n}": 2 for n in range(30)
    }
