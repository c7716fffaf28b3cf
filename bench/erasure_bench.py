"""Erasure (SPEC §15): a memory held by 10,000 deliveries over 200 distinct stored
compositions, each redacted once (goal: under 10 s); and what purging the search index costs beside
100,000 other memories (SQLite rewrites its full-text index: ``memory.search``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext

from bench.common import analyze
from bench.memory_bench import _agent
from bench.search_bench import _fill
from lens.actors import SYSTEM, Actor
from lens.models import Agent, Team
from memory.core.records import MemoryInput
from memory.deliveries.ledger import deliver
from memory.erasure import erase_memory
from memory.models import Delivery
from memory.saving import Saved, save_memory

_RUN = uuid.uuid4().hex[:8]
COMPOSITIONS = 200
DELIVERIES = 10_000
SEARCHED = 100_000


def _remember(agent: Agent, kind: str, content: str, label: str | None = None) -> str:
    saved = save_memory(agent, MemoryInput(kind=kind, content=content, label=label), SYSTEM)
    assert isinstance(saved, Saved)
    return saved.id


def _held_everywhere(team: Team) -> tuple[Agent, str]:
    """An agent whose every one of ``COMPOSITIONS`` stored compositions holds one memory,
    delivered ``DELIVERIES`` times in all (copies of the real deliveries' rows)."""
    agent = _agent(team, "wren")
    target = _remember(agent, "profile", "The user's name is Mira Kowalska.", "name")
    made = []
    for i in range(COMPOSITIONS):
        # A recall-only fact: the prompt keeps the memory, the routing report gains a
        # drop, so each delivery stores a composition of its own.
        _remember(agent, "fact", f"Fact {i} about the user, long enough to look real.")
        made.append(deliver(agent, SYSTEM).delivery)
    copies = DELIVERIES // COMPOSITIONS - 1
    # Earlier than the real ones, a second apart (an agent's delivery times are unique).
    first = made[0].delivered_at
    Delivery.objects.bulk_create(
        (
            Delivery(
                agent=agent,
                composition_id=delivery.composition_id,
                delivered_at=first - timedelta(seconds=i * copies + n + 1),
                session=f"sess-{i}-{n}",
            )
            for i, delivery in enumerate(made)
            for n in range(copies)
        ),
        batch_size=5_000,
    )
    return agent, target


def run(median_ms: Callable[..., float], report: Callable[..., None]) -> None:
    team = Team.objects.create(slug=f"bench-erasure-{_RUN}", name="Bench erasure")
    agent, target = _held_everywhere(team)
    analyze()
    print(
        f"\nErasure: a memory in {COMPOSITIONS} stored compositions, "
        f"{Delivery.objects.filter(agent=agent).count():,} deliveries"
    )
    with CaptureQueriesContext(connection) as queries:
        start = time.perf_counter()
        erased = erase_memory(target, Actor(label="bench"), "measure")
        took = (time.perf_counter() - start) * 1000
    updates = [q for q in queries if q["sql"].startswith('UPDATE "memory_composition"')]
    report("erase_memory (one transaction, then the WAL checkpoint)", took, 10_000)
    report("stored compositions rewritten (each once)", len(updates), COMPOSITIONS + 1, unit="")
    report("deliveries covered", erased.deliveries, unit="")

    searched = _agent(Team.objects.create(slug=f"bench-erasure-s-{_RUN}", name="s"), "big")
    _fill(searched.pk, SEARCHED)
    analyze()
    one = _remember(searched, "profile", "Name: Ada.", "name")
    start = time.perf_counter()
    erase_memory(one, Actor(label="bench"), "measure")
    report(
        f"erase_memory beside {SEARCHED:,} indexed memories (index purge included)",
        (time.perf_counter() - start) * 1000,
        5_000,
    )


def cleanup() -> None:
    teams = Team.objects.filter(slug__startswith="bench-erasure", slug__endswith=_RUN)
    Delivery.objects.filter(agent__team__in=teams).delete()
    teams.delete()
