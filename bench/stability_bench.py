"""Prompt-cache stability (SPEC §17): ``stability?last=50`` for the 40-section agent
(goal under 500 ms), with 51 deliveries whose first Background section changes between
each, measured in process. Each measurement tokenises every distinct line segment of
those prompts afresh (no cache carries over between requests but the section counts').
``DEBUG=1 .venv/bin/python -m bench stability_bench`` runs it alone.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from bench.data import big_config
from lens.actors import Actor
from lens.core.config import AgentConfig
from lens.models import Agent, Team
from memory.configuring import store_agent, store_config
from memory.deliveries.ledger import deliver
from memory.stability import stability

_RUN = uuid.uuid4().hex[:8]
DELIVERIES = 51


def ticked(config: AgentConfig, tick: int) -> AgentConfig:
    first, *rest = config.background.sections
    entry = first.entries[0].model_copy(update={"value": f"tick {tick}"})
    first = first.model_copy(update={"entries": (entry, *first.entries[1:])})
    background = config.background.model_copy(update={"sections": (first, *rest)})
    return config.model_copy(update={"background": background})


def run(median_ms: Callable[..., float], report: Callable[..., None]) -> None:
    print("\nPrompt-cache stability")
    team = Team.objects.create(slug=f"bench-stability-{_RUN}", name="Bench stability")
    config = big_config()
    agent, _ = store_agent(team, "big", config)
    runtime = Actor(label="bench runtime")
    for tick in range(DELIVERIES):
        store_config(team, "big", ticked(config, tick))
        deliver(Agent.objects.get(pk=agent.pk), runtime)
    agent = Agent.objects.get(pk=agent.pk)
    found = stability(agent, 50)
    report(
        "stability?last=50, 40 sections, prompts' ids cached",
        median_ms(lambda: stability(agent, 50), 5),
        500,
    )

    print(
        f"  {'cached prefix as delivered / suggested order (tokens)':<58} "
        f"{found.prefix_tokens_mean:9.0f} / {found.suggested_prefix_tokens_mean:.0f}"
    )


def cleanup() -> None:
    Team.objects.filter(slug=f"bench-stability-{_RUN}").delete()
