"""Concurrent sightings of one earning memory (SPEC §19.1), on the real database: each
counted once, and exactly one approval."""

from __future__ import annotations

import pytest

from lens.models import ApiToken, Team
from memory.models import EventKind, MemoryEvent, Promotion
from tests.api_calls import ApiClient
from tests.factories import VAULT_CONFIG, create_agent, race

pytestmark = pytest.mark.django_db(transaction=True)

WRITERS = 6


def test_concurrent_sightings_are_each_counted_and_approve_the_memory_once(
    settings: object,
) -> None:
    team = Team.objects.create(slug="acme", name="Acme")
    _token, raw = ApiToken.objects.issue(team)
    agent = create_agent(team, "vault", VAULT_CONFIG)
    body = {"kind": "preference", "content": "Likes jazz.", "label": "music"}
    first = ApiClient(raw).post("/api/agents/vault/memories", {**body, "session": "s0"})
    assert first.status_code == 201
    holder = first.json()["id"]

    def sight(n: int) -> tuple[int, str]:
        response = ApiClient(raw).post("/api/agents/vault/memories", {**body, "session": f"s{n}"})
        return response.status_code, response.json()["status"]

    results = race(WRITERS, sight)

    assert results == [(201, "saved")] * WRITERS
    sightings = Promotion.objects.filter(agent=agent, corroborates_id=holder)
    assert sightings.count() == WRITERS
    assert set(sightings.values_list("status", flat=True)) == {"corroborates"}
    row = Promotion.objects.get(record_id=holder)
    assert (row.status, row.reason, row.decided_by_id) == ("approved", "earned", None)
    assert MemoryEvent.objects.filter(record_id=holder, kind=EventKind.EARNED).count() == 1
    # The approval came with the sighting that made the count: the third session.
    approval = MemoryEvent.objects.get(record_id=holder, kind=EventKind.EARNED)
    assert approval.detail["sessions"] == 3
