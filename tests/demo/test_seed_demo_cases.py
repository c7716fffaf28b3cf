"""``seed_demo``'s routing cases: 20 to 40 for each demo agent, a few honest failures
among them, added only where an agent has none (what people changed stays theirs)."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from lens.actors import SYSTEM
from lens.models import Agent
from memory.core.routing_eval import CaseInput
from memory.models import RoutingCase
from memory.routing_cases import eval_agent, replace_cases

pytestmark = pytest.mark.django_db


def seed(settings: Any) -> str:
    settings.DEBUG = True
    out = StringIO()
    call_command("seed_demo", stdout=out)
    return out.getvalue()


def test_each_demo_agent_has_cases_and_a_story_of_failures(settings: Any) -> None:
    said = seed(settings)
    scores = {}
    for agent in Agent.objects.filter(team__slug="demo"):
        found = eval_agent(Agent.objects.get(pk=agent.pk))
        assert 20 <= found.cases <= 40, agent.slug
        assert 1 <= len(found.failures) <= 4, agent.slug
        scores[agent.slug] = (found.correct, found.cases)
    assert scores == {"wren": (21, 24), "sentinel": (18, 21), "atlas": (18, 20)}
    assert "65 new routing cases" in said
    assert "0 new routing cases" in seed(settings)


def test_cases_people_changed_are_left_as_they_are(settings: Any) -> None:
    seed(settings)
    wren = Agent.objects.get(team__slug="demo", slug="wren")
    mine = CaseInput.model_validate(
        {"name": "mine", "kind": "fact", "content": "x", "expect": {"section": None}}
    )
    replace_cases(wren, [mine], SYSTEM)
    seed(settings)
    assert list(RoutingCase.objects.filter(agent=wren).values_list("name", flat=True)) == ["mine"]
