"""Every control of the admin's pages has a name a screen reader can say: the controls of
tabular inline rows, which show their label only once as a column header, are named
"<column>, row <n>" (the blank row "Add another" copies is a "new row"), and no filter
link is empty."""

from __future__ import annotations

import pytest
from django.test import Client

from lens.models import Agent, ApiToken, SectionDeclaration, Team
from tests.factories import Story
from tests.pages import Dom, Element, admin_agent_url, admin_section_url, dom
from web.admin.row_names import row_name

pytestmark = pytest.mark.django_db

CONTROLS = ("input", "select", "textarea")


def visible_controls(page: Dom) -> list[Element]:
    return [
        element
        for element in page.elements
        if element.tag in CONTROLS
        and element.get("type") not in ("hidden", "submit", "button", "reset")
    ]


def unnamed(page: Dom) -> list[str]:
    """The id (or name) of each visible control with neither an ``aria-label`` nor a
    ``<label for>`` pointing at it."""
    labelled = {label.get("for") for label in page.elements if label.tag == "label"}
    return [
        str(control.get("id") or control.get("name"))
        for control in visible_controls(page)
        if not (control.get("aria-label") or "").strip() and control.get("id") not in labelled
    ]


def names(page: Dom, prefix: str) -> dict[str, str]:
    """The ``aria-label`` of each control of the inline ``prefix``, by its id."""
    return {
        str(control.get("id")): str(control.get("aria-label"))
        for control in visible_controls(page)
        if str(control.get("id")).startswith(f"id_{prefix}-")
    }


def test_a_row_name_says_its_column_and_row_from_one() -> None:
    assert row_name("Title", 0) == "Title, row 1"
    assert row_name("Title", 11) == "Title, row 12"
    assert row_name("Title", None) == "Title, new row"


def test_every_control_of_the_agent_page_has_a_name(admin_client: Client, agent: Agent) -> None:
    page = dom(admin_client.get(admin_agent_url(agent)))
    assert visible_controls(page)
    assert unnamed(page) == []
    sections = names(page, "sections")
    assert sections["id_sections-0-section_id"] == "Section id, row 1"
    assert sections["id_sections-1-title"] == "Title, row 2"
    assert sections["id_sections-0-promotion"] == "Promotion, row 1"
    assert sections["id_sections-1-DELETE"] == "Delete, row 2"
    # The typed position, kept for pages without JavaScript, is named too.
    assert sections["id_sections-1-position"] == "Order, row 2"
    awareness = names(page, "awareness_sources")
    assert awareness["id_awareness_sources-0-name"] == "Name, row 1"
    assert awareness["id_awareness_sources-0-description"] == "Description, row 1"
    assert awareness["id_awareness_sources-0-access_method"] == "Access method, row 1"
    assert awareness["id_awareness_sources-0-DELETE"] == "Delete, row 1"


def test_the_blank_row_new_rows_are_copied_from_is_a_new_row(
    admin_client: Client, agent: Agent
) -> None:
    page = dom(admin_client.get(admin_agent_url(agent)))
    blank = names(page, "sections-__prefix__")
    assert blank["id_sections-__prefix__-section_id"] == "Section id, new row"
    assert blank["id_sections-__prefix__-promotion"] == "Promotion, new row"
    labels = [control.get("aria-label") or "" for control in visible_controls(page)]
    assert not [label for label in labels if "prefix" in label]


def test_every_control_of_a_section_page_has_a_name(
    admin_client: Client, ground_rules: SectionDeclaration
) -> None:
    page = dom(admin_client.get(admin_section_url(ground_rules)))
    assert unnamed(page) == []
    entries = names(page, "entries")
    assert entries["id_entries-0-key"] == "Key, row 1"
    assert entries["id_entries-0-value_type"] == "Type, row 1"
    assert entries["id_entries-3-value_text"] == "Value, row 4"
    assert entries["id_entries-3-DELETE"] == "Delete, row 4"
    # The extra blank row after the four entries.
    assert entries["id_entries-4-key"] == "Key, row 5"


@pytest.mark.parametrize(
    "path",
    ["/admin/lens/agent/add/", "/admin/lens/sectiondeclaration/add/", "/admin/lens/team/add/"],
)
def test_every_control_of_an_add_page_has_a_name(admin_client: Client, path: str) -> None:
    page = dom(admin_client.get(path))
    assert visible_controls(page)
    assert unnamed(page) == []


def test_every_control_of_a_team_page_has_a_name(admin_client: Client, team: Team) -> None:
    page = dom(admin_client.get(f"/admin/lens/team/{team.pk}/change/"))
    assert unnamed(page) == []
    assert names(page, "memberships")["id_memberships-0-user"] == "User, row 1"


def test_a_split_date_and_time_in_a_row_names_each_box(admin_client: Client, team: Team) -> None:
    ApiToken.objects.issue(team, name="ci")
    page = dom(admin_client.get(f"/admin/lens/team/{team.pk}/change/"))
    assert unnamed(page) == []
    tokens = {key: value for key, value in names(page, "tokens").items() if "revoked_at" in key}
    assert tokens == {
        "id_tokens-0-revoked_at_0": "Revoked at (date), row 1",
        "id_tokens-0-revoked_at_1": "Revoked at (time), row 1",
    }


def test_no_filter_of_the_promotions_list_is_an_empty_link(
    admin_client: Client, story: Story
) -> None:
    page = dom(admin_client.get("/admin/memory/promotion/"))
    filters = [e for e in page.elements if e.tag == "a" and e.ancestor("nav") is not None]
    assert filters
    assert [link.get("href") for link in filters if not link.squashed] == []
    assert "no reason" in [link.squashed for link in filters]
