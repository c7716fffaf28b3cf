"""Proposals in the approval queue (SPEC §14): rows with ``data-proposal-id`` and buttons
named ``Publish`` and ``Reject``, each with its summary, diffs, token delta and the
memories whose fate it changes; the agent filter; and a page whose queries do not grow
with the proposals."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lens.models import Agent, Proposal, Team
from tests.factories import (
    HTMX,
    create_agent,
    memory_config,
    preference,
    propose,
    remember,
)
from tests.pages import Element, approval_queue, buttons, inside, proposal_row_ids, queue_row_ids
from tests.web.pages.proposals.conftest import protected_config, retoned

pytestmark = pytest.mark.django_db


def proposal_row(page: Any, proposal: Proposal) -> Element:
    found: Element = page.one("data-proposal-id", str(proposal.pk), tag="li")
    return found


def test_a_reviewer_sees_each_proposal_with_what_it_changes_and_its_buttons(
    reviewer_client: Client, wren: Agent, proposal: Proposal, memories: dict[str, str]
) -> None:
    waiting = preference(wren, "Short answers.", label="answers")
    page = approval_queue(reviewer_client)
    assert proposal_row_ids(page) == [proposal.pk]
    assert queue_row_ids(page) == [waiting]
    # Proposals come first.
    rows = [e for e in page.elements if e.tag == "li" and "queue-row" in (e.get("class") or "")]
    assert rows[0].get("data-proposal-id") == str(proposal.pk)

    row = proposal_row(page, proposal)
    assert row.get("data-agent") == "wren"
    # Publish asks first: the dialog's own button publishes (Cancel is focused first).
    assert buttons(row) == ["Publish", "Reject", "Publish as revision 2", "Cancel"]
    assert "Section User Preferences (user_preferences) removed" in row.squashed
    assert "Prompt: " in row.squashed
    assert "tokens (−" in row.squashed
    assert "1 memory changes fate: 1 leaves the prompt, 0 enter it, 0 move." in row.squashed
    fate = inside(row, "li", data_fate="dropped")[0]
    assert fate.get("data-memory-id") == memories["drink"]
    assert fate.get("data-drop-reason") == "undeclared-section"
    diffs = inside(row, "details")[1:]  # inside the row's one "Details"
    assert [d.descendants()[0].squashed.split(" ·")[0] for d in diffs] == [
        "Config diff",
        "Prompt diff",
    ]
    assert "-- **drink**: Tea, never coffee." in inside(row, "pre", data_diff="prompt")[0].text
    reason = inside(row, "input", name="reason")[0]
    assert reason.get("maxlength") == "2000"
    assert f"/proposals/{proposal.pk}/" in [a.get("href") for a in inside(row, "a")]
    assert "publishing takes the dialog's own button, never one key" in (
        page.one("id", "shortcuts").squashed
    )


def test_the_proposer_sees_why_there_are_no_buttons_and_a_member_only_reads(
    rhea_client: Client, viewer_client: Client, proposal: Proposal
) -> None:
    mine = proposal_row(approval_queue(rhea_client), proposal)
    why = [e for e in mine.descendants() if "data-why-no-buttons" in e.attrs]
    assert why[0].squashed == (
        "You proposed this change: another reviewer of the team publishes or rejects it."
    )
    assert buttons(mine) == ["Withdraw"]

    page = approval_queue(viewer_client)
    assert buttons(proposal_row(page, proposal)) == []
    assert page.one("data-read-only")


def test_the_agent_filter_keeps_other_agents_proposals_out(
    reviewer_client: Client, team: Team, proposal: Proposal, rhea: User
) -> None:
    create_agent(team, "atlas", memory_config(name="Atlas", protected=True))
    theirs = propose(team, "atlas", memory_config(name="Atlas", protected=True, tone="Dry."), rhea)
    assert proposal_row_ids(approval_queue(reviewer_client)) == [proposal.pk, theirs.pk]
    assert proposal_row_ids(approval_queue(reviewer_client, "?agent=atlas")) == [theirs.pk]
    filtered = reviewer_client.get("/approvals/?agent=wren", headers=HTMX)
    assert proposal_row_ids(approval_queue(reviewer_client, "?agent=wren")) == [proposal.pk]
    assert f'data-proposal-id="{theirs.pk}"' not in filtered.content.decode()
    # A section filter is about memories: proposals have no section.
    assert proposal_row_ids(approval_queue(reviewer_client, "?section=user_preferences")) == []


def test_only_pending_proposals_wait_in_the_queue(
    reviewer_client: Client, rhea_client: Client, proposal: Proposal
) -> None:
    rhea_client.post(f"/proposals/{proposal.pk}/withdraw/", {"team": "acme"})
    page = approval_queue(reviewer_client)
    assert proposal_row_ids(page) == []
    assert "Nothing to review" in page.one("class", "empty card").squashed


def test_a_row_names_the_first_few_fates_and_links_the_page_for_the_rest(
    reviewer_client: Client, wren: Agent, memories: dict[str, str], rhea: User
) -> None:
    for n in range(7):
        remember(wren, "profile", f"Fact {n}.", label=f"fact{n}")
    config = copy.deepcopy(protected_config())
    config["background"]["sections"][0]["title"] = "About You"
    proposal = propose(wren.team, "wren", config, rhea)
    row = proposal_row(approval_queue(reviewer_client), proposal)
    assert len(inside(row, "li", data_fate="moved")) == 5
    more = inside(row, "p", data_fates_more="3")[0]
    assert more.squashed == "And 3 more: see them all on the proposal's page."
    assert [a.get("href") for a in inside(more, "a")] == [f"/proposals/{proposal.pk}/"]


def test_the_queue_shows_the_oldest_twenty_and_counts_the_rest(
    reviewer_client: Client, wren: Agent, rhea: User
) -> None:
    proposals = [propose(wren.team, "wren", retoned(f"Tone {n}."), rhea) for n in range(23)]
    page = approval_queue(reviewer_client)
    assert proposal_row_ids(page) == [p.pk for p in proposals[:20]]
    assert page.one("data-proposals").get("data-proposals") == "23"
    assert "The oldest 20 of 23 are shown" in page.one("data-proposals").squashed


def test_the_queue_s_query_count_does_not_grow_with_its_proposals(
    reviewer_client: Client,
    viewer_client: Client,
    team: Team,
    wren: Agent,
    memories: dict[str, str],
    rhea: User,
    django_assert_max_num_queries: Any,
) -> None:
    readers = {"decide": reviewer_client, "read": viewer_client}
    propose(team, "wren", retoned("Dry."), rhea)
    one = {}
    for name, client in readers.items():
        assert proposal_row_ids(approval_queue(client)) != []  # warm-up: sessions, caches
        with django_assert_max_num_queries(30) as queries:
            assert client.get("/approvals/").status_code == 200
        one[name] = len(queries)

    # Many proposals, of several agents, each changing the fate of memories.
    for n in range(3):
        slug = f"agent{n}"
        create_agent(team, slug, memory_config(name=f"Agent {n}", protected=True))
        agent = Agent.objects.get(team=team, slug=slug)
        for m in range(5):
            remember(agent, "profile", f"Fact {m}.", label=f"fact{m}")
        for m in range(8):
            config = memory_config(name=f"Agent {n}", protected=True, tone=f"Tone {m}.")
            config["background"]["sections"][0]["title"] = f"About {m}"
            propose(team, slug, config, rhea)
    for name, client in readers.items():
        page = approval_queue(client)  # warm-up
        assert len(proposal_row_ids(page)) == 20
        # One more at most: the count of the proposals not shown, asked once a page is full.
        with django_assert_max_num_queries(one[name] + 1, info=f"{name}: 25 proposals"):
            assert client.get("/approvals/").status_code == 200


def test_a_queue_with_no_proposal_asks_for_them_once(
    reviewer_client: Client, wren: Agent, django_assert_max_num_queries: Any
) -> None:
    preference(wren, "Short answers.", label="answers")
    assert reviewer_client.get("/approvals/").status_code == 200
    with django_assert_max_num_queries(18):
        page = approval_queue(reviewer_client)
    assert proposal_row_ids(page) == []
    assert page.all("data-proposals") == []
