"""Bundle targets (SPEC §15): exporting and importing the 40-section, 2,000-entry agent
with 1,000 memories (saved and decided through the real operations) and 10,000
deliveries, each in under 30 s, and the peak of Python memory each takes (measured in a
run of its own: tracing slows what it traces). ``DEBUG=1 .venv/bin/python -m bench
bundle_bench`` runs it alone.
"""

from __future__ import annotations

import statistics
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import connection

from bench.common import analyze
from bench.data import big_memory_config, memory_plan
from lens.actors import Actor
from lens.agents import get_agent
from lens.models import Agent, Membership, Team
from memory.bundles.exporting import export_bundle
from memory.bundles.importing import import_bundle, verify_bundle
from memory.configuring import store_agent
from memory.core.bundle_lines import TYPES
from memory.core.records import MemoryInput
from memory.decisions import decide
from memory.deliveries.ledger import deliver
from memory.models import Delivery
from memory.saving import Saved, save_memory

_RUN = uuid.uuid4().hex[:8]
MEMORIES = 1_000
DELIVERIES = 10_000
# Sessions between which the agent's memories changed: each delivers a new composition.
COMPOSITIONS = 20
ROUNDS = 3
# SPEC §15's goal for an export and for an import of this agent, each.
GOAL_MS = 30_000


def _agent(team: Team, reviewer: Actor) -> Agent:
    """The big agent, its memories saved (and the guarded ones decided) in COMPOSITIONS
    steps with a delivery after each, each delivery repeated (what a runtime records
    while nothing changes) until there are DELIVERIES."""
    store_agent(team, "big", big_memory_config())
    plan = memory_plan(MEMORIES)
    ids: list[str] = []
    per_step = MEMORIES // COMPOSITIONS
    copies = DELIVERIES // COMPOSITIONS - 1
    for step in range(COMPOSITIONS):
        agent = get_agent(team, "big")
        for planned in plan[step * per_step : (step + 1) * per_step]:
            supersedes = None if planned.supersedes is None else ids[planned.supersedes]
            data = MemoryInput(
                kind=planned.kind,
                content=planned.content,
                label=planned.label,
                supersedes=supersedes,
            )
            saved = save_memory(agent, data, reviewer)
            assert isinstance(saved, Saved), saved
            ids.append(saved.id)
            if planned.fate in ("approve", "reject"):
                decide(saved.id, planned.fate == "approve", reviewer)
        real = deliver(get_agent(team, "big"), Actor(label="runtime")).delivery
        Delivery.objects.bulk_create(
            Delivery(
                agent_id=real.agent_id,
                composition_id=real.composition_id,
                delivered_at=real.delivered_at + timedelta(microseconds=i + 1),
                session=f"session-{step:02d}-{i:04d}",
                model="gpt-4.1-mini",
                revision=real.revision,
            )
            for i in range(copies)
        )
    return get_agent(team, "big")


def run(median_ms: Callable[..., float], report: Callable[..., None]) -> None:
    team = Team.objects.create(slug=f"bench-bundles-{_RUN}", name="Bench bundles")
    target = Team.objects.create(slug=f"bench-bundles-to-{_RUN}", name="Bench bundles target")
    user = get_user_model().objects.create_user(f"bench-bundles-{_RUN}", password="x")
    for each in (team, target):
        Membership.objects.create(team=each, user=user)
    started = time.perf_counter()
    agent = _agent(team, Actor.for_user(user))
    analyze()
    print(
        f"\nBundles: the 40-section, 2,000-entry agent with {MEMORIES:,} memories and "
        f"{DELIVERIES:,} deliveries of {COMPOSITIONS} compositions "
        f"(built in {time.perf_counter() - started:.0f} s)"
    )
    scratch = Path(tempfile.mkdtemp(prefix="lens-bundle-bench-"))
    path = scratch / "big.bundle.jsonl.gz"

    def export() -> None:
        bundle = export_bundle(agent)
        with path.open("wb") as out:
            bundle.write_to(out)

    exports = _times(export, ROUNDS)
    report("export_bundle to a file (median)", exports, GOAL_MS)
    size = path.stat().st_size
    manifest = verify_bundle(path)
    lines = sum(manifest.counts.values()) + 1
    counted = _counts(manifest.counts)
    print(f"  bundle: {size / 1e6:.1f} MB compressed, {lines:,} lines ({counted})")
    report("export's peak of Python memory (tracemalloc)", _peak_mb(export), unit="MB")
    checking = _times(lambda: verify_bundle(path), ROUNDS)
    report("reading and checking it alone (verify_bundle, median)", checking)

    agent.delete()  # ids are the instance's keys: the agent moves, as between teams
    imports = []
    for round_ in range(ROUNDS):
        started = time.perf_counter()
        imported = import_bundle(path, target, slug=f"copy-{round_}")
        imports.append((time.perf_counter() - started) * 1000)
        imported.agent.delete()
    report("import_bundle into another team (median)", statistics.median(imports), GOAL_MS)
    peak = _peak_mb(lambda: import_bundle(path, target, slug="copy-traced"))
    report("import's peak of Python memory (tracemalloc)", peak, unit="MB")
    print(f"  ({connection.vendor})")


def _peak_mb(fn: Callable[[], object]) -> float:
    """The most Python memory ``fn`` held at once, in MB."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def _times(fn: Callable[[], object], rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{kind} {counts[kind]:,}" for kind in TYPES if counts.get(kind))


def cleanup() -> None:
    teams = Team.objects.filter(slug__endswith=_RUN, slug__startswith="bench-bundles")
    Delivery.objects.filter(agent__team__in=teams).delete()
    teams.delete()
    get_user_model().objects.filter(username=f"bench-bundles-{_RUN}").delete()
