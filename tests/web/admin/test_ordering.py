"""Rows of the admin's inlines are put in order with arrows, which work without
JavaScript (each submits the form; the server swaps the row with its neighbour), and the
positions saved are contiguous from 0, as the API stores them."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lens.models import Agent, SectionDeclaration, Team
from tests.factories import create_agent, sample_config
from tests.pages import (
    FormData,
    add_row,
    admin_agent_url,
    admin_section_url,
    assert_refused,
    dom,
    form_data,
    inside,
    new_section_page,
    put,
    row_of,
    section_row,
)
from tests.web.admin.forms import new_agent_form

pytestmark = pytest.mark.django_db


@pytest.fixture
def crew(team: Team) -> Agent:
    """Wren with four sections, two capabilities and three awareness sources."""
    config = sample_config()
    config["background"]["sections"] += [
        {"id": "habits", "title": "Habits", "promotion": "guarded"},
        {"id": "goals", "title": "Goals", "promotion": "earned"},
    ]
    config["capabilities"].append({"name": "calendar_lookup", "description": "Read it."})
    config["awareness"] += [
        {"name": "Mail", "description": "The inbox", "access_method": "tool"},
        {"name": "Notes", "description": "A notebook", "access_method": "file"},
    ]
    return create_agent(team, "wren", config)


def section_order(agent: Agent) -> list[tuple[str, int]]:
    return list(agent.sections.order_by("position", "id").values_list("section_id", "position"))


def press(client: Client, url: str, data: FormData, move: str) -> Any:
    """What pressing a row's arrow submits without JavaScript."""
    return client.post(url, {**data, "_move": [move]})


# --- the arrows on the page ---------------------------------------------------------------


def test_every_row_has_two_arrows_that_name_it(admin_client: Client, crew: Agent) -> None:
    page = dom(admin_client.get(admin_agent_url(crew)))
    for prefix, rows in (("sections", 4), ("capabilities", 2), ("awareness_sources", 3)):
        for index in range(rows):
            row = page.one("id", f"{prefix}-{index}")
            moves = [
                (b.get("value"), b.get("aria-label"))
                for b in inside(row, "button", name="_move", type="submit")
            ]
            assert moves == [
                (f"{prefix}-{index}:up", f"Move row {index + 1} up"),
                (f"{prefix}-{index}:down", f"Move row {index + 1} down"),
            ]


def test_the_first_submit_button_is_save_so_enter_never_moves_a_row(
    admin_client: Client, crew: Agent
) -> None:
    page = dom(admin_client.get(admin_agent_url(crew)))
    form = page.one("id", "agent_form")
    submits = [
        e
        for e in form.descendants()
        if (e.tag == "input" and e.get("type") == "submit")
        or (e.tag == "button" and (e.get("type") or "submit") == "submit")
    ]
    assert submits[0].get("name") == "_save"


# --- moving without JavaScript -------------------------------------------------------------


def test_move_up_swaps_a_section_with_the_one_above_and_comes_back(
    admin_client: Client, crew: Agent
) -> None:
    data = form_data(admin_client, admin_agent_url(crew), "agent_form")
    row = row_of(data, "sections", "section_id", "habits")
    response = press(admin_client, admin_agent_url(crew), data, f"sections-{row}:up")
    assert response.status_code == 302
    assert response["Location"] == f"{admin_agent_url(crew)}#sections-group"
    assert section_order(crew) == [
        ("user_profile", 0),
        ("habits", 1),
        ("ground_rules", 2),
        ("goals", 3),
    ]


def test_move_down_saves_the_other_edits_of_the_form_too(admin_client: Client, crew: Agent) -> None:
    data = form_data(admin_client, admin_agent_url(crew), "agent_form")
    put(data, "name", "Wren II")
    response = press(admin_client, admin_agent_url(crew), data, "sections-0:down")
    assert response.status_code == 302
    crew.refresh_from_db()
    assert crew.name == "Wren II"
    assert [s for s, _ in section_order(crew)] == [
        "ground_rules",
        "user_profile",
        "habits",
        "goals",
    ]


@pytest.mark.parametrize(("move", "row"), [("up", 0), ("down", 3)])
def test_moving_past_either_end_changes_no_order(
    admin_client: Client, crew: Agent, move: str, row: int
) -> None:
    before = section_order(crew)
    data = form_data(admin_client, admin_agent_url(crew), "agent_form")
    response = press(admin_client, admin_agent_url(crew), data, f"sections-{row}:{move}")
    assert response.status_code == 302
    assert section_order(crew) == before


def test_capabilities_and_awareness_sources_move_too(admin_client: Client, crew: Agent) -> None:
    data = form_data(admin_client, admin_agent_url(crew), "agent_form")
    press(admin_client, admin_agent_url(crew), data, "capabilities-1:up")
    assert list(crew.capabilities.values_list("name", "position")) == [
        ("calendar_lookup", 0),
        ("memory_save", 1),
    ]
    data = form_data(admin_client, admin_agent_url(crew), "agent_form")
    press(admin_client, admin_agent_url(crew), data, "awareness_sources-0:down")
    assert list(crew.awareness_sources.values_list("name", "position")) == [
        ("Mail", 0),
        ("Calendar", 1),
        ("Notes", 2),
    ]


