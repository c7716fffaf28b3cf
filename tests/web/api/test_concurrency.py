"""Concurrent writers against the real database (SQLite file in WAL mode, PostgreSQL)."""

from __future__ import annotations

from typing import Any

import pytest

from lens.models import Agent, ApiToken, SectionDeclaration, Team
from tests.api_calls import ApiClient
from tests.factories import race
from tests.samples import SAMPLE_CONFIG

pytestmark = pytest.mark.django_db(transaction=True)

WRITERS = 6


def config_for(n: int) -> dict[str, Any]:
    sections = [
        {
            "id": f"writer_{n}_{s}",
            "title": f"Writer {n} section {s}",
            "entries": [{"key": f"k{e}", "value": f"writer {n}"} for e in range(5)],
        }
        for s in range(3)
    ]
    return {**SAMPLE_CONFIG, "name": f"Writer {n}", "background": {"sections": sections}}


def test_concurrent_puts_of_one_new_slug_make_one_agent_with_one_whole_config() -> None:
    team = Team.objects.create(slug="acme", name="Acme")
    _token, raw = ApiToken.objects.issue(team)

    statuses = race(
        WRITERS, lambda n: ApiClient(raw).put("/api/agents/shared", config_for(n)).status_code
    )

    assert sorted(statuses) == [200] * (WRITERS - 1) + [201]
    agent = Agent.objects.get(team=team, slug="shared")
    winner = int(agent.name.removeprefix("Writer "))
    # The stored declarations are one writer's whole config, never a mix of several.
    ids = list(SectionDeclaration.objects.filter(agent=agent).values_list("section_id", flat=True))
    assert ids == [f"writer_{winner}_{s}" for s in range(3)]
    got = ApiClient(raw).get("/api/agents/shared").json()
    assert got["background"] == {
        "sections": [
            {
                **section,
                "promotion": "locked",
                "entries": [{**entry, "memory_ids": []} for entry in section["entries"]],
            }
            for section in config_for(winner)["background"]["sections"]
        ]
    }
