"""From an agent's admin page: its lens, and each section's authored entries, with the
way back; the page costs the same queries however many sections the agent declares."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from lens.models import Agent, Membership, SectionDeclaration, Team
from tests.factories import create_agent, sample_config
from tests.pages import (
    FormData,
    admin_agent_url,
    admin_section_url,
    dom,
    form_data,
    inside,
    put,
    row_of,
    with_class,
)

pytestmark = pytest.mark.django_db


# --- the lens ------------------------------------------------------------------------


def test_the_agent_page_links_to_its_lens_in_its_team(
    admin_client: Client, agent: Agent, other_team: Team, root: User
) -> None:
    # Another team's agent of the same slug: the link must name the team.
    twin = create_agent(other_team, "wren")
    Membership.objects.create(team=other_team, user=root)
    for shown, team in ((agent, "acme"), (twin, "globex")):
        page = dom(admin_client.get(admin_agent_url(shown)))
        link = page.one("data-view-in-lens", tag="a")
        assert link.squashed == "View in lens"
        assert link.get("href") == f"/agents/wren/?team={team}"
        tools = link.ancestor("ul")
        assert tools is not None
        assert "object-tools" in (tools.get("class") or "")
        lens = admin_client.get(str(link.get("href")))
        assert lens.status_code == 200
        assert lens.context["agent"].pk == shown.pk


def test_the_add_page_has_no_lens_link(admin_client: Client, team: Team) -> None:
    page = dom(admin_client.get("/admin/lens/agent/add/"))
    assert page.all("data-view-in-lens") == []


# --- authored entries, one click from the agent --------------------------------------------


def test_each_section_row_counts_its_entries_and_links_to_them(
    admin_client: Client, agent: Agent
) -> None:
    page = dom(admin_client.get(admin_agent_url(agent)))
    for section, count in (("user_profile", "0 entries"), ("ground_rules", "4 entries")):
        declared = agent.sections.get(section_id=section)
        row = next(
            r
            for r in with_class(page.one("id", "sections-group"), "form-row")
            if inside(r, "input", value=section)
        )
        (shown,) = with_class(row, "lens-entry-count")
        assert shown.squashed == count
        (link,) = with_class(row, "lens-entries-link")
        assert link.squashed == "Edit entries"
        assert link.get("href") == admin_section_url(declared)
        assert link.get("aria-label") == f"Edit entries of {declared.title}"


def test_a_section_page_leads_back_to_its_agent(
    admin_client: Client, agent: Agent, ground_rules: SectionDeclaration
) -> None:
    page = dom(admin_client.get(admin_section_url(ground_rules)))
    back = page.one("data-back-to-agent", tag="a")
    assert back.squashed == "Back to agent"
    assert back.get("href") == f"{admin_agent_url(agent)}#sections-group"
    crumbs = next(e for e in page.elements if "breadcrumbs" in (e.get("class") or ""))
    assert admin_agent_url(agent) in [a.get("href") for a in inside(crumbs, "a")]
    order = next(e for e in page.elements if "field-order" in (e.get("class") or ""))
    assert "2 of 2" in order.squashed


def test_editing_entries_from_the_agent_page_and_coming_back(
    admin_client: Client, agent: Agent, ground_rules: SectionDeclaration
) -> None:
    agent_page = dom(admin_client.get(admin_agent_url(agent)))
    hrefs = [
        str(a.get("href"))
        for a in with_class(agent_page.one("id", "sections-group"), "lens-entries-link")
    ]
    assert admin_section_url(ground_rules) in hrefs

    data = form_data(admin_client, admin_section_url(ground_rules), "sectiondeclaration_form")
    row = row_of(data, "entries", "key", "privacy")
    put(data, f"entries-{row}-value_text", "Keep it between us.")
    put(data, "_save", "Save")
    response = admin_client.post(admin_section_url(ground_rules), data)
    assert response.status_code == 302
    assert response["Location"] == f"{admin_agent_url(agent)}#sections-group"
    assert ground_rules.entries.get(key="privacy").value == "Keep it between us."

    back = admin_client.get(response["Location"])
    messages = [str(m) for m in back.context["messages"]]
    assert any("was changed successfully" in m for m in messages)


def test_save_and_continue_on_a_section_page_stays_there(
    admin_client: Client, ground_rules: SectionDeclaration, section_form: FormData
) -> None:
    put(section_form, "_continue", "Save and continue editing")
    response = admin_client.post(admin_section_url(ground_rules), section_form)
    assert response["Location"] == admin_section_url(ground_rules)


def test_the_agent_page_costs_the_same_queries_for_many_sections(
    admin_client: Client, team: Team, django_assert_max_num_queries: Any
) -> None:
    small = create_agent(team, "small")
    config = sample_config()
    config["background"]["sections"] = [
        {
            "id": f"s{i}",
            "title": f"Section {i}",
            "entries": [{"key": f"k{j}", "value": j} for j in range(3)],
        }
        for i in range(25)
    ]
    big = create_agent(team, "big", config)

    with CaptureQueriesContext(connection) as baseline:
        assert admin_client.get(admin_agent_url(small)).status_code == 200
    with django_assert_max_num_queries(len(baseline.captured_queries)):
        assert admin_client.get(admin_agent_url(big)).status_code == 200
