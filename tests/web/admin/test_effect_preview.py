"""The admin's "Preview the effect" (SPEC §18.2): a change of declarations is shown with
what it would do before anything is saved; the page posts the same form to save it;
saving without the step stays possible; a refused form is shown with its errors."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lens.models import Agent, Proposal, Revision, SectionDeclaration
from tests.api_calls import db_snapshot
from tests.factories import composed, remember
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

HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)">')


def preview(client: Client, url: str, data: FormData) -> str:
    snapshot = db_snapshot()
    response = client.post(url, {**data, "_preview": "Preview the effect"})
    assert response.status_code == 200
    assert db_snapshot() == snapshot  # nothing at all was written
    return response.content.decode()


def reposted(page: str) -> dict[str, list[str]]:
    """The preview page's form as a browser would post it (less the CSRF token)."""
    posted: dict[str, list[str]] = {}
    for name, value in HIDDEN.findall(page):
        if name != "csrfmiddlewaretoken":
            posted.setdefault(unescape(name), []).append(unescape(value))
    return posted


def test_the_change_form_offers_the_preview_beside_save(admin_client: Client, agent: Agent) -> None:
    page = admin_client.get(admin_agent_url(agent)).content.decode()
    assert 'name="_preview"' in page
    assert 'name="_save"' in page
    # Not on the add form: there is no prompt yet to compare with.
    assert 'name="_preview"' not in admin_client.get("/admin/lens/agent/add/").content.decode()


def test_previewing_writes_nothing_and_saving_from_the_preview_writes_the_revision(
    admin_client: Client, agent: Agent, agent_form: FormData
) -> None:
    put(agent_form, "persona", "You are Wren, and you keep it brief.")
    page = preview(admin_client, admin_agent_url(agent), agent_form)
    assert "data-effect-preview" in page
    assert "Nothing is saved yet" in page
    assert "+You are Wren, and you keep it brief." in unescape(page)  # the diff
    assert "no prompt delivered yet" in page
    assert Revision.objects.filter(agent=agent).count() == 1

    response = admin_client.post(admin_agent_url(agent), {**reposted(page), "_save": "Save"})
    assert response.status_code == 302
    assert Revision.objects.filter(agent=agent).count() == 2
    assert Agent.objects.get(pk=agent.pk).persona == "You are Wren, and you keep it brief."


def test_saving_without_the_preview_stays_possible(
    admin_client: Client, agent: Agent, agent_form: FormData
) -> None:
    put(agent_form, "persona", "Straight to it.")
    assert admin_client.post(admin_agent_url(agent), agent_form).status_code == 302
    assert Revision.objects.filter(agent=agent).count() == 2


def test_a_new_section_inline_is_previewed(
    admin_client: Client, agent: Agent, agent_form: FormData
) -> None:
    add_row(agent_form, "sections", **section_row(agent, "notes"))
    page = preview(admin_client, admin_agent_url(agent), agent_form)
    assert "data-effect-preview" in page
    assert not SectionDeclaration.objects.filter(agent=agent, section_id="notes").exists()


def test_a_refused_form_is_shown_with_its_errors_and_no_preview(
    admin_client: Client, agent: Agent, agent_form: FormData
) -> None:
    put(agent_form, "name", "")
    page = preview(admin_client, admin_agent_url(agent), agent_form)
    assert "data-effect-preview" not in page
    assert "errornote" in page


def test_the_preview_names_the_memories_a_change_moves(admin_client: Client, wren: Agent) -> None:
    memory_id = remember(wren, "profile", "Lives in Lisbon")
    assert composed(wren).report.stats.composed == 1
    data = form_data(admin_client, admin_agent_url(wren), "agent_form")
    # Lock the auto section: the memory leaves the prompt.
    put(
        data,
        f"sections-{row_of(data, 'sections', 'section_id', 'user_profile')}-promotion",
        "locked",
    )
    page = unescape(preview(admin_client, admin_agent_url(wren), data))
    assert "pushes out 1 memory" in page
    assert memory_id in page
    assert "locked section" in page


def test_a_section_page_is_previewed_too(
    admin_client: Client, ground_rules: SectionDeclaration, section_form: FormData
) -> None:
    put(section_form, "title", "Rules of the road")
    page = preview(admin_client, admin_section_url(ground_rules), section_form)
    assert "data-effect-preview" in page
    assert "Rules of the road" in unescape(page)


def test_a_protected_agents_preview_says_saving_proposes(
    admin_client: Client, agent: Agent, agent_form: FormData
) -> None:
    Agent.objects.filter(pk=agent.pk).update(protected=True)
    put(agent_form, "persona", "You are Wren, protected.")
    page = preview(admin_client, admin_agent_url(agent), agent_form)
    assert "saving proposes this change" in page
    assert not Proposal.objects.exists()


def test_a_person_without_the_change_permission_gets_no_preview(
    client: Client, member: User, agent: Agent, agent_form: FormData
) -> None:
    client.force_login(member)
    snapshot = db_snapshot()
    response = client.post(admin_agent_url(agent), {**agent_form, "_preview": "1"})
    assert response.status_code in (302, 403)
    assert db_snapshot() == snapshot
