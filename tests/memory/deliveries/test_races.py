"""Deliveries racing on the real database (SPEC §11): runtimes starting sessions at once
all get their prompt recorded, and a new composition is still stored exactly once.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from lens.actors import Actor
from lens.agents import get_agent
from lens.models import Agent, ApiToken, Team
from memory.core.deliveries import DeliveryInput, sha256_hex
from memory.deliveries.ledger import composition_data, composition_json, deliver
from memory.models import CompositionMemory, Delivery, StoredComposition
from tests.api_calls import ApiClient, api_composed_ids
from tests.factories import race, remember

pytestmark = pytest.mark.django_db(transaction=True)

RUNTIMES = 6


def assert_every_composition_indexed() -> None:
    """Each stored composition: addressed by its text, its memories indexed once."""
    for stored in StoredComposition.objects.all():
        assert stored.digest == sha256_hex(composition_json(stored))
        composed = sorted(set(api_composed_ids(composition_data(stored))))
        assert stored.memory_ids.split() == composed
        index = CompositionMemory.objects.filter(composition=stored)
        assert sorted(index.values_list("memory_id", flat=True)) == composed


def test_runtimes_delivering_one_new_composition_at_once_store_it_once(
    team: Team, wren: Agent
) -> None:
    name = remember(wren, "profile", "Doug", label="name")
    _token, raw = ApiToken.objects.issue(team)

    def start(n: int) -> tuple[int, Any]:
        response = ApiClient(raw).post("/api/agents/wren/deliveries", {"session": f"s{n}"})
        return response.status_code, response.json()

    answers = race(RUNTIMES, start)

    assert [status for status, _ in answers] == [201] * RUNTIMES
    bodies = [body for _, body in answers]
    assert len({body["delivery_id"] for body in bodies}) == RUNTIMES
    assert len({json.dumps(body["composition"], sort_keys=True) for body in bodies}) == 1
    assert len({body["prompt_sha256"] for body in bodies}) == 1
    (stored,) = StoredComposition.objects.all()
    assert Delivery.objects.filter(composition=stored).count() == RUNTIMES
    sessions = set(Delivery.objects.values_list("session", flat=True))
    assert sessions == {f"s{n}" for n in range(RUNTIMES)}
    assert list(CompositionMemory.objects.values_list("memory_id", flat=True)) == [name]
    assert_every_composition_indexed()


def test_deliveries_racing_memory_saves_each_record_a_consistent_composition(
    team: Team, wren: Agent
) -> None:
    def act(n: int) -> str:
        if n % 2:
            return remember(wren, "profile", f"Fact {n}", label=f"fact{n}")
        agent = get_agent(team, "wren")  # each runtime loads the agent itself
        return deliver(agent, Actor(label="runtime"), DeliveryInput(session=f"s{n}")).delivery.id

    race(RUNTIMES, act)

    assert Delivery.objects.count() == RUNTIMES // 2
    assert 1 <= StoredComposition.objects.count() <= RUNTIMES // 2
    assert_every_composition_indexed()
