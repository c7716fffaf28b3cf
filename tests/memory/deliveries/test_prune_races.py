"""Deliveries racing the retention prune on the real database (SPEC §11): runtimes
delivering an unchanged agent while an operator prunes in a loop. Every delivery is
acknowledged and stored with its composition, and the prune never fails.

The prune here keeps nothing (``older_than`` zero): every composition becomes unused
as soon as its deliveries are gone, so the deliveries keep reusing, and re-creating,
the very row the prune is deleting.
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from lens.models import Agent, ApiToken, Team
from memory.core.deliveries import sha256_hex
from memory.deliveries.ledger import composition_data, composition_json
from memory.deliveries.retention import Pruned, prune
from memory.models import CompositionMemory, Delivery, StoredComposition
from tests.api_calls import ApiClient
from tests.factories import race, remember

pytestmark = pytest.mark.django_db(transaction=True)

RUNTIMES = 3
DELIVERIES_EACH = 15


def test_deliveries_and_a_pruning_loop_both_succeed(team: Team, wren: Agent) -> None:
    memory = remember(wren, "profile", "Doug", label="name")
    _token, raw = ApiToken.objects.issue(team)
    running = threading.Semaphore(0)  # released once by each runtime when it is done
    prunes: list[tuple[datetime, Pruned]] = []

    def runtime() -> list[dict[str, Any]]:
        client = ApiClient(raw)
        answers = []
        for n in range(DELIVERIES_EACH):
            response = client.post("/api/agents/wren/deliveries", {"session": f"s{n}"})
            assert response.status_code == 201, response.content
            answers.append(response.json())
        running.release()
        return answers

    def pruner() -> None:
        finished = 0
        while finished < RUNTIMES:
            started = timezone.now()
            prunes.append((started, prune(timedelta(0))))
            finished += running.acquire(blocking=False)

    def act(n: int) -> list[dict[str, Any]]:
        if n == 0:
            pruner()
            return []
        return runtime()

    answers = [answer for answers in race(RUNTIMES + 1, act) for answer in answers]

    assert len(answers) == RUNTIMES * DELIVERIES_EACH
    assert len(prunes) >= 2
    assert sum(pruned.deliveries for _, pruned in prunes) > 0
    last_cutoff = prunes[-1][0]
    kept = {d.id: d for d in Delivery.objects.select_related("composition")}
    for answer in answers:
        delivery = kept.get(answer["delivery_id"])
        if delivery is None:
            # Gone only because a prune removed it, having started after it was recorded.
            assert datetime.fromisoformat(answer["delivered_at"]) < last_cutoff
            continue
        stored = delivery.composition
        assert stored.prompt_sha256 == answer["prompt_sha256"]
        assert composition_data(stored) == answer["composition"]
    # Whatever is left is whole: each composition addressed by its text and indexed, and
    # none that no delivery uses.
    for stored in StoredComposition.objects.all():
        assert stored.digest == sha256_hex(composition_json(stored))
        index = CompositionMemory.objects.filter(composition=stored)
        assert list(index.values_list("memory_id", flat=True)) == [memory]
    prune(timedelta(0))
    assert (Delivery.objects.count(), StoredComposition.objects.count()) == (0, 0)
    assert CompositionMemory.objects.count() == 0
