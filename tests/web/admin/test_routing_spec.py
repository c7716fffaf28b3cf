"""The agent's routing spec is chosen from the registered specs (SPEC §5.3), and a spec
that is no longer registered still shows, with what to do about it."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from lens.models import Agent, Team
from tests.pages import Dom, admin_agent_url, dom, form_data, inside, put

pytestmark = pytest.mark.django_db

USER_BACKGROUND_ONLY = ["memory.core.presets.USER_BACKGROUND"]


def options(page: Dom) -> list[tuple[str, str, bool]]:
    """(value, text, selected) of each option of the routing spec select."""
    select = page.one("name", "routing_spec", tag="select")
    return [
        (o.get("value") or "", o.squashed, "selected" in o.attrs) for o in inside(select, "option")
    ]


def test_the_select_lists_none_and_every_registered_spec_with_its_version(
    admin_client: Client, agent: Agent
) -> None:
    assert options(dom(admin_client.get(admin_agent_url(agent)))) == [
        ("", "none", True),
        ("project", "project (version 1)", False),
        ("user-background", "user-background (version 1)", False),
    ]


def test_the_choices_come_from_the_registry_when_the_page_is_drawn(
    admin_client: Client, agent: Agent, settings: Any
) -> None:
    settings.MEMORY_ROUTING_SPECS = USER_BACKGROUND_ONLY
    assert [value for value, _, _ in options(dom(admin_client.get(admin_agent_url(agent))))] == [
        "",
        "user-background",
    ]


def test_the_add_page_offers_the_same_select(admin_client: Client, team: Team) -> None:
    page = dom(admin_client.get("/admin/lens/agent/add/"))
    assert [value for value, _, _ in options(page)] == ["", "project", "user-background"]


@pytest.mark.parametrize(("chosen", "stored"), [("project", "project"), ("", None)])
def test_choosing_from_the_select_saves(
    admin_client: Client, agent: Agent, chosen: str, stored: str | None
) -> None:
    agent.routing_spec = "user-background"
    agent.save()
    data = form_data(admin_client, admin_agent_url(agent), "agent_form")
    assert data["routing_spec"] == ["user-background"]
    put(data, "routing_spec", chosen)
    assert admin_client.post(admin_agent_url(agent), data).status_code == 302
    agent.refresh_from_db()
    assert agent.routing_spec == stored


def test_a_spec_no_longer_registered_still_shows_and_says_what_to_do(
    admin_client: Client, agent: Agent
) -> None:
    Agent.objects.filter(pk=agent.pk).update(routing_spec="retired")
    page = dom(admin_client.get(admin_agent_url(agent)))
    assert ("retired", "retired (no longer registered)", True) in options(page)
    help_text = page.one("id", "id_routing_spec_helptext")
    assert "'retired' is no longer registered" in help_text.squashed


def test_saving_with_a_spec_no_longer_registered_is_refused_with_the_reason(
    admin_client: Client, agent: Agent
) -> None:
    Agent.objects.filter(pk=agent.pk).update(routing_spec="retired")
    data = form_data(admin_client, admin_agent_url(agent), "agent_form")
    put(data, "name", "Renamed")
    response = admin_client.post(admin_agent_url(agent), data)
    assert response.status_code == 200
    (message,) = response.context["adminform"].form.errors["routing_spec"]
    assert message.startswith("Unknown routing spec 'retired' (known: project, user-background).")
    assert "no longer registered: choose a registered one or none" in message
    agent.refresh_from_db()
    assert (agent.name, agent.routing_spec) == ("Wren", "retired")


def test_a_posted_key_outside_the_registry_gets_the_registry_refusal(
    admin_client: Client, agent: Agent
) -> None:
    data = form_data(admin_client, admin_agent_url(agent), "agent_form")
    put(data, "routing_spec", "nope")
    response = admin_client.post(admin_agent_url(agent), data)
    assert response.context["adminform"].form.errors["routing_spec"] == [
        "Unknown routing spec 'nope' (known: project, user-background)."
    ]
    agent.refresh_from_db()
    assert agent.routing_spec is None
