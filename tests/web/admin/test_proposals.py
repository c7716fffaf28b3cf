"""The admin on a protected agent (SPEC §14): every change made here — the agent form
and its inlines, a section's page, deleting sections, a preset — is undone and kept as
a proposal; the admin says so in words, links the proposal and logs no change that did
not happen.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.test import Client

from lens.actors import Actor
from lens.agents import config_of, with_config
from lens.models import Agent, Proposal, Revision, SectionDeclaration, Team, Via
from memory.configuring import store_config
from tests.factories import create_agent
from tests.pages import (
    FormData,
    add_row,
    admin_agent_url,
    admin_section_url,
    form_data,
    put,
    row_of,
    section_row,
)

pytestmark = pytest.mark.django_db

PROTECTED = "This agent is protected: your change was proposed, not applied."


def protect(agent: Agent) -> Agent:
    current = config_of(with_config(Agent.objects.filter(pk=agent.pk)).get())
    store_config(
        agent.team,
        agent.slug,
        current.model_copy(update={"protected": True}),
        actor=Actor(label="root"),
        via=Via.ADMIN,
    )
    agent.refresh_from_db()
    return agent


@pytest.fixture
def guarded(agent: Agent) -> Agent:
    return protect(agent)


def state(agent: Agent) -> tuple[Any, ...]:
    agent.refresh_from_db()
    return (
        list(Revision.objects.filter(agent=agent).values_list("number", "config_id")),
        (agent.name, agent.persona, agent.protected, agent.routing_spec),
        list(
            SectionDeclaration.objects.filter(agent=agent)
            .order_by("position")
            .values_list("section_id", "title", "promotion", "position")
        ),
        sorted(
            SectionDeclaration.objects.filter(agent=agent).values_list(
                "entries__key", "entries__value"
            ),
            key=repr,
        ),
    )


def only_proposal(agent: Agent) -> Proposal:
    [proposal] = Proposal.objects.filter(agent=agent)
    return proposal


def assert_proposed(response: Any, agent: Agent) -> Proposal:
    proposal = only_proposal(agent)
    page = response.content.decode()
    assert PROTECTED in page
    assert f'href="/proposals/{proposal.pk}/"' in page
    assert "was changed successfully" not in page
    assert proposal.proposed_by == "root"
    assert proposal.status == "pending"
    return proposal


def test_an_edit_in_the_agent_form_is_proposed_not_applied(
    admin_client: Client, guarded: Agent
) -> None:
    form = form_data(admin_client, admin_agent_url(guarded), "agent_form")
    before = state(guarded)
    logged = LogEntry.objects.count()
    put(form, "persona", "You are Wren, briefly.")
    add_row(form, "sections", **section_row(guarded, "notes"))
    response = admin_client.post(admin_agent_url(guarded), form, follow=True)
    assert response.status_code == 200
    proposal = assert_proposed(response, guarded)
    assert state(guarded) == before
    assert LogEntry.objects.count() == logged
    assert proposal.via == "admin"
    assert proposal.base_revision == 2
    assert proposal.summary == [
        {"change": "field_changed", "field": "persona"},
        {"change": "section_added", "section": "notes"},
    ]
    # The redirect shows the agent as it still reads.
    assert "You are Wren, briefly." not in response.content.decode()


def test_unticking_protected_in_the_admin_is_proposed(admin_client: Client, guarded: Agent) -> None:
    form = form_data(admin_client, admin_agent_url(guarded), "agent_form")
    form.pop("protected", None)
    before = state(guarded)
    response = admin_client.post(admin_agent_url(guarded), form, follow=True)
    proposal = assert_proposed(response, guarded)
    assert proposal.summary == [{"change": "field_changed", "field": "protected"}]
    assert state(guarded) == before


def test_ticking_protected_in_the_admin_takes_effect(
    admin_client: Client, agent: Agent, agent_form: FormData
) -> None:
    put(agent_form, "protected", "on")
    response = admin_client.post(admin_agent_url(agent), agent_form, follow=True)
    assert "Wren: revision 2 recorded." in response.content.decode()
    agent.refresh_from_db()
    assert agent.protected
    assert not Proposal.objects.exists()


def test_saving_a_protected_agent_unchanged_proposes_nothing(
    admin_client: Client, guarded: Agent
) -> None:
    form = form_data(admin_client, admin_agent_url(guarded), "agent_form")
    response = admin_client.post(admin_agent_url(guarded), form, follow=True)
    assert response.status_code == 200
    assert PROTECTED not in response.content.decode()
    assert not Proposal.objects.exists()


def test_an_entry_edited_on_a_protected_section_page_is_proposed(
    admin_client: Client, guarded: Agent
) -> None:
    ground_rules = guarded.sections.get(section_id="ground_rules")
    form = form_data(admin_client, admin_section_url(ground_rules), "sectiondeclaration_form")
    before = state(guarded)
    row = row_of(form, "entries", "key", "check_in_hour")
    put(form, f"entries-{row}-value_text", "10")
    response = admin_client.post(admin_section_url(ground_rules), form, follow=True)
    proposal = assert_proposed(response, guarded)
    assert proposal.summary == [
        {"change": "entry_changed", "section": "ground_rules", "key": "check_in_hour"}
    ]
    assert state(guarded) == before


def test_a_section_added_on_its_own_page_to_a_protected_agent_is_proposed(
    admin_client: Client, guarded: Agent
) -> None:
    before = state(guarded)
    response = admin_client.post(
        "/admin/lens/sectiondeclaration/add/",
        {
            "agent": guarded.pk,
            "section_id": "extra",
            "title": "Extra",
            "promotion": "auto",
            "entries-TOTAL_FORMS": "0",
            "entries-INITIAL_FORMS": "0",
            "entries-MIN_NUM_FORMS": "0",
            "entries-MAX_NUM_FORMS": "1000",
        },
        follow=True,
    )
    proposal = assert_proposed(response, guarded)
    assert proposal.summary == [{"change": "section_added", "section": "extra"}]
    assert state(guarded) == before


def test_deleting_a_protected_agents_section_is_proposed(
    admin_client: Client, guarded: Agent
) -> None:
    ground_rules = guarded.sections.get(section_id="ground_rules")
    before = state(guarded)
    logged = LogEntry.objects.count()
    url = f"/admin/lens/sectiondeclaration/{ground_rules.pk}/delete/"
    response = admin_client.post(url, {"post": "yes"}, follow=True)
    proposal = assert_proposed(response, guarded)
    assert proposal.summary == [{"change": "section_removed", "section": "ground_rules"}]
    assert state(guarded) == before
    assert LogEntry.objects.count() == logged


def test_bulk_delete_across_a_protected_and_an_open_agent(
    admin_client: Client, guarded: Agent, team: Team
) -> None:
    robin = create_agent(team, "robin")
    before = state(guarded)
    sections = list(SectionDeclaration.objects.filter(agent__in=[guarded, robin]))
    response = admin_client.post(
        "/admin/lens/sectiondeclaration/",
        {"action": "delete_selected", "_selected_action": [s.pk for s in sections], "post": "yes"},
        follow=True,
    )
    assert response.status_code == 200
    assert state(guarded) == before
    assert {c["change"] for c in only_proposal(guarded).summary} == {"section_removed"}
    assert not robin.sections.exists()
    assert Revision.objects.filter(agent=robin).count() == 2


def test_a_preset_on_a_protected_agent_is_proposed(admin_client: Client, guarded: Agent) -> None:
    before = state(guarded)
    response = admin_client.post(
        "/admin/lens/agent/",
        {"action": "apply_preset_user-background", "_selected_action": [guarded.pk]},
        follow=True,
    )
    proposal = assert_proposed(response, guarded)
    assert {"change": "routing_spec_changed", "from": None, "to": "user-background"} in (
        proposal.summary
    )
    assert state(guarded) == before
