"""Admin text is stored as typed with line breaks normalised to LF (SPEC §9): a browser
submits every textarea's line breaks as CR LF, and a form saved unchanged changes nothing.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from django.test import Client

from demo.configs import COMPANION
from lens.agents import config_of
from lens.core.text import normalise_line_breaks
from lens.models import Agent, AuthoredEntry, Capability, Team
from memory.composition import compose
from tests.factories import create_agent
from tests.pages import FormData, admin_agent_url, admin_section_url, form_data, put

pytestmark = pytest.mark.django_db


def as_a_browser_sends(data: FormData) -> FormData:
    """What a browser posts for ``data``: only a textarea's value can hold a line break,
    and the browser sends each one as CR LF."""
    return {
        name: [value.replace("\n", "\r\n") for value in values] for name, values in data.items()
    }


def multiline_wren(team: Team) -> Agent:
    """The demo's Wren, with multi-line text in every kind of field the admin edits and
    trailing line breaks and spaces that trimming would lose."""
    config: dict[str, Any] = copy.deepcopy(COMPANION)
    config["manual"] += "\n"
    config["persona"] = "  " + config["persona"] + "\n\n"
    config["capabilities"][0]["description"] = "Save a memory.\nOne fact a call.\n"
    config["awareness"][0]["description"] = "Two lines\nof description."
    config["background"]["sections"][0]["entries"].append(
        {"key": "address", "value": "12 Rua Augusta\nLisbon\n"}
    )
    return create_agent(team, "wren", config)


def stored(agent: Agent) -> tuple[str, str]:
    """The agent's config as the API answers it, and its composed prompt."""
    agent = Agent.objects.get(pk=agent.pk)
    return config_of(agent).model_dump_json(), compose(agent).prompt.text


def test_saving_the_agent_unchanged_as_a_browser_does_changes_nothing(
    admin_client: Client, team: Team
) -> None:
    agent = multiline_wren(team)
    before = stored(agent)
    manual = Agent.objects.get(pk=agent.pk).manual
    data = as_a_browser_sends(form_data(admin_client, admin_agent_url(agent), "agent_form"))
    assert any("\r\n" in value for values in data.values() for value in values)

    response = admin_client.post(admin_agent_url(agent), data)

    assert response.status_code == 302
    assert stored(agent) == before
    after = Agent.objects.get(pk=agent.pk)
    assert after.manual == manual
    assert "\r" not in after.manual + after.persona
    assert after.persona.endswith("\n\n")
    assert after.persona.startswith("  ")
    assert Capability.objects.get(agent=agent, name="memory_save").description == (
        "Save a memory.\nOne fact a call.\n"
    )


def test_saving_a_section_unchanged_as_a_browser_does_changes_nothing(
    admin_client: Client, team: Team
) -> None:
    agent = multiline_wren(team)
    before = stored(agent)
    section = agent.sections.get(section_id="user_profile")
    url = admin_section_url(section)
    data = as_a_browser_sends(form_data(admin_client, url, "sectiondeclaration_form"))

    response = admin_client.post(url, data)

    assert response.status_code == 302
    assert stored(agent) == before
    assert AuthoredEntry.objects.get(section=section, key="address").value == (
        "12 Rua Augusta\nLisbon\n"
    )


@pytest.mark.parametrize("typed", ["one\r\ntwo\r\n", "one\rtwo\r", "one\ntwo\n", "one\r\r\ntwo\n"])
def test_text_typed_with_any_line_breaks_is_stored_with_lf(
    admin_client: Client, team: Team, typed: str
) -> None:
    agent = multiline_wren(team)
    data = form_data(admin_client, admin_agent_url(agent), "agent_form")
    put(data, "manual", typed)
    assert admin_client.post(admin_agent_url(agent), data).status_code == 302
    manual = Agent.objects.get(pk=agent.pk).manual
    assert manual == typed.replace("\r\n", "\n").replace("\r", "\n")
    assert "\r" not in manual


def test_normalising_is_linear_on_adversarial_input() -> None:
    # A million CRs and CR LFs: two passes of str.replace, no backtracking.
    text = "\r" * 500_000 + "\r\n" * 500_000
    assert normalise_line_breaks(text) == "\n" * 1_000_000
    assert normalise_line_breaks("no breaks at all") == "no breaks at all"
    assert normalise_line_breaks("\u2028 stays\x85") == "\u2028 stays\x85"
