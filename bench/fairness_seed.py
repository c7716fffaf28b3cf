"""Prepare a database for the fairness benchmark (``bench.fairness``): run in its own
process with ``DATABASE_URL`` pointing at the scratch database the server will use.

Migrates, then creates team A with the 40-section agent delivered 41 times (its first
Background section new each time, as ``bench.stability_bench`` does), and team B with a
few small agents to list. Prints each team's API token as one JSON line.
"""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lens.settings")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402

from bench.common import analyze  # noqa: E402
from bench.data import big_config  # noqa: E402
from bench.stability_bench import ticked  # noqa: E402
from lens.actors import Actor  # noqa: E402
from lens.core.config import AgentConfig  # noqa: E402
from lens.models import Agent, ApiToken, Team  # noqa: E402
from memory.configuring import store_agent, store_config  # noqa: E402
from memory.deliveries.ledger import deliver  # noqa: E402

BIG = "big"
DELIVERIES = 41
SMALL_AGENTS = 5


def small(n: int) -> AgentConfig:
    section = {"id": "about", "title": "About", "entries": [{"key": "k", "value": "A fact."}]}
    return AgentConfig.model_validate(
        {"name": f"Agent {n}", "persona": "You help.", "background": {"sections": [section]}}
    )


def seed() -> dict[str, str]:
    call_command("migrate", verbosity=0)
    busy = Team.objects.create(slug="team-a", name="Team A")
    config = big_config()
    agent, _ = store_agent(busy, BIG, config)
    runtime = Actor(label="bench runtime")
    for tick in range(DELIVERIES):
        store_config(busy, BIG, ticked(config, tick))
        deliver(Agent.objects.get(pk=agent.pk), runtime)
    other = Team.objects.create(slug="team-b", name="Team B")
    for n in range(SMALL_AGENTS):
        store_agent(other, f"agent-{n}", small(n))
    analyze()
    return {
        "busy_token": ApiToken.objects.issue(busy, name="bench")[1],
        "other_token": ApiToken.objects.issue(other, name="bench")[1],
        "big": BIG,
    }


if __name__ == "__main__":
    print(json.dumps(seed()))
    sys.exit(0)
