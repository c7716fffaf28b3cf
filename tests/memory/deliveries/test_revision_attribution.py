"""Every delivery records the agent's revision it was composed from (SPEC §14), also
while people change the agent under it: the recorded revision's config composes exactly
the prompt that was delivered.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from lens.actors import Actor
from lens.models import Agent, ApiToken, Team
from lens.revisions import get_revision, stored_config
from memory.composition import compose_configs
from memory.deliveries.ledger import composition_data, deliver
from memory.models import Delivery
from tests.api_calls import ApiClient
from tests.factories import create_agent, race
from tests.samples import SAMPLE_CONFIG

WRITERS = 3
RUNTIMES = 3
ROUNDS = 4


def persona(n: int) -> dict[str, Any]:
    return {**json.loads(json.dumps(SAMPLE_CONFIG)), "persona": f"You are Wren, version {n}."}


@pytest.mark.django_db
def test_a_delivery_records_the_revision_in_force(api: ApiClient, agent: Agent) -> None:
    first = api.post("/api/agents/wren/deliveries", {}).json()
    api.put("/api/agents/wren", persona(2))
    second = api.post("/api/agents/wren/deliveries", {}).json()
    assert (first["revision"], second["revision"]) == (1, 2)
    listed = api.get("/api/agents/wren/deliveries").json()["deliveries"]
    assert [row["revision"] for row in listed] == [2, 1]
    assert api.get(f"/api/deliveries/{first['delivery_id']}").json()["revision"] == 1


@pytest.mark.django_db
def test_an_agent_read_without_its_revision_is_read_again(agent: Agent) -> None:
    plain = Agent.objects.get(pk=agent.pk)  # not through with_config: no revision number
    delivered = deliver(plain, Actor(label="system"))
    assert delivered.delivery.revision == 1


@pytest.mark.django_db(transaction=True)
def test_deliveries_racing_changes_record_the_revision_of_their_prompt() -> None:
    team = Team.objects.create(slug="acme", name="Acme")
    create_agent(team)
    _token, raw = ApiToken.objects.issue(team)

    def work(n: int) -> int:
        client = ApiClient(raw)
        for round_ in range(ROUNDS):
            if n < WRITERS:
                client.put("/api/agents/wren", persona(n * ROUNDS + round_))
            else:
                assert client.post("/api/agents/wren/deliveries", {}).status_code == 201
        return n

    race(WRITERS + RUNTIMES, work)

    agent = Agent.objects.get(slug="wren")
    deliveries = list(Delivery.objects.filter(agent=agent).select_related("composition"))
    assert len(deliveries) == RUNTIMES * ROUNDS
    for delivery in deliveries:
        assert delivery.revision is not None
        config = stored_config(get_revision(agent, delivery.revision))
        (recomposed,) = compose_configs(agent, [config])
        delivered = composition_data(delivery.composition)
        assert delivered["prompt"] == json.loads(recomposed.model_dump_json())["prompt"]
