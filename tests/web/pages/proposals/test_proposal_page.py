"""A proposal's page (SPEC §14): what it changes, its diffs, the token delta and every
memory whose fate it changes; and what each visitor may do with it."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lens.actors import Actor
from lens.models import Agent, Proposal
from memory.configuring import publish_proposal
from tests.factories import propose
from tests.pages import buttons, dom, inside
from tests.web.pages.proposals.conftest import retoned

pytestmark = pytest.mark.django_db


def test_a_reviewer_sees_the_change_its_diffs_and_the_memories_it_drops(
    reviewer_client: Client, proposal: Proposal, memories: dict[str, str]
) -> None:
    page = dom(reviewer_client.get(f"/proposals/{proposal.pk}/"))
    assert page.one("data-proposal-status").get("data-proposal-status") == "pending"
    assert page.one("data-words").squashed == "Section User Preferences (user_preferences) removed"
    delta = page.one("data-token-delta")
    before, after = int(delta.get("data-tokens-from") or 0), int(delta.get("data-tokens-to") or 0)
    assert after < before
    assert delta.squashed == (
        f"{before} → {after} tokens (−{before - after}) in the prompt each composes with the "
        "memories as they are now"
    )
    config = page.one("data-diff", "config")
    assert config.text.startswith(f"--- revision 1\n+++ proposal {proposal.pk}\n")
    prompt = page.one("data-diff", "prompt")
    assert "-- **drink**: Tea, never coffee." in prompt.text

    fate = page.one("data-fate", "dropped")
    assert fate.get("data-memory-id") == memories["drink"]
    assert fate.get("data-drop-reason") == "undeclared-section"
    assert "Leaves the prompt" in fate.squashed
    assert "With revision 1: It fills “drink” in User Preferences." in fate.squashed
    assert "which this agent does not declare. undeclared-section" in fate.squashed
    assert f"/memories/{memories['drink']}/" in [a.get("href") for a in inside(fate, "a")]

    assert {"Publish", "Reject"} <= set(buttons(page))
    reason = page.one("name", "reason", tag="textarea")
    assert reason.get("maxlength") == "2000"
    assert page.all("data-why-no-buttons") == []
    # The agent, its lens and its revisions are linked.
    hrefs = [e.get("href") for e in page.elements if e.tag == "a"]
    assert {"/agents/wren/", "/agents/wren/revisions/", "/agents/wren/revisions/1/"} <= set(hrefs)


def test_the_proposer_sees_why_there_are_no_buttons_and_may_withdraw(
    rhea_client: Client, proposal: Proposal
) -> None:
    page = dom(rhea_client.get(f"/proposals/{proposal.pk}/"))
    assert page.one("data-why-no-buttons").squashed == (
        "You proposed this change: another reviewer of the team publishes or rejects it."
    )
    assert buttons(page)[-1:] == ["Withdraw"]
    assert not {"Publish", "Reject"} & set(buttons(page))


def test_a_member_who_is_not_a_reviewer_sees_that_deciding_needs_the_role(
    viewer_client: Client, proposal: Proposal
) -> None:
    page = dom(viewer_client.get(f"/proposals/{proposal.pk}/"))
    assert "needs the reviewer role" in page.one("data-why-no-buttons").squashed
    assert not {"Publish", "Reject", "Withdraw"} & set(buttons(page))
    # The change itself is there for every member to read.
    assert page.one("data-fate", "dropped")


def test_a_non_member_gets_404_and_an_anonymous_visitor_is_sent_to_log_in(
    stranger_client: Client, proposal: Proposal
) -> None:
    assert stranger_client.get(f"/proposals/{proposal.pk}/").status_code == 404
    assert stranger_client.get(f"/proposals/{proposal.pk}/config.diff").status_code == 404
    assert stranger_client.get("/proposals/99999999999/").status_code == 404
    response = Client().get(f"/proposals/{proposal.pk}/")
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next=/proposals/{proposal.pk}/"


def test_the_whole_diffs_download_as_text(reviewer_client: Client, proposal: Proposal) -> None:
    response = reviewer_client.get(f"/proposals/{proposal.pk}/prompt.diff")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert f'filename="wren-proposal-{proposal.pk}-prompt.diff"' in response["Content-Disposition"]
    assert b"-- **drink**: Tea, never coffee." in response.content
    assert reviewer_client.get(f"/proposals/{proposal.pk}/other.diff").status_code == 404


def test_a_published_proposal_links_the_revision_it_became(
    reviewer_client: Client, proposal: Proposal, reviewer: User
) -> None:
    publish_proposal(proposal.agent.team, proposal.pk, Actor.for_user(reviewer))
    page = dom(reviewer_client.get(f"/proposals/{proposal.pk}/"))
    assert page.one("data-proposal-status").get("data-proposal-status") == "published"
    assert page.one("data-fact", "published-as").squashed == "revision 2"
    assert "/agents/wren/revisions/2/" in [e.get("href") for e in page.elements if e.tag == "a"]
    assert not {"Publish", "Reject", "Withdraw"} & set(buttons(page))
    # Still compared with the revision it was made on: what it proposed.
    assert page.one("data-fate", "dropped")


def test_a_stale_proposal_says_it_can_no_longer_be_published(
    reviewer_client: Client, wren: Agent, proposal: Proposal, rhea: User, reviewer: User
) -> None:
    newer = propose(wren.team, "wren", retoned("Dry."), rhea)
    publish_proposal(wren.team, newer.pk, Actor.for_user(reviewer))
    page = dom(reviewer_client.get(f"/proposals/{proposal.pk}/"))
    assert page.one("data-proposal-status").get("data-proposal-status") == "stale"
    assert "can no longer be published" in page.one("data-decided").squashed
    assert not {"Publish", "Reject"} & set(buttons(page))
