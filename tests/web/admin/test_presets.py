"""The admin action that applies a routing preset to agents."""

from __future__ import annotations

import pytest
from django.test import Client

from lens.models import Agent, Team
from memory.core.presets import PROJECT, USER_BACKGROUND
from tests.factories import create_agent

pytestmark = pytest.mark.django_db


def apply(client: Client, action: str, *agents: Agent) -> str:
    response = client.post(
        "/admin/lens/agent/",
        {"action": action, "_selected_action": [a.pk for a in agents]},
        follow=True,
    )
    assert response.status_code == 200
    return response.content.decode()


def test_applying_user_background_adds_its_sections_and_selects_its_spec(
    admin_client: Client, team: Team
) -> None:
    agent = create_agent(team, "wren")  # declares user_profile already, as "auto"
    agent.sections.filter(section_id="user_profile").update(promotion="locked")
    html = apply(admin_client, "apply_preset_user-background", agent)

    agent.refresh_from_db()
    assert agent.routing_spec == USER_BACKGROUND.key
    declared = list(agent.sections.order_by("position").values_list("section_id", "promotion"))
    # The existing declaration keeps the developer's tier; the missing one is appended.
    assert declared == [
        ("user_profile", "locked"),
        ("ground_rules", "locked"),
        ("user_preferences", "guarded"),
    ]
    assert "added sections user_preferences" in html


def test_applying_a_preset_twice_adds_nothing_more(admin_client: Client, team: Team) -> None:
    agent = create_agent(team, "reviewer", {"name": "Reviewer"})
    apply(admin_client, "apply_preset_project", agent)
    html = apply(admin_client, "apply_preset_project", agent)
    ids = list(agent.sections.order_by("position").values_list("section_id", flat=True))
    assert ids == [s.id for s in PROJECT.sections]
    assert "all sections were already declared" in html


def test_every_registered_preset_is_offered_as_an_action(admin_client: Client, team: Team) -> None:
    create_agent(team, "wren")
    html = admin_client.get("/admin/lens/agent/").content.decode()
    assert 'value="apply_preset_user-background"' in html
    assert 'value="apply_preset_project"' in html
