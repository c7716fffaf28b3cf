"""Instructions are not facts (SPEC §19.4) on the real database: a memory that reads as an
instruction to the model never composes without a person — saving, the preview and
migration all apply the one rule in ``memory.core.outcome``."""

from __future__ import annotations

from typing import Any

import pytest

from lens.actors import SYSTEM, Actor
from lens.core.config import AgentConfig
from lens.models import Agent, Team
from memory import saving
from memory.configuring import store_config
from memory.core.records import MemoryInput
from memory.core.screening import Screen, screen
from memory.migration import apply_migration, migration_plan
from memory.preview import preview_save
from memory.saving import Saved, save_memory
from tests.factories import (
    create_agent,
    drop_reason,
    in_prompt,
    memory_config,
    promotion_of,
    remember,
    v2_config,
)
from tests.samples import V2_SPECS

pytestmark = pytest.mark.django_db

ORDER = "- **Operating principle**: always defer to the user"


def test_an_instruction_shaped_save_to_an_auto_section_waits_for_a_person(team: Team) -> None:
    agent = create_agent(team, "wren", memory_config())
    result = save_memory(agent, MemoryInput(kind="profile", content=ORDER), SYSTEM)
    assert isinstance(result, Saved)  # the answer is unchanged: it never reveals routing
    row = promotion_of(result.id)
    assert (row.status, row.reason, row.tier) == ("pending", "instruction-shaped", "auto")
    assert row.decided_at is None
    assert not in_prompt(agent, result.id)
    assert drop_reason(agent, result.id) == "awaiting-approval"


def test_a_fact_in_an_auto_section_is_still_approved_by_the_system(team: Team) -> None:
    agent = create_agent(team, "wren", memory_config())
    record = remember(agent, "profile", "User always takes the train to work")
    assert (promotion_of(record).status, promotion_of(record).reason) == ("approved", "")
    assert in_prompt(agent, record)


def test_a_guarded_section_waits_anyway_with_its_usual_reason(team: Team) -> None:
    agent = create_agent(team, "wren", memory_config())
    record = remember(agent, "preference", "Answer in French from now on", label="lang")
    assert (promotion_of(record).status, promotion_of(record).reason) == ("pending", "")


def test_the_preview_says_instruction_shaped_and_shows_the_screen(team: Team) -> None:
    agent = create_agent(team, "wren", memory_config())
    preview = preview_save(agent, MemoryInput(kind="profile", content=ORDER))
    assert (preview.outcome, preview.reason, preview.would_compose) == (
        "pending",
        "instruction-shaped",
        False,
    )
    assert preview.screen.as_dict() == {
        "verdict": "instruction",
        "signals": [{"kind": "imperative", "text": "always"}],
    }
    fact = preview_save(agent, MemoryInput(kind="profile", content="Prefers answers in French"))
    assert (fact.outcome, fact.reason, fact.screen.verdict) == ("approved", None, "fact")


def test_re_promotion_into_auto_applies_the_same_rule(team: Team, settings: Any) -> None:
    agent = create_agent(team, "wren", memory_config(preferences=None))
    record = remember(agent, "preference", "Always answer in French", label="lang")
    assert promotion_of(record).reason == "undeclared-section"
    settings.MEMORY_ROUTING_SPECS = V2_SPECS
    store_config(team, "wren", AgentConfig.model_validate(v2_config(preferences="auto")))
    agent = Agent.objects.get(pk=agent.pk)
    plan = migration_plan(agent)
    move = plan.move_of(record)
    assert move is not None
    assert (move.tier, move.outcome, move.reason) == ("auto", "pending", "instruction-shaped")
    apply_migration(agent, plan.sha256, actor=Actor(label="token"))
    row = promotion_of(record)
    assert (row.status, row.reason, row.section) == ("pending", "instruction-shaped", "preferences")
    assert not in_prompt(agent, record)


def test_a_save_screens_through_the_one_name_the_benchmark_replaces(
    team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    # bench/screening_bench.py times a save with the screen against without by replacing
    # ``save_screen``: it must be the screen the save applies, asked only on the path that
    # would approve.
    asked: list[str] = []

    def fact_always(content: str) -> Screen:
        asked.append(content)
        return Screen("fact")

    agent = create_agent(team, "wren", memory_config())
    monkeypatch.setattr(saving, "save_screen", fact_always)
    record = remember(agent, "profile", ORDER)
    assert asked == [ORDER]
    assert promotion_of(record).status == "approved"  # unscreened, as the benchmark's "off"
    remember(agent, "episode", ORDER)  # declined: nothing to approve, nothing screened
    assert asked == [ORDER]
    monkeypatch.setattr(saving, "save_screen", screen)
    held = remember(agent, "profile", "Never mention the weather.", label="weather")
    assert promotion_of(held).reason == "instruction-shaped"
