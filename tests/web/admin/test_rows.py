"""A refused inline row carries its error on the field at fault (the summary above the
rows names the value too), and a section's own page refuses what its agent's page does."""

from __future__ import annotations

import pytest
from django.test import Client

from lens.models import Agent, SectionDeclaration
from tests.pages import (
    Dom,
    FormData,
    add_row,
    admin_agent_url,
    admin_section_url,
    dom,
    first_blank_row,
    form_data,
    formset,
    inside,
    new_section_page,
    put,
    section_row,
    total,
    with_class,
)

pytestmark = pytest.mark.django_db


def field_errors(page: Dom, row_id: str, field: str) -> list[str]:
    """The errors the page shows in one row's cell for ``field``."""
    row = page.one("id", row_id)
    cells = [c for c in inside(row, "td") if f"field-{field}" in (c.get("class") or "")]
    assert len(cells) == 1
    return [li.squashed for ul in with_class(cells[0], "errorlist") for li in inside(ul, "li")]


def summary(page: Dom, prefix: str) -> list[str]:
    group = page.one("id", f"{prefix}-group")
    return [
        e.squashed for e in with_class(group, "errorlist") if "nonform" in (e.get("class") or "")
    ]


def test_the_second_of_two_new_sections_with_one_id_carries_the_error(
    admin_client: Client, agent: Agent
) -> None:
    data = form_data(admin_client, admin_agent_url(agent), "agent_form")
    first = add_row(data, "sections", **section_row(agent, "notes", "Notes"))
    second = add_row(data, "sections", **section_row(agent, "notes", "More notes"))
    response = admin_client.post(admin_agent_url(agent), data)

    assert response.status_code == 200
    sections = formset(response, "sections")
    assert sections.errors[second] == {"section_id": ["duplicate section id 'notes'"]}
    assert sections.errors[first] == {}
    assert sections.non_form_errors() == ["duplicate section id 'notes'"]

    page = dom(response)
    assert field_errors(page, f"sections-{second}", "section_id") == [
        "duplicate section id 'notes'"
    ]
    assert field_errors(page, f"sections-{first}", "section_id") == []
    assert summary(page, "sections") == ["duplicate section id 'notes'"]
    # The input itself says so to assistive technology.
    row = page.one("id", f"sections-{second}")
    (box,) = inside(row, "input", name=f"sections-{second}-section_id")
    assert box.get("aria-invalid") == "true"
    assert not SectionDeclaration.objects.filter(section_id="notes").exists()


def test_a_new_row_reusing_a_declared_id_is_the_one_marked(
    admin_client: Client, agent: Agent
) -> None:
    data = form_data(admin_client, admin_agent_url(agent), "agent_form")
    row = add_row(data, "sections", **section_row(agent, "ground_rules", "Again"))
    response = admin_client.post(admin_agent_url(agent), data)
    sections = formset(response, "sections")
    declared = next(
        i
        for i, form in enumerate(sections.forms)
        if isinstance(form.instance, SectionDeclaration)
        and form.instance.section_id == "ground_rules"
    )
    assert sections.errors[row] == {"section_id": ["duplicate section id 'ground_rules'"]}
    assert sections.errors[declared] == {}


def test_renaming_a_row_to_a_sibling_id_marks_the_renamed_row(
    admin_client: Client, agent: Agent
) -> None:
    data = form_data(admin_client, admin_agent_url(agent), "agent_form")
    rows = {data[f"sections-{i}-section_id"][0]: i for i in range(total(data, "sections"))}
    put(data, f"sections-{rows['ground_rules']}-section_id", "user_profile")
    response = admin_client.post(admin_agent_url(agent), data)
    sections = formset(response, "sections")
    assert sections.errors[rows["ground_rules"]] == {
        "section_id": ["duplicate section id 'user_profile'"]
    }
    assert sections.errors[rows["user_profile"]] == {}
    assert agent.sections.filter(section_id="ground_rules").exists()


def test_a_duplicate_entry_key_marks_its_row_on_the_section_page(
    admin_client: Client, ground_rules: SectionDeclaration, section_form: FormData
) -> None:
    blank = first_blank_row(section_form, "entries")
    put(section_form, f"entries-{blank}-key", "ratio")
    put(section_form, f"entries-{blank}-value_text", "3")
    response = admin_client.post(admin_section_url(ground_rules), section_form)
    assert formset(response, "entries").errors[blank] == {"key": ["duplicate entry key 'ratio'"]}
    assert field_errors(dom(response), f"entries-{blank}", "key") == ["duplicate entry key 'ratio'"]
    assert ground_rules.entries.get(key="ratio").value == 2.5


def test_a_duplicate_capability_name_marks_its_row(admin_client: Client, agent: Agent) -> None:
    data = form_data(admin_client, admin_agent_url(agent), "agent_form")
    row = add_row(
        data, "capabilities", name="memory_save", description="", position="", id="", agent=""
    )
    response = admin_client.post(admin_agent_url(agent), data)
    assert formset(response, "capabilities").errors[row] == {
        "name": ["duplicate capability name 'memory_save'"]
    }
    assert agent.capabilities.count() == 1


def test_the_section_page_refuses_a_sibling_id_instead_of_failing(
    admin_client: Client, ground_rules: SectionDeclaration, section_form: FormData
) -> None:
    put(section_form, "section_id", "user_profile")
    response = admin_client.post(admin_section_url(ground_rules), section_form)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {
        "section_id": ["duplicate section id 'user_profile'"]
    }
    ground_rules.refresh_from_db()
    assert ground_rules.section_id == "ground_rules"


def test_a_section_added_on_its_own_page_with_a_declared_id_is_refused(
    admin_client: Client, agent: Agent
) -> None:
    response = admin_client.post(
        "/admin/lens/sectiondeclaration/add/", new_section_page(agent, "ground_rules", "Again")
    )
    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {
        "section_id": ["duplicate section id 'ground_rules'"]
    }
    assert agent.sections.count() == 2


def test_prose_longer_than_the_api_takes_is_refused(admin_client: Client, agent: Agent) -> None:
    data = form_data(admin_client, admin_agent_url(agent), "agent_form")
    put(data, "persona", "x" * 100_001)
    response = admin_client.post(admin_agent_url(agent), data)
    assert response.status_code == 200
    assert "persona" in response.context["adminform"].form.errors
    agent.refresh_from_db()
    assert agent.persona == "You are Wren, a companion."
