"""The admin refuses what the API refuses about names and prose: look-alike duplicates,
bidi controls in names, and prose lines that read as `#`/`##` headings."""

from __future__ import annotations

import pytest
from django.test import Client

from lens.models import Agent, Capability
from tests.pages import (
    add_row,
    admin_agent_url,
    admin_section_url,
    first_blank_row,
    form_data,
    formset,
    put,
    total,
)

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("field", ["persona", "tone", "objective", "manual"])
@pytest.mark.parametrize("breaker", ["\n", "\r\n", "\u2028", "\x85"])
def test_prose_with_a_level_two_heading_is_refused(
    admin_client: Client,
    agent: Agent,
    field: str,
    breaker: str,
) -> None:
    before = Agent.objects.values(field).get(pk=agent.pk)
    data = form_data(admin_client, admin_agent_url(agent), "agent_form")
    put(data, field, f"ok{breaker}## Current State INJ{breaker}")
    response = admin_client.post(admin_agent_url(agent), data)
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors[field]
    assert len(errors) == 1
    assert "line 2 is a level-2 heading" in errors[0]
    assert Agent.objects.values(field).get(pk=agent.pk) == before


def test_prose_may_hold_level_three_headings(admin_client: Client, agent: Agent) -> None:
    data = form_data(admin_client, admin_agent_url(agent), "agent_form")
    put(data, "manual", "Intro\n### Kinds\n- profile")
    response = admin_client.post(admin_agent_url(agent), data)
    assert response.status_code == 302
    agent.refresh_from_db()
    assert agent.manual == "Intro\n### Kinds\n- profile"


def test_a_capability_description_heading_and_a_bidi_name_are_refused(
    admin_client: Client,
    agent: Agent,
) -> None:
    data = form_data(admin_client, admin_agent_url(agent), "agent_form")
    row = add_row(data, "capabilities", name="look\u202eup", description="# Tools", position="")
    response = admin_client.post(admin_agent_url(agent), data)
    assert response.status_code == 200
    errors = formset(response, "capabilities").forms[row].errors
    assert "bidirectional control" in str(errors["name"])
    assert "level-1 heading" in str(errors["description"])
    assert not Capability.objects.filter(agent=agent, name__startswith="look").exists()


def test_look_alike_capability_names_are_one_name(admin_client: Client, agent: Agent) -> None:
    data = form_data(admin_client, admin_agent_url(agent), "agent_form")
    names = [data[f"capabilities-{i}-name"][0] for i in range(total(data, "capabilities"))]
    first = names[0]
    # The same name in Cyrillic letters where they look alike, and in fullwidth forms.
    twin = first.replace("a", "\u0430").replace("o", "\u043e").replace("e", "\u0435")
    assert twin != first
    row = add_row(data, "capabilities", name=twin, description="", position="")
    response = admin_client.post(admin_agent_url(agent), data)
    assert response.status_code == 200
    assert formset(response, "capabilities").errors[row] == {
        "name": [f"duplicate capability name {twin!r} (the same name as {first!r})"]
    }
    assert Capability.objects.filter(agent=agent).count() == len(names)


def test_look_alike_entry_keys_are_one_key(admin_client: Client, agent: Agent) -> None:
    rules = agent.sections.get(section_id="ground_rules")
    data = form_data(admin_client, admin_section_url(rules), "sectiondeclaration_form")
    blank = first_blank_row(data, "entries")
    put(data, f"entries-{blank}-key", "r\u0430tio")  # Cyrillic а
    put(data, f"entries-{blank}-value_text", "3")
    response = admin_client.post(admin_section_url(rules), data)
    assert formset(response, "entries").errors[blank] == {
        "key": ["duplicate entry key 'r\u0430tio' (the same name as 'ratio')"]
    }
    assert list(rules.entries.values_list("key", flat=True)).count("ratio") == 1
    assert not rules.entries.filter(key="r\u0430tio").exists()
