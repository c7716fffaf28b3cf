"""Operations on agents that involve memory (``memory.configuring``: storing a config, applying
a preset), the registry of presets, and listing memories (``memory.queries.memory_page``).
Called directly, without HTTP.
"""

from __future__ import annotations

from typing import Any

import pytest

from lens.actors import Actor
from lens.agents import InvalidSlug, config_of
from lens.core.config import AgentConfig
from lens.models import Agent, AuthoredEntry, Capability, SectionDeclaration, Team
from memory.configuring import apply_preset, store_agent
from memory.core.presets import PROJECT, USER_BACKGROUND
from memory.core.records import MemoryInput
from memory.models import MemoryRecord
from memory.queries import memory_page
from memory.registry import UnknownRoutingSpec, preset_specs
from memory.saving import Saved, save_memory
from memory.search import InvalidQuery
from tests.factories import create_agent
from tests.samples import SAMPLE_CONFIG

pytestmark = pytest.mark.django_db


def config(**changes: Any) -> AgentConfig:
    return AgentConfig.model_validate({**SAMPLE_CONFIG, **changes})


def stored() -> dict[str, int]:
    """How many rows an agent's configuration spans, table by table."""
    return {
        "agents": Agent.objects.count(),
        "sections": SectionDeclaration.objects.count(),
        "entries": AuthoredEntry.objects.count(),
        "capabilities": Capability.objects.count(),
    }


def section_rows(agent: Agent) -> list[tuple[str, str]]:
    return list(agent.sections.order_by("position").values_list("section_id", "promotion"))


# --- store_agent -----------------------------------------------------------------------


def test_storing_a_new_agent_creates_it(team: Team) -> None:
    agent, created = store_agent(team, "wren", config())
    assert created is True
    assert (agent.team, agent.slug, agent.name) == (team, "wren", "Wren")
    assert config_of(agent) == config()
    assert stored() == {"agents": 1, "sections": 2, "entries": 4, "capabilities": 1}


def test_storing_an_existing_agent_replaces_its_whole_config(team: Team) -> None:
    first, _ = store_agent(team, "wren", config())
    replacement = config(
        name="Wren II",
        routing_spec="user-background",
        capabilities=[],
        background={"sections": [{"id": "notes", "title": "Notes", "promotion": "guarded"}]},
    )

    agent, created = store_agent(team, "wren", replacement)

    assert created is False
    assert agent.pk == first.pk
    fresh = Agent.objects.get(pk=agent.pk)
    assert config_of(fresh) == replacement
    assert stored() == {"agents": 1, "sections": 1, "entries": 0, "capabilities": 0}


def test_one_slug_names_different_agents_in_different_teams(team: Team, other_team: Team) -> None:
    ours, _ = store_agent(team, "wren", config())
    theirs, created = store_agent(other_team, "wren", config(name="Other Wren"))
    assert created is True
    assert ours.pk != theirs.pk
    assert Agent.objects.get(pk=ours.pk).name == "Wren"


@pytest.mark.parametrize("slug", ["", "Wren", "-wren", "wr en", "wren/x", "ü", "w" * 65])
def test_a_bad_slug_is_refused_before_anything_is_written(team: Team, slug: str) -> None:
    before = stored()
    with pytest.raises(InvalidSlug) as raised:
        store_agent(team, slug, config())
    assert raised.value.code == "invalid_slug"
    assert stored() == before


def test_a_slug_of_sixty_four_characters_is_accepted(team: Team) -> None:
    assert store_agent(team, "w" * 64, config())[1] is True


def test_an_unknown_routing_spec_is_refused_before_anything_is_written(team: Team) -> None:
    before = stored()
    with pytest.raises(UnknownRoutingSpec) as raised:
        store_agent(team, "wren", config(routing_spec="telepathy"))
    assert raised.value.code == "unknown_routing_spec"
    assert "telepathy" in raised.value.message
    assert raised.value.details == {"known": ["project", "user-background"]}
    assert stored() == before


def test_an_unknown_routing_spec_leaves_an_existing_agent_as_it_was(team: Team) -> None:
    agent, _ = store_agent(team, "wren", config())
    before = stored()
    with pytest.raises(UnknownRoutingSpec):
        store_agent(team, "wren", config(name="Changed", routing_spec="telepathy"))
    assert stored() == before
    assert config_of(Agent.objects.get(pk=agent.pk)) == config()


# --- presets ---------------------------------------------------------------------------


def test_both_shipped_presets_are_listed() -> None:
    presets = {preset.key: preset for preset in preset_specs()}
    assert set(presets) == {"user-background", "project"}
    assert presets["user-background"] is USER_BACKGROUND
    assert presets["project"] is PROJECT


