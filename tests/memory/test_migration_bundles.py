"""A migrated agent's bundle (SPEC §15, §18.3): the rows a migration replaced and its
``memory.migrated`` audit events travel, and the import reproduces them, so the
composition as of a moment before the migration is the same there too."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from lens.actors import Actor
from lens.agents import get_agent
from lens.models import Membership, Team
from memory.as_of import compose_as_of
from memory.bundles.exporting import export_bundle
from memory.bundles.importing import import_bundle
from memory.migration import apply_migration, migration_plan
from memory.models import MemoryEvent, MigratedPromotion
from tests.factories import agent_state, migration_story

pytestmark = pytest.mark.django_db


def test_a_migrated_agent_round_trips_with_its_history(
    team: Team, settings: Any, reviewer: User, other_team: Team, tmp_path: Path
) -> None:
    agent, ids = migration_story(team, settings)
    moment = MemoryEvent.objects.order_by("-at").values_list("at", flat=True).first()
    assert moment is not None
    apply_migration(
        agent, migration_plan(agent).sha256, actor=Actor.for_user(reviewer), approve_guarded=True
    )
    agent = get_agent(team, "wren")
    before = agent_state(agent)
    then = compose_as_of(agent, moment).prompt.text
    assert len(before["migrated_promotions"]) == 3
    path = tmp_path / "wren.gz"
    with path.open("wb") as out:
        export_bundle(agent).write_to(out)
    lines = [json.loads(line) for line in gzip.decompress(path.read_bytes()).splitlines()]
    assert lines[0]["counts"]["migrated_promotion"] == 3
    audit = [line["event"]["action"] for line in lines[1:] if line["type"] == "audit"]
    assert audit.count("memory.migrated") == 3
    agent.delete()
    assert MigratedPromotion.objects.count() == 0
    Membership.objects.create(team=other_team, user=reviewer)

    imported = import_bundle(path, other_team).agent

    assert agent_state(imported) == before
    assert compose_as_of(get_agent(other_team, "wren"), moment).prompt.text == then
