"""How many statements a save over the API sends (docs/performance.md, "A save's
statements"): each is a round trip on PostgreSQL, so a new one is a slower save. Counted
in a real transaction, BEGIN and COMMIT included, as a served request runs them."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from lens.models import Agent, Team
from tests.api_calls import ApiClient, memory_body, post_memory
from tests.factories import WREN_CONFIG, create_agent
from webhooks.models import Endpoint

pytestmark = pytest.mark.django_db(transaction=True)

# PostgreSQL: the token with the agent and its declarations; BEGIN; the gate's probe
# with the newest time; the record, search document, promotion and events; the agents'
# lock with the audit head's bump; the audit events with the head's hash and the
# endpoints; COMMIT. SQLite sends the inserts one by one and the audit append's
# statements alone (each a call into the library in the same process, not a trip).
SAVE = {"postgresql": 7, "sqlite": 12}
# A conflict: the token's statement, BEGIN, the probe, the holder read whole, COMMIT.
CONFLICT = {"postgresql": 5, "sqlite": 5}


@pytest.fixture
def wren(team: Team) -> Agent:
    return create_agent(team, "wren", WREN_CONFIG)


def test_a_save_sends_a_fixed_few_statements(
    api: ApiClient, wren: Agent, django_assert_num_queries: Any
) -> None:
    post_memory(api, memory_body("profile", "Lives in Oslo.", label="city"))
    with django_assert_num_queries(SAVE[connection.vendor]):
        post_memory(api, memory_body("preference", "Prefers dark mode.", label="theme"))


def test_a_team_with_endpoints_costs_a_save_no_more(
    api: ApiClient, team: Team, wren: Agent, django_assert_num_queries: Any
) -> None:
    Endpoint.objects.create(
        team=team, url="https://hooks.example/in", events=["memory.approved"], secret="s" * 32
    )
    post_memory(api, memory_body("profile", "Lives in Oslo.", label="city"))
    with django_assert_num_queries(SAVE[connection.vendor]):
        post_memory(api, memory_body("preference", "Prefers dark mode.", label="theme"))


def test_a_conflict_writes_nothing_in_few_statements(
    api: ApiClient, wren: Agent, django_assert_num_queries: Any
) -> None:
    post_memory(api, memory_body("profile", "Lives in Oslo.", label="city"))
    with django_assert_num_queries(CONFLICT[connection.vendor]):
        response = api.post(
            "/api/agents/wren/memories", memory_body("profile", "Lives in Bergen.", label="city")
        )
    assert response.status_code == 409
