"""How many statements recording a delivery over the API sends (docs/performance.md, "A
delivery's statements"): each is a round trip on PostgreSQL, so a new one is a slower
delivery. Counted in a real transaction, BEGIN and COMMIT included, as a served request
runs them."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from lens.models import Agent, Team
from memory.models import Delivery, StoredComposition
from tests.api_calls import ApiClient
from tests.factories import WREN_CONFIG, create_agent, remember
from webhooks.models import Endpoint

pytestmark = pytest.mark.django_db(transaction=True)

# PostgreSQL: the token with the agent, its stamp and revision number; BEGIN; the
# erasure and timeline locks; the stamp and revision again with the stored composition
# (FOR KEY SHARE) and the newest delivery; the agents' lock with the delivery's row and
# the audit head's bump; the audit event with the head's hash and the endpoints; COMMIT.
# SQLite takes no lock, and sends the row and the audit append's statements alone.
UNCHANGED = {"postgresql": 7, "sqlite": 9}


@pytest.fixture
def wren(team: Team) -> Agent:
    agent = create_agent(team, "wren", WREN_CONFIG)
    remember(agent, "profile", "Lives in Oslo.", label="city")
    return agent


def _deliver(api: ApiClient) -> dict[str, Any]:
    response = api.post("/api/agents/wren/deliveries", {"session": "s"})
    assert response.status_code == 201, response.content
    data: dict[str, Any] = response.json()
    return data


def test_a_delivery_of_an_unchanged_prompt_sends_a_fixed_few_statements(
    api: ApiClient, wren: Agent, django_assert_num_queries: Any
) -> None:
    first = _deliver(api)
    with django_assert_num_queries(UNCHANGED[connection.vendor]):
        second = _deliver(api)
    assert second["composition"] == first["composition"]
    assert second["cache"]["first_change"] is None
    assert second["cache"]["prefix_tokens"] == second["cache"]["total_tokens"] > 0
    assert Delivery.objects.count() == 2
    assert StoredComposition.objects.count() == 1


def test_a_team_with_endpoints_costs_a_delivery_no_more(
    api: ApiClient, team: Team, wren: Agent, django_assert_num_queries: Any
) -> None:
    Endpoint.objects.create(
        team=team, url="https://hooks.example/in", events=["memory.approved"], secret="s" * 32
    )
    _deliver(api)
    with django_assert_num_queries(UNCHANGED[connection.vendor]):
        _deliver(api)


def test_a_changed_prompt_is_measured_against_the_delivery_before(
    api: ApiClient, wren: Agent
) -> None:
    _deliver(api)
    remember(wren, "profile", "Works as a pilot.", label="job")
    changed = _deliver(api)
    assert changed["cache"]["first_change"] is not None
    assert changed["cache"]["prefix_tokens"] < changed["cache"]["total_tokens"]
    assert StoredComposition.objects.count() == 2