def test_entries_move_on_their_section_page(admin_client: Client, crew: Agent) -> None:
    rules = crew.sections.get(section_id="ground_rules")
    data = form_data(admin_client, admin_section_url(rules), "sectiondeclaration_form")
    row = row_of(data, "entries", "key", "proactive")
    response = press(admin_client, admin_section_url(rules), data, f"entries-{row}:up")
    assert response.status_code == 302
    assert response["Location"] == f"{admin_section_url(rules)}#entries-group"
    assert list(rules.entries.values_list("key", "position")) == [
        ("privacy", 0),
        ("check_in_hour", 1),
        ("proactive", 2),
        ("ratio", 3),
    ]


def test_a_move_in_a_refused_form_changes_nothing(admin_client: Client, crew: Agent) -> None:
    before = section_order(crew)
    data = form_data(admin_client, admin_agent_url(crew), "agent_form")
    put(data, "name", "   ")
    response = press(admin_client, admin_agent_url(crew), data, "sections-1:up")
    assert_refused(response, "This field is required.")
    assert section_order(crew) == before
    crew.refresh_from_db()
    assert crew.name == "Wren"


def test_a_move_button_of_another_inline_or_a_forged_value_moves_nothing(
    admin_client: Client, crew: Agent
) -> None:
    before = section_order(crew)
    data = form_data(admin_client, admin_agent_url(crew), "agent_form")
    for forged in ("sections-99:up", "sections-1:sideways", "entries-1:up", "nonsense"):
        press(admin_client, admin_agent_url(crew), data, forged)
        assert section_order(crew) == before


# --- positions, typed or blank ------------------------------------------------------------


def test_typed_positions_are_saved_contiguous_in_their_order(
    admin_client: Client, crew: Agent
) -> None:
    data = form_data(admin_client, admin_agent_url(crew), "agent_form")
    for section_id, typed in (("user_profile", "7"), ("ground_rules", "7"), ("habits", "0")):
        put(data, f"sections-{row_of(data, 'sections', 'section_id', section_id)}-position", typed)
    put(data, f"sections-{row_of(data, 'sections', 'section_id', 'goals')}-position", "30")
    assert admin_client.post(admin_agent_url(crew), data).status_code == 302
    # Equal positions keep the rows' order on the page.
    assert section_order(crew) == [
        ("habits", 0),
        ("user_profile", 1),
        ("ground_rules", 2),
        ("goals", 3),
    ]


def test_a_new_row_without_a_position_goes_last_and_deleting_closes_the_gap(
    admin_client: Client, crew: Agent
) -> None:
    data = form_data(admin_client, admin_agent_url(crew), "agent_form")
    put(data, f"sections-{row_of(data, 'sections', 'section_id', 'ground_rules')}-DELETE", "on")
    add_row(data, "sections", **section_row(crew, "notes"))
    assert admin_client.post(admin_agent_url(crew), data).status_code == 302
    assert section_order(crew) == [
        ("user_profile", 0),
        ("habits", 1),
        ("goals", 2),
        ("notes", 3),
    ]


def test_a_negative_position_is_refused(admin_client: Client, crew: Agent) -> None:
    before = section_order(crew)
    data = form_data(admin_client, admin_agent_url(crew), "agent_form")
    put(data, "sections-1-position", "-1")
    response = admin_client.post(admin_agent_url(crew), data)
    assert_refused(response, "Ensure this value is greater than or equal to 0.")
    assert section_order(crew) == before


def test_gaps_left_by_other_writers_close_on_the_next_save(
    admin_client: Client, crew: Agent
) -> None:
    SectionDeclaration.objects.filter(agent=crew, section_id="goals").update(position=40)
    SectionDeclaration.objects.filter(agent=crew, section_id="habits").update(position=12)
    data = form_data(admin_client, admin_agent_url(crew), "agent_form")
    assert admin_client.post(admin_agent_url(crew), data).status_code == 302
    assert [p for _, p in section_order(crew)] == [0, 1, 2, 3]


def test_a_section_added_on_its_own_page_goes_last(
    admin_client: Client, crew: Agent, member: User
) -> None:
    response = admin_client.post(
        "/admin/lens/sectiondeclaration/add/", new_section_page(crew, "later", "Later")
    )
    assert response.status_code == 302
    assert section_order(crew)[-1] == ("later", 4)


def test_a_move_on_the_add_page_creates_the_agent_and_opens_its_page(
    admin_client: Client, team: Team
) -> None:
    data = new_agent_form(admin_client, team)
    response = press(admin_client, "/admin/lens/agent/add/", data, "sections-1:up")
    agent = Agent.objects.get(slug="fresh")
    assert response.status_code == 302
    assert response["Location"] == f"{admin_agent_url(agent)}#sections-group"
    assert section_order(agent) == [("second", 0), ("first", 1)]
