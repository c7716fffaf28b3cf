"""Validity windows travel in bundles (SPEC §15, §19.2): each memory line carries its
``valid_until`` as it stands and the reviewer's changes travel as ``validity`` events, so
an import reproduces the window, its history, and the prompt as of any moment."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from lens.actors import Actor
from lens.agents import get_agent
from lens.models import Agent, Membership, Team
from memory.as_of import compose_as_of
from memory.bundles.exporting import export_bundle
from memory.bundles.importing import import_bundle
from memory.models import EventKind, MemoryEvent, MemoryRecord
from memory.validity import change_validity
from tests.api_calls import ApiClient, memory_body, post_memory
from tests.factories import agent_state, bundle_story, deliver_through

pytestmark = pytest.mark.django_db


def test_an_import_reproduces_each_window_and_its_changes(
    team: Team, api: ApiClient, reviewer: User, other_team: Team, tmp_path: Path
) -> None:
    ids = bundle_story(team, api, reviewer)
    wren = get_agent(team, "wren")
    trip = post_memory(
        api,
        memory_body(
            "profile",
            "In Lisbon this week.",
            label="trip",
            valid_until=(timezone.now() + timedelta(days=1)).isoformat(),
        ),
    )
    saved_at = timezone.now()
    change_validity(trip, timezone.now() + timedelta(days=4), Actor.for_user(reviewer))
    change_validity(ids["city"], timezone.now() + timedelta(hours=5), Actor.for_user(reviewer))
    deliver_through(api)
    before = agent_state(wren)
    moments = [saved_at, timezone.now() + timedelta(days=2), timezone.now() + timedelta(days=5)]
    prompts = [compose_as_of(wren, moment).prompt.text for moment in moments]
    path = tmp_path / "wren.gz"
    bundle = export_bundle(wren)
    with path.open("wb") as out:
        bundle.write_to(out)
    wren.delete()
    Membership.objects.create(team=other_team, user=reviewer)

    agent: Agent = import_bundle(path, other_team).agent

    assert agent_state(agent) == before
    assert MemoryRecord.objects.get(pk=trip).valid_until is not None
    assert MemoryEvent.objects.filter(record_id=trip, kind=EventKind.VALIDITY).count() == 1
    assert [compose_as_of(agent, moment).prompt.text for moment in moments] == prompts
    # Five days on, the trip and the city are gone from the prompt; two days on, only
    # the city (its window was five hours).
    assert "Lisbon this week" not in prompts[2]
    assert "Lisbon this week" in prompts[1]
