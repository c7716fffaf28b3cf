"""A bundle carries the model an agent declares (SPEC §15, lens.core.config): in its
declarations and in every revision's config, byte for byte, so an imported agent has the
same revisions and hashes and the import records no revision of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from lens.agents import config_of
from lens.models import Agent, Revision, Team
from memory.bundles.exporting import export_bundle
from memory.bundles.importing import import_bundle
from tests.factories import agent_state, create_agent, sample_config

pytestmark = pytest.mark.django_db


def stored_revisions(agent: Agent) -> list[tuple[int, str, str]]:
    rows = Revision.objects.filter(agent=agent).select_related("config").order_by("number")
    return [(row.number, row.config_id, row.config.text) for row in rows]


def test_an_agents_model_and_its_history_travel_in_a_bundle(
    team: Team, other_team: Team, tmp_path: Path
) -> None:
    config = sample_config()
    create_agent(team, "wren", config)  # revision 1: no model
    create_agent(team, "wren", {**config, "model": "gpt-4o"})
    agent = create_agent(team, "wren", {**config, "model": "claude-sonnet-4-20250514"})
    before, revisions = agent_state(agent), stored_revisions(agent)
    assert [text.count('"model"') for _n, _d, text in revisions] == [0, 1, 1]
    path = tmp_path / "wren.gz"
    with path.open("wb") as out:
        export_bundle(agent).write_to(out)
    agent.delete()

    imported = import_bundle(path, other_team)

    assert (imported.revision, imported.recorded_revision) == (3, False)
    assert agent_state(imported.agent) == before
    assert stored_revisions(imported.agent) == revisions
    assert config_of(imported.agent).model == "claude-sonnet-4-20250514"
    assert Agent.objects.get(pk=imported.agent.pk).model == "claude-sonnet-4-20250514"
