"""Foundation targets: the lens page and composition of a 40-section, 2,000-entry agent."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from bench.data import (
    ENTRIES_PER_SECTION,
    SECTIONS,
    big_config,
    big_memory_config,
    memory_plan,
)
from lens.actors import SYSTEM, Actor
from lens.agents import with_config
from lens.core.background import Background
from lens.core.config import AgentConfig
from lens.models import Agent, Membership, Team
from memory.composition import compose
from memory.configuring import store_agent
from memory.core.records import MemoryInput
from memory.decisions import decide
from memory.saving import Saved, save_memory

_RUN = uuid.uuid4().hex[:8]


def _queries(client: Client, path: str) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(path)
    assert response.status_code == 200, (path, response.status_code)
    return len(ctx.captured_queries)


def save_planned(agent: Agent, reviewer: Actor, count: int | None = None) -> dict[str, int]:
    """Save the planned memories through ``memory_save`` and decide the guarded ones the
    way a reviewer would; returns how many ended in each fate."""
    ids: list[str] = []
    fates: dict[str, int] = {}
    for planned in memory_plan() if count is None else memory_plan(count):
        supersedes = None if planned.supersedes is None else ids[planned.supersedes]
        data = MemoryInput(
            kind=planned.kind, content=planned.content, label=planned.label, supersedes=supersedes
        )
        saved = save_memory(agent, data, SYSTEM)
        assert isinstance(saved, Saved), saved
        ids.append(saved.id)
        if planned.fate in ("approve", "reject"):
            decide(saved.id, planned.fate == "approve", reviewer)
        fates[planned.fate] = fates.get(planned.fate, 0) + 1
    return fates


def run(median_ms: Callable[..., float], report: Callable[..., None]) -> None:
    team = Team.objects.create(slug=f"bench-{_RUN}", name="Bench")
    user = User.objects.create_user(f"bench-{_RUN}", password="x")
    Membership.objects.create(team=team, user=user)
    config = big_config()
    store_agent(team, "big", config)
    client = Client()
    client.force_login(user)
    client.get(f"/?team={team.slug}")

    print(f"\nAgent with {SECTIONS} sections and {SECTIONS * ENTRIES_PER_SECTION} authored entries")
    loaded = with_config(Agent.objects.filter(team=team, slug="big")).get()
    report(
        "composition in-process (schema + fold + render)",
        median_ms(lambda: compose(loaded), 50),
        20,
    )
    report(
        "composition including the database load",
        median_ms(
            lambda: compose(with_config(Agent.objects.filter(team=team, slug="big")).get()), 30
        ),
    )
    report(
        "lens page /agents/big/ server time (median)",
        median_ms(lambda: client.get("/agents/big/"), 30),
        100,
    )

    lens_small_team = Team.objects.create(slug=f"bench-small-{_RUN}", name="Bench small")
    Membership.objects.create(team=lens_small_team, user=user)
    tiny = {"sections": [{"id": "one", "title": "One", "entries": [{"key": "k", "value": "v"}]}]}
    store_agent(lens_small_team, "big", AgentConfig(name="Tiny", background=tiny))
    client.get(f"/?team={lens_small_team.slug}")
    small_lens = _queries(client, "/agents/big/")
    one_agent_list = _queries(client, "/")
    for i in range(30):
        store_agent(lens_small_team, f"extra-{i}", AgentConfig(name=f"Extra {i}"))
    many_agent_list = _queries(client, "/")
    client.get(f"/?team={team.slug}")
    big_lens = _queries(client, "/agents/big/")
    _memories(team, user, client, median_ms, report)
    print("\nSQL queries per page (must not grow with rows)")
    print(
        f"  /agents/<slug>/  1 section/1 entry: {small_lens}   40 sections/2,000 entries: {big_lens}"
    )
    print(f"  /                1 agent: {one_agent_list}   31 agents: {many_agent_list}")


def _memories(
    team: Team,
    user: User,
    client: Client,
    median_ms: Callable[..., float],
    report: Callable[..., None],
) -> None:
    """The lens target: 40 sections, 2,000 authored entries and 1,000 memories."""
    agent, _ = store_agent(team, "remembers", big_memory_config())
    started = time.perf_counter()
    fates = save_planned(agent, Actor.for_user(user))
    took = time.perf_counter() - started
    composition = compose(with_config(Agent.objects.filter(pk=agent.pk)).get())
    stats = composition.report.stats
    print(
        f"\nAgent with {SECTIONS} sections, {SECTIONS * ENTRIES_PER_SECTION} authored entries"
        f" and {sum(fates.values())} memories (saved in {took:.1f} s): {stats.composed} composed,"
        f" {stats.chars_used['background']} chars of memory, drops {dict(stats.drops_by_reason)}"
    )
    report(
        "lens page /agents/remembers/ server time (median)",
        median_ms(lambda: client.get("/agents/remembers/"), 30),
        150,
    )
    report(
        "  … with ?only=memory",
        median_ms(lambda: client.get("/agents/remembers/?only=memory"), 30),
        150,
    )
    few_config = big_memory_config().model_copy(
        update={"name": "Few", "capabilities": (), "background": _first_sections(2)}
    )
    few, _ = store_agent(team, "few", few_config)
    save_planned(few, Actor.for_user(user), 40)
    few_queries = _queries(client, "/agents/few/")
    big_queries = _queries(client, "/agents/remembers/")
    print(
        "\nSQL queries of the lens with memories (must not grow):"
        f" 2 sections/40 memories: {few_queries}"
        f"   40 sections/2,000 entries/1,000 memories: {big_queries}"
    )


def _first_sections(n: int) -> Background:
    """The preset's sections of ``big_memory_config()`` without their authored entries."""
    sections = big_memory_config().background.sections[:n]
    return Background(sections=tuple(s.model_copy(update={"entries": ()}) for s in sections))


def cleanup() -> None:
    Team.objects.filter(slug__startswith="bench-").filter(slug__endswith=_RUN).delete()
    User.objects.filter(username=f"bench-{_RUN}").delete()
