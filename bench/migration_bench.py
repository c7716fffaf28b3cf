"""Migrating placements (SPEC §18.3): the plan over 10,000 memories (goal under 1 s)
and applying 1,000 of its moves (goal under 5 s, the plan recomputed inside), measured
in process. The memories are written as ``user-background`` 1 saves them, then a
version 2 that routes profile memories to ``about_user`` is deployed and declared.
``DEBUG=1 .venv/bin/python -m bench migration_bench`` runs it alone.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from lens.actors import Actor
from lens.core.config import AgentConfig
from lens.models import Agent, Team
from memory.configuring import store_agent, store_config
from memory.core.presets import PresetSpec, derive_key
from memory.core.routing import DeclaredSection, Placement, RoutableRecord, placement_key
from memory.migration import apply_migration, migration_plan
from memory.models import MemoryRecord, Promotion
from memory.saving import routing_context

_RUN = uuid.uuid4().hex[:8]
MEMORIES = 10_000
MOVES = 1_000

# ``user-background`` as its version 2 routes: profile memories to ``about_user``.
USER_BACKGROUND_V2 = PresetSpec(
    key="user-background",
    version="2",
    sections=(DeclaredSection(id="about_user", title="About the User", promotion="auto"),),
    routes={"profile": "about_user", "preference": "user_preferences"},
)


def _config(v2: bool) -> AgentConfig:
    sections = [
        {"id": "user_profile", "title": "About the User", "promotion": "auto"},
        {"id": "user_preferences", "title": "User Preferences", "promotion": "guarded"},
    ]
    if v2:
        sections.append({"id": "about_user", "title": "About You", "promotion": "auto"})
    return AgentConfig.model_validate(
        {
            "name": "Migrating",
            "persona": "You are a test agent.",
            "routing_spec": "user-background",
            "background": {"sections": sections},
        }
    )


def _memories(agent: Agent) -> None:
    """``MEMORIES`` profile memories approved at ``user_profile``, each with its own
    label, written in bulk as a save commits them."""
    start = timezone.now() - timedelta(days=1)
    records = []
    promotions = []
    for i in range(MEMORIES):
        at = start + timedelta(microseconds=i)
        record = MemoryRecord(
            agent=agent,
            kind="profile",
            content=f"Fact number {i}",
            label=f"fact {i}",
            created_at=at,
        )
        key, source = derive_key(RoutableRecord(kind="profile", content="", label=record.label))
        records.append(record)
        promotions.append(
            Promotion(
                record=record,
                agent=agent,
                section="user_profile",
                key=key,
                placement_key=placement_key(Placement(section="user_profile", key=key)),
                key_source=source,
                spec_key="user-background",
                spec_version="1",
                tier="auto",
                status="approved",
                promoted_at=at,
                decided_at=at,
            )
        )
    MemoryRecord.objects.bulk_create(records, batch_size=1000)
    Promotion.objects.bulk_create(promotions, batch_size=1000)


def run(median_ms: Callable[..., float], report: Callable[..., None]) -> None:
    print("\nMigrating placements")
    team = Team.objects.create(slug=f"bench-migration-{_RUN}", name="Bench migration")
    agent, _ = store_agent(team, "migrating", _config(v2=False))
    _memories(agent)
    settings.MEMORY_ROUTING_SPECS = [
        *settings.MEMORY_ROUTING_SPECS,
        "bench.migration_bench.USER_BACKGROUND_V2",
    ]
    settings.MEMORY_ROUTING_SPECS.remove("memory.core.presets.USER_BACKGROUND")
    store_config(team, "migrating", _config(v2=True))
    agent = Agent.objects.get(pk=agent.pk)
    ctx = routing_context(agent)
    found = migration_plan(agent, ctx)
    assert len(found.moves) == MEMORIES, len(found.moves)
    report(
        f"migration plan over {MEMORIES:,} memories",
        median_ms(lambda: migration_plan(agent, ctx), 5),
        1000,
    )
    actor = Actor(label="bench")
    samples = []
    for run_number in range(3):
        current = migration_plan(agent)
        chosen = [move.memory_id for move in current.moves[:MOVES]]
        began = time.perf_counter()
        applied = apply_migration(agent, current.sha256, chosen, actor=actor)
        samples.append((time.perf_counter() - began) * 1000)
        assert len(applied.moved) == MOVES, (run_number, len(applied.moved))
    samples.sort()
    report(f"apply {MOVES:,} moves (plan of {MEMORIES:,} recomputed inside)", samples[1], 5000)


def cleanup() -> None:
    Team.objects.filter(slug=f"bench-migration-{_RUN}").delete()
    if "bench.migration_bench.USER_BACKGROUND_V2" in settings.MEMORY_ROUTING_SPECS:
        settings.MEMORY_ROUTING_SPECS.remove("bench.migration_bench.USER_BACKGROUND_V2")
        settings.MEMORY_ROUTING_SPECS.insert(0, "memory.core.presets.USER_BACKGROUND")
