"""Foundation targets: the lens page and composition of a 40-section, 2,000-entry agent."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from bench.data import ENTRIES_PER_SECTION, SECTIONS, big_config
from lens.agents import with_config
from lens.core.config import AgentConfig
from lens.models import Agent, Membership, Team
from memory.agents import store_agent
from memory.composition import compose

_RUN = uuid.uuid4().hex[:8]


def _queries(client: Client, path: str) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(path)
    assert response.status_code == 200, (path, response.status_code)
    return len(ctx.captured_queries)


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
    print("\nSQL queries per page (must not grow with rows)")
    print(
        f"  /agents/<slug>/  1 section/1 entry: {small_lens}   40 sections/2,000 entries: {big_lens}"
    )
    print(f"  /                1 agent: {one_agent_list}   31 agents: {many_agent_list}")


def cleanup() -> None:
    Team.objects.filter(slug__startswith="bench-").filter(slug__endswith=_RUN).delete()
    User.objects.filter(username=f"bench-{_RUN}").delete()