def test_applying_a_preset_adds_only_the_missing_sections_and_selects_its_spec(
    team: Team,
) -> None:
    agent = create_agent(
        team,
        config={
            **SAMPLE_CONFIG,
            "background": {
                "sections": [
                    # Declared already, with the developer's own tier: left as it is.
                    {"id": "user_profile", "title": "Who", "promotion": "locked"},
                    {"id": "ground_rules", "title": "Ground Rules", "promotion": "locked"},
                ]
            },
        },
    )

    added = apply_preset(agent, USER_BACKGROUND).added

    assert added == ["user_preferences"]
    fresh = Agent.objects.get(pk=agent.pk)
    assert fresh.routing_spec == "user-background"
    assert section_rows(fresh) == [
        ("user_profile", "locked"),
        ("ground_rules", "locked"),
        ("user_preferences", "guarded"),
    ]
    assert fresh.sections.get(section_id="user_profile").title == "Who"
    assert fresh.sections.get(section_id="user_preferences").title == "User Preferences"


def test_applying_a_preset_twice_adds_nothing_the_second_time(team: Team) -> None:
    agent = create_agent(team)
    apply_preset(agent, PROJECT)
    before = stored()
    assert apply_preset(agent, PROJECT).added == []
    assert stored() == before


def test_a_preset_applied_to_an_agent_without_sections_declares_them_all_in_order(
    team: Team,
) -> None:
    agent = create_agent(team, config={**SAMPLE_CONFIG, "background": {"sections": []}})
    assert apply_preset(agent, PROJECT).added == [s.id for s in PROJECT.sections]
    assert section_rows(agent) == [(s.id, s.promotion) for s in PROJECT.sections]
    assert config_of(Agent.objects.get(pk=agent.pk)).routing_spec == "project"


def test_applying_another_preset_switches_the_spec_and_keeps_earlier_sections(
    team: Team,
) -> None:
    agent = create_agent(team)
    apply_preset(agent, USER_BACKGROUND)
    apply_preset(agent, PROJECT)
    fresh = Agent.objects.get(pk=agent.pk)
    assert fresh.routing_spec == "project"
    ids = [section_id for section_id, _tier in section_rows(fresh)]
    assert {"user_profile", "user_preferences", "team_context", "project_state"} <= set(ids)
    assert len(ids) == len(set(ids))


# --- memory_page -----------------------------------------------------------------------


def remember(agent: Agent, content: str, kind: str = "fact") -> str:
    saved = save_memory(agent, MemoryInput(kind=kind, content=content), Actor(label="test"))
    assert isinstance(saved, Saved)
    return saved.id


def test_a_query_lists_the_matches_and_a_query_without_words_lists_nothing(team: Team) -> None:
    agent = create_agent(team)
    tea = remember(agent, "Likes tea.")
    remember(agent, "Likes coffee.")
    assert [view.id for view in memory_page(agent, None, 50, 0, query="TEA").memories] == [tea]
    assert memory_page(agent, None, 50, 0, query="").memories == []
    assert memory_page(agent, None, 50, 0, query='*"-:').memories == []


def test_an_overlong_query_is_refused(team: Team) -> None:
    agent = create_agent(team)
    with pytest.raises(InvalidQuery) as raised:
        memory_page(agent, None, 50, 0, query="x" * 4001)
    assert raised.value.code == "invalid_query"


def test_a_page_lists_memories_newest_first(team: Team) -> None:
    agent = create_agent(team)
    ids = [remember(agent, f"Memory {n}.") for n in range(3)]
    page = memory_page(agent, None, 50, 0)
    assert [view.id for view in page.memories] == ids[::-1]
    assert (page.skipped, page.next_offset) == (0, None)


def test_a_row_that_no_longer_parses_is_skipped_and_counted(team: Team) -> None:
    agent = create_agent(team)
    first, broken, last = (remember(agent, f"Memory {n}.") for n in range(3))
    assert MemoryRecord.objects.filter(pk=broken).update(kind="BAD KIND") == 1

    page = memory_page(agent, None, 50, 0)

    assert [view.id for view in page.memories] == [last, first]
    assert page.skipped == 1


def test_a_skipped_row_still_takes_its_place_on_its_page(team: Team) -> None:
    agent = create_agent(team)
    ids = [remember(agent, f"Memory {n}.") for n in range(4)]
    MemoryRecord.objects.filter(pk=ids[2]).update(content="")

    first = memory_page(agent, None, 2, 0)
    second = memory_page(agent, None, 2, 2)

    assert ([v.id for v in first.memories], first.skipped, first.next_offset) == ([ids[3]], 1, 2)
    assert ([v.id for v in second.memories], second.skipped, second.next_offset) == (
        [ids[1], ids[0]],
        0,
        None,
    )


def test_a_page_filters_by_kind_and_never_shows_another_agents_memories(team: Team) -> None:
    agent = create_agent(team)
    other = create_agent(team, "other")
    fact = remember(agent, "A fact.")
    remember(agent, "An episode.", kind="episode")
    remember(other, "Someone else's fact.")
    assert [view.id for view in memory_page(agent, "fact", 50, 0).memories] == [fact]
