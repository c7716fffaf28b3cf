"""The admin writes a revision for every change of an agent's declarations (SPEC §14):
creating an agent, the agent form and each of its inlines (sections, capabilities,
awareness sources, and their move arrows), a section's own page (adding one, its
entries), deleting sections, applying a preset. A save that changes nothing, or a
refused one, writes none.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from lens.models import Agent, Revision, SectionDeclaration, Team
from lens.revisions import stored_config
from tests.factories import create_agent
from tests.pages import (
    FormData,
    add_row,
    admin_agent_url,
    admin_section_url,
    assert_refused,
    new_section_page,
    put,
    row_of,
    section_row,
)
from tests.web.admin.forms import new_agent_form

pytestmark = pytest.mark.django_db


def newest(agent: Agent) -> Revision:
    return Revision.objects.filter(agent=agent).order_by("-number").first() or pytest.fail(
        "no revision"
    )


def summary(agent: Agent) -> list[dict[str, Any]]:
    changes: list[dict[str, Any]] = newest(agent).summary
    return changes


def test_the_agent_starts_at_revision_1(agent: Agent) -> None:
    assert newest(agent).number == 1


def test_creating_an_agent_in_the_admin_is_its_revision_1(admin_client: Client, team: Team) -> None:
    data = new_agent_form(admin_client, team)
    put(data, "persona", "You are new here.")
    response = admin_client.post("/admin/lens/agent/add/", data, follow=True)
    assert response.status_code == 200
    agent = Agent.objects.get(team=team, slug="fresh")
    (row,) = Revision.objects.filter(agent=agent)
    assert (row.number, row.actor, row.via, row.approved_by) == (1, "root", "admin", None)
    assert row.summary == [
        {"change": "section_added", "section": "first"},
        {"change": "section_added", "section": "second"},
    ]
    assert stored_config(row).persona == "You are new here."


def test_saving_the_unchanged_agent_form_writes_no_revision(
    admin_client: Client, agent: Agent, agent_form: FormData
) -> None:
    assert admin_client.post(admin_agent_url(agent), agent_form).status_code == 302
    assert newest(agent).number == 1


def test_an_edit_in_the_agent_form_is_a_revision_by_the_person(
    admin_client: Client, agent: Agent, agent_form: FormData
) -> None:
    put(agent_form, "persona", "You are Wren, briefly.")
    add_row(agent_form, "sections", **section_row(agent, "notes"))
    response = admin_client.post(admin_agent_url(agent), agent_form, follow=True)
    assert response.status_code == 200
    assert "Wren: revision 2 recorded." in response.content.decode()
    row = newest(agent)
    assert (row.number, row.actor, row.via, row.approved_by) == (2, "root", "admin", None)
    assert row.summary == [
        {"change": "field_changed", "field": "persona"},
        {"change": "section_added", "section": "notes"},
    ]
    assert stored_config(row).persona == "You are Wren, briefly."


def test_a_capability_edited_in_its_inline_is_a_revision(
    admin_client: Client, agent: Agent, agent_form: FormData
) -> None:
    row = row_of(agent_form, "capabilities", "name", "memory_save")
    put(agent_form, f"capabilities-{row}-description", "Save what matters.")
    assert admin_client.post(admin_agent_url(agent), agent_form).status_code == 302
    row_written = newest(agent)
    assert (row_written.number, row_written.via) == (2, "admin")
    assert row_written.summary == [{"change": "field_changed", "field": "capabilities"}]
    assert stored_config(row_written).capabilities[0].description == "Save what matters."


def test_an_awareness_source_added_in_its_inline_is_a_revision(
    admin_client: Client, agent: Agent, agent_form: FormData
) -> None:
    add_row(
        agent_form,
        "awareness_sources",
        name="Mail",
        description="The inbox",
        access_method="tool",
        position="",
        id="",
    )
    assert admin_client.post(admin_agent_url(agent), agent_form).status_code == 302
    assert summary(agent) == [{"change": "field_changed", "field": "awareness"}]
    assert [a.name for a in stored_config(newest(agent)).awareness] == ["Calendar", "Mail"]


def test_a_section_moved_with_its_arrow_is_a_revision_that_says_so(
    admin_client: Client, agent: Agent, agent_form: FormData
) -> None:
    order = list(agent.sections.order_by("position").values_list("section_id", flat=True))
    # What pressing the second row's up arrow submits (without JavaScript).
    response = admin_client.post(admin_agent_url(agent), {**agent_form, "_move": ["sections-1:up"]})
    assert response.status_code == 302
    assert newest(agent).number == 2
    assert summary(agent) == [{"change": "section_moved", "section": order[1]}]
    moved = [s.id for s in stored_config(newest(agent)).background.sections]
    assert moved == [order[1], order[0]]


def test_a_section_added_on_its_own_page_is_a_revision(admin_client: Client, agent: Agent) -> None:
    assert not agent.protected
    response = admin_client.post(
        "/admin/lens/sectiondeclaration/add/", new_section_page(agent, "later", "Later")
    )
    assert response.status_code == 302
    row = newest(agent)
    assert (row.number, row.actor, row.via) == (2, "root", "admin")
    assert row.summary == [{"change": "section_added", "section": "later"}]


def test_saving_the_unchanged_section_page_writes_no_revision(
    admin_client: Client,
    agent: Agent,
    ground_rules: SectionDeclaration,
    section_form: FormData,
) -> None:
    assert admin_client.post(admin_section_url(ground_rules), section_form).status_code == 302
    assert Revision.objects.filter(agent=agent).count() == 1


def test_a_refused_agent_form_writes_no_revision(
    admin_client: Client, agent: Agent, agent_form: FormData
) -> None:
    put(agent_form, "name", " ")
    assert_refused(admin_client.post(admin_agent_url(agent), agent_form), "This field is required")
    assert newest(agent).number == 1


def test_an_entry_edited_on_the_section_page_is_a_revision(
    admin_client: Client,
    agent: Agent,
    ground_rules: SectionDeclaration,
    section_form: FormData,
) -> None:
    row = row_of(section_form, "entries", "key", "check_in_hour")
    put(section_form, f"entries-{row}-value_text", "10")
    assert admin_client.post(admin_section_url(ground_rules), section_form).status_code == 302
    assert summary(agent) == [
        {"change": "entry_changed", "section": "ground_rules", "key": "check_in_hour"}
    ]


def test_deleting_a_section_is_a_revision(
    admin_client: Client, agent: Agent, ground_rules: SectionDeclaration
) -> None:
    url = f"/admin/lens/sectiondeclaration/{ground_rules.pk}/delete/"
    assert admin_client.post(url, {"post": "yes"}).status_code == 302
    assert summary(agent) == [{"change": "section_removed", "section": "ground_rules"}]


def test_deleting_sections_of_two_agents_writes_one_revision_each(
    admin_client: Client, agent: Agent, team: Team
) -> None:
    robin = create_agent(team, "robin")
    sections = list(SectionDeclaration.objects.filter(agent__in=[agent, robin]))
    response = admin_client.post(
        "/admin/lens/sectiondeclaration/",
        {"action": "delete_selected", "_selected_action": [s.pk for s in sections], "post": "yes"},
    )
    assert response.status_code == 302
    for each in (agent, robin):
        assert newest(each).number == 2
        assert {c["change"] for c in summary(each)} == {"section_removed"}


def test_applying_a_preset_is_a_revision(admin_client: Client, agent: Agent) -> None:
    admin_client.post(
        "/admin/lens/agent/",
        {"action": "apply_preset_user-background", "_selected_action": [agent.pk]},
    )
    row = newest(agent)
    assert (row.number, row.actor, row.via) == (2, "root", "admin")
    assert {"change": "routing_spec_changed", "from": None, "to": "user-background"} in row.summary
