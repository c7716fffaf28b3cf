"""The lens and the agents list say which agents are protected and how many proposals
wait for each, linked to the queue filtered to that agent (SPEC §14)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lens.models import Agent, Proposal, Team
from tests.factories import create_agent, memory_config, propose
from tests.pages import dom, inside
from tests.web.pages.proposals.conftest import retoned

pytestmark = pytest.mark.django_db


def test_the_lens_of_a_protected_agent_links_its_waiting_proposals(
    member_client: Client, wren: Agent, proposal: Proposal, rhea: User
) -> None:
    propose(wren.team, "wren", retoned("Dry."), rhea)
    line = dom(member_client.get("/agents/wren/")).one("data-protected")
    assert line.get("data-pending-proposals") == "2"
    assert line.squashed == (
        "Protected Changes wait as proposals for a second reviewer. 2 proposals waiting"
    )
    assert [a.get("href") for a in inside(line, "a")] == ["/approvals/?agent=wren"]


def test_a_protected_agent_with_nothing_waiting_says_so_and_others_say_nothing(
    member_client: Client, team: Team, wren: Agent
) -> None:
    line = dom(member_client.get("/agents/wren/")).one("data-protected")
    assert line.get("data-pending-proposals") == "0"
    assert "None is waiting." in line.squashed
    create_agent(team, "atlas", memory_config(name="Atlas"))
    assert dom(member_client.get("/agents/atlas/")).all("data-protected") == []


def test_the_agents_list_marks_protected_agents_and_links_their_proposals(
    member_client: Client,
    team: Team,
    wren: Agent,
    proposal: Proposal,
) -> None:
    create_agent(team, "atlas", memory_config(name="Atlas"))
    page = dom(member_client.get("/"))
    cards = {e.get("data-agent"): e for e in page.all("data-agent", tag="li")}
    (wren_line,) = inside(cards["wren"], "p", data_pending_proposals="1")
    assert wren_line.squashed == "Protected 1 proposal waiting"
    assert [a.get("href") for a in inside(wren_line, "a")] == ["/approvals/?agent=wren"]
    assert inside(cards["atlas"], "p", data_pending_proposals="0") == []
