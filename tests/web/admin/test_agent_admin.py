"""The admin edits agents, section declarations and authored entries with the API's rules."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lens.models import Agent, AuthoredEntry, SectionDeclaration, Team
from tests.pages import (
    FormData,
    add_row,
    admin_agent_url,
    admin_section_url,
    assert_refused,
    first_blank_row,
    put,
    row_of,
    section_row,
    total,
)

pytestmark = pytest.mark.django_db


# --- pages load ------------------------------------------------------------------------


def test_the_agent_changelist_loads(admin_client: Client, agent: Agent) -> None:
    response = admin_client.get("/admin/lens/agent/")
    assert response.status_code == 200
    assert "Wren" in response.content.decode()


def test_the_agent_change_page_loads_with_its_inlines(admin_client: Client, agent: Agent) -> None:
    response = admin_client.get(admin_agent_url(agent))
    assert response.status_code == 200
    html = response.content.decode()
    for prefix in ("sections", "capabilities", "awareness_sources"):
        assert f'name="{prefix}-TOTAL_FORMS"' in html
    assert 'value="ground_rules"' in html


def test_the_agent_add_page_loads(admin_client: Client, team: Team) -> None:
    assert admin_client.get("/admin/lens/agent/add/").status_code == 200


def test_the_section_pages_load_with_the_entries_inline(
    admin_client: Client, ground_rules: SectionDeclaration
) -> None:
    assert admin_client.get("/admin/lens/sectiondeclaration/").status_code == 200
    response = admin_client.get(admin_section_url(ground_rules))
    assert response.status_code == 200
    html = response.content.decode()
    assert 'name="entries-TOTAL_FORMS"' in html
    assert 'value="privacy"' in html


def test_the_team_pages_load(admin_client: Client, team: Team, member: User) -> None:
    assert admin_client.get("/admin/lens/team/").status_code == 200
    assert admin_client.get(f"/admin/lens/team/{team.pk}/change/").status_code == 200


# --- agent form: section declarations inline -------------------------------------------


def test_the_unchanged_agent_form_saves(
    admin_client: Client, agent: Agent, agent_form: FormData
) -> None:
    # The baseline every refusal below starts from must itself be valid.
    response = admin_client.post(admin_agent_url(agent), agent_form)
    assert response.status_code == 302
    assert agent.sections.count() == 2


def test_a_valid_new_section_saves(
    admin_client: Client, agent: Agent, agent_form: FormData
) -> None:
    add_row(agent_form, "sections", **section_row(agent, "notes"))
    response = admin_client.post(admin_agent_url(agent), agent_form)
    assert response.status_code == 302
    assert agent.sections.filter(section_id="notes", title="Notes").exists()


@pytest.mark.parametrize(
    ("section_id", "title", "message"),
    [
        ("Bad Id", "Notes", "must start with a lowercase letter or digit"),
        ("-dash", "Notes", "must start with a lowercase letter or digit"),
        ("notes", "Current State", "reserved for continuation turns"),
        ("notes", "  current state ", "reserved for continuation turns"),
        ("notes", "   ", "This field is required"),
    ],
)
def test_an_invalid_section_is_refused_and_nothing_is_saved(
    admin_client: Client,
    agent: Agent,
    agent_form: FormData,
    section_id: str,
    title: str,
    message: str,
) -> None:
    put(agent_form, "name", "Renamed")
    add_row(agent_form, "sections", **section_row(agent, section_id, title))
    response = admin_client.post(admin_agent_url(agent), agent_form)
    assert_refused(response, message)
    assert agent.sections.count() == 2
    agent.refresh_from_db()
    assert agent.name == "Wren"


def test_two_new_sections_with_one_id_are_refused(
    admin_client: Client, agent: Agent, agent_form: FormData
) -> None:
    add_row(agent_form, "sections", **section_row(agent, "notes", "Notes"))
    add_row(agent_form, "sections", **section_row(agent, "notes", "More notes"))
    response = admin_client.post(admin_agent_url(agent), agent_form)
    assert_refused(response, "duplicate section id 'notes'")
    assert agent.sections.count() == 2
    assert not agent.sections.filter(section_id="notes").exists()


def test_a_new_section_reusing_a_declared_id_is_refused(
    admin_client: Client, agent: Agent, agent_form: FormData
) -> None:
    add_row(agent_form, "sections", **section_row(agent, "ground_rules", "Again"))
    response = admin_client.post(admin_agent_url(agent), agent_form)
    assert_refused(response, "duplicate section id 'ground_rules'")
    assert agent.sections.count() == 2
    assert not agent.sections.filter(title="Again").exists()


def test_renaming_a_section_to_the_reserved_title_is_refused(
    admin_client: Client, agent: Agent, agent_form: FormData
) -> None:
    row = row_of(agent_form, "sections", "section_id", "user_profile")
    put(agent_form, f"sections-{row}-title", "Current State")
    response = admin_client.post(admin_agent_url(agent), agent_form)
    assert_refused(response, "reserved for continuation turns")
    assert agent.sections.get(section_id="user_profile").title == "About the User"


def test_two_sections_can_swap_ids_in_one_save(
    admin_client: Client, agent: Agent, agent_form: FormData
) -> None:
    rows = {
        agent_form[f"sections-{i}-section_id"][0]: i for i in range(total(agent_form, "sections"))
    }
    put(agent_form, f"sections-{rows['user_profile']}-section_id", "ground_rules")
    put(agent_form, f"sections-{rows['ground_rules']}-section_id", "user_profile")
    response = admin_client.post(admin_agent_url(agent), agent_form)
    assert response.status_code == 302
    assert agent.sections.get(section_id="ground_rules").title == "About the User"


def test_an_unknown_routing_spec_is_refused(
    admin_client: Client, agent: Agent, agent_form: FormData
) -> None:
    put(agent_form, "routing_spec", "nope")
    response = admin_client.post(admin_agent_url(agent), agent_form)
    assert_refused(response, "Unknown routing spec")
    agent.refresh_from_db()
    assert agent.routing_spec is None


def test_a_blank_agent_name_is_refused(
    admin_client: Client, agent: Agent, agent_form: FormData
) -> None:
    put(agent_form, "name", "   ")
    response = admin_client.post(admin_agent_url(agent), agent_form)
    assert_refused(response, "This field is required.")
    agent.refresh_from_db()
    assert agent.name == "Wren"


def test_duplicate_capability_names_are_refused(
    admin_client: Client, agent: Agent, agent_form: FormData
) -> None:
    add_row(
        agent_form,
        "capabilities",
        name="memory_save",
        description="again",
        position="1",
        agent=str(agent.pk),
        id="",
    )
    response = admin_client.post(admin_agent_url(agent), agent_form)
    assert_refused(response, "duplicate capability name 'memory_save'")
    assert agent.capabilities.count() == 1


# --- section form: authored entries inline ---------------------------------------------


def fill_blank_entry(data: FormData, key: str, value_type: str, value_text: str) -> None:
    row = first_blank_row(data, "entries")
    put(data, f"entries-{row}-key", key)
    put(data, f"entries-{row}-value_type", value_type)
    put(data, f"entries-{row}-value_text", value_text)


def test_the_unchanged_section_form_saves_and_keeps_value_types(
    admin_client: Client, ground_rules: SectionDeclaration, section_form: FormData
) -> None:
    response = admin_client.post(admin_section_url(ground_rules), section_form)
    assert response.status_code == 302
    values = {entry.key: entry.value for entry in ground_rules.entries.all()}
    assert values == {
        "privacy": "Never share what the user says.",
        "check_in_hour": 9,
        "ratio": 2.5,
        "proactive": True,
    }
    assert type(values["check_in_hour"]) is int
    assert values["proactive"] is True


def test_a_valid_text_entry_saves(
    admin_client: Client, ground_rules: SectionDeclaration, section_form: FormData
) -> None:
    fill_blank_entry(section_form, "motto", "text", "Be kind & brief")
    response = admin_client.post(admin_section_url(ground_rules), section_form)
    assert response.status_code == 302
    assert ground_rules.entries.get(key="motto").value == "Be kind & brief"


@pytest.mark.parametrize(
    ("value_type", "value_text", "expected"),
    [
        ("boolean", "true", True),
        ("boolean", " False ", False),
        ("integer", "42", 42),
        ("number", "2.5", 2.5),
        ("text", "true", "true"),
    ],
)
def test_typed_values_save_as_real_scalars(
    admin_client: Client,
    ground_rules: SectionDeclaration,
    section_form: FormData,
    value_type: str,
    value_text: str,
    expected: object,
) -> None:
    fill_blank_entry(section_form, "typed", value_type, value_text)
    response = admin_client.post(admin_section_url(ground_rules), section_form)
    assert response.status_code == 302
    value = AuthoredEntry.objects.get(section=ground_rules, key="typed").value
    assert value == expected
    assert type(value) is type(expected)


@pytest.mark.parametrize(
    ("value_type", "value_text", "message"),
    [
        ("integer", "abc", "is not an integer"),
        ("integer", "2.5", "is not an integer"),
        ("number", "nan", "numbers must be finite"),
        ("number", "x", "is not a number"),
        ("boolean", "yes", "a boolean is"),
    ],
)
def test_a_value_that_does_not_parse_is_refused_and_nothing_is_saved(
    admin_client: Client,
    ground_rules: SectionDeclaration,
    section_form: FormData,
    value_type: str,
    value_text: str,
    message: str,
) -> None:
    put(section_form, "title", "Renamed")
    fill_blank_entry(section_form, "broken", value_type, value_text)
    response = admin_client.post(admin_section_url(ground_rules), section_form)
    assert_refused(response, message)
    assert ground_rules.entries.count() == 4
    ground_rules.refresh_from_db()
    assert ground_rules.title == "Ground Rules"


def test_duplicate_entry_keys_are_refused(
    admin_client: Client, ground_rules: SectionDeclaration, section_form: FormData
) -> None:
    fill_blank_entry(section_form, "twin", "text", "one")
    add_row(
        section_form,
        "entries",
        key="twin",
        value_type="text",
        value_text="two",
        position="0",
        section=str(ground_rules.pk),
        id="",
    )
    response = admin_client.post(admin_section_url(ground_rules), section_form)
    assert_refused(response, "duplicate entry key 'twin'")
    assert ground_rules.entries.count() == 4
    assert not ground_rules.entries.filter(key="twin").exists()


def test_a_new_entry_reusing_a_key_is_refused(
    admin_client: Client, ground_rules: SectionDeclaration, section_form: FormData
) -> None:
    fill_blank_entry(section_form, "privacy", "text", "again")
    response = admin_client.post(admin_section_url(ground_rules), section_form)
    assert_refused(response, "duplicate entry key 'privacy'")
    assert ground_rules.entries.get(key="privacy").value == "Never share what the user says."


def test_an_edited_entry_changes_type(
    admin_client: Client, ground_rules: SectionDeclaration, section_form: FormData
) -> None:
    row = row_of(section_form, "entries", "key", "check_in_hour")
    assert section_form[f"entries-{row}-value_type"] == ["integer"]
    assert section_form[f"entries-{row}-value_text"] == ["9"]
    put(section_form, f"entries-{row}-value_type", "text")
    put(section_form, f"entries-{row}-value_text", "nine")
    response = admin_client.post(admin_section_url(ground_rules), section_form)
    assert response.status_code == 302
    assert ground_rules.entries.get(key="check_in_hour").value == "nine"


def test_an_invalid_section_id_is_refused_on_the_section_form(
    admin_client: Client, ground_rules: SectionDeclaration, section_form: FormData
) -> None:
    put(section_form, "section_id", "Bad Id")
    response = admin_client.post(admin_section_url(ground_rules), section_form)
    assert_refused(response, "must start with a lowercase letter or digit")
    ground_rules.refresh_from_db()
    assert ground_rules.section_id == "ground_rules"
