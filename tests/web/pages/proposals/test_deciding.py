"""Publishing, rejecting and withdrawing a proposal (SPEC §14): only a reviewer of the
team who did not propose it decides it, only its proposer withdraws it; anyone else is
refused with nothing changed. A proposal decided meanwhile is decided once."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lens.actors import Actor
from lens.agents import config_of, with_config
from lens.models import Agent, Membership, Proposal, ProposalStatus, Revision, Role, Team
from memory.configuring import publish_proposal
from tests.factories import (
    grant,
    logged_in,
    make_user,
    post_proposal,
    propose,
    revision_count,
)
from tests.pages import alert_text, assert_refusal_logged, dom, fragment
from tests.web.pages.proposals.conftest import retoned

pytestmark = pytest.mark.django_db


def status_of(proposal: Proposal) -> str:
    proposal.refresh_from_db()
    return proposal.status


def section_ids(agent: Agent) -> list[str]:
    config = config_of(with_config(Agent.objects.filter(pk=agent.pk)).get())
    return [section.id for section in config.background.sections]


def assert_unchanged(wren: Agent, proposal: Proposal) -> None:
    assert revision_count(wren) == 1
    assert status_of(proposal) == ProposalStatus.PENDING
    assert proposal.decided_by is None
    assert section_ids(wren) == ["user_profile", "user_preferences"]


# --- publishing ---------------------------------------------------------------------


def test_a_reviewer_publishes_it_as_the_next_revision_approved_by_them(
    reviewer_client: Client, wren: Agent, proposal: Proposal
) -> None:
    response = post_proposal(reviewer_client, proposal.pk, "publish")
    assert response.status_code == 302
    assert response["Location"] == f"/proposals/{proposal.pk}/?team=acme"

    assert status_of(proposal) == ProposalStatus.PUBLISHED
    assert proposal.decided_by == "mira"
    revision = Revision.objects.get(agent=wren, number=2)
    assert (revision.via, revision.actor, revision.approved_by) == ("proposal", "rhea", "mira")
    assert section_ids(wren) == ["user_profile"]

    page = dom(reviewer_client.get(response["Location"]))
    assert f"Proposal {proposal.pk} of Wren published as revision 2 (approved by mira)." in (
        alert_text(page)
    )
    assert "/agents/wren/revisions/2/" in page.links("revision 2")


def test_publishing_from_the_queue_swaps_the_row_for_what_happened(
    reviewer_client: Client, wren: Agent, proposal: Proposal
) -> None:
    response = post_proposal(reviewer_client, proposal.pk, "publish", htmx=True, back="queue")
    assert response.status_code == 200
    row = fragment(response).one("data-proposal-id", str(proposal.pk), tag="li")
    assert row.get("data-decision") == "published"
    assert "published as revision 2" in row.squashed
    assert revision_count(wren) == 2


def test_without_javascript_the_queue_s_forms_come_back_to_the_queue(
    reviewer_client: Client, proposal: Proposal
) -> None:
    response = post_proposal(reviewer_client, proposal.pk, "publish", back="queue", agent="wren")
    assert response.status_code == 302
    assert response["Location"] == "/approvals/?team=acme&agent=wren"
    assert "published as revision 2" in alert_text(dom(reviewer_client.get(response["Location"])))


def test_a_member_holding_the_reviewer_role_may_publish(
    team: Team, wren: Agent, proposal: Proposal
) -> None:
    tess = make_user("tess")
    Membership.objects.create(team=team, user=tess, role=Role.REVIEWER)
    assert post_proposal(logged_in(tess), proposal.pk, "publish").status_code == 302
    assert status_of(proposal) == ProposalStatus.PUBLISHED


def test_publishing_twice_lands_once_and_says_who_decided(
    reviewer_client: Client, wren: Agent, proposal: Proposal, team: Team
) -> None:
    tess = make_user("tess")
    Membership.objects.create(team=team, user=tess, role=Role.REVIEWER)
    assert post_proposal(reviewer_client, proposal.pk, "publish").status_code == 302

    tess_client = logged_in(tess)
    again = post_proposal(tess_client, proposal.pk, "publish")
    assert again.status_code == 302
    said = alert_text(dom(tess_client.get(again["Location"])))
    assert f"Proposal {proposal.pk} was already published by mira: nothing was changed." in said
    # From the queue, the row says so: a 409 whose text htmx shows in it.
    for action in ("publish", "reject"):
        answer = post_proposal(tess_client, proposal.pk, action, htmx=True)
        assert answer.status_code == 409
        assert answer["Content-Type"] == "text/plain; charset=utf-8"
        assert answer.content.decode() == (
            f"Proposal {proposal.pk} was already published by mira: nothing was changed."
        )
    assert revision_count(wren) == 2
    assert Revision.objects.get(agent=wren, number=2).approved_by == "mira"


def test_a_proposal_left_stale_by_another_says_so_and_publishes_nothing(
    reviewer_client: Client, wren: Agent, proposal: Proposal, rhea: User, reviewer: User
) -> None:
    newer = propose(wren.team, "wren", retoned("Dry."), rhea)
    publish_proposal(wren.team, newer.pk, Actor.for_user(reviewer))
    assert status_of(proposal) == ProposalStatus.STALE

    response = post_proposal(reviewer_client, proposal.pk, "publish")
    said = alert_text(dom(reviewer_client.get(response["Location"])))
    assert f"Proposal {proposal.pk} is stale already:" in said
    assert "moved to revision 2" in said
    assert "Nothing was changed." in said
    assert revision_count(wren) == 2
    assert section_ids(wren) == ["user_profile", "user_preferences"]


def test_publishing_after_the_agent_moved_marks_it_stale_and_changes_nothing(
    reviewer_client: Client, wren: Agent, proposal: Proposal, rhea: User, reviewer: User
) -> None:
    newer = propose(wren.team, "wren", retoned("Dry."), rhea)
    publish_proposal(wren.team, newer.pk, Actor.for_user(reviewer))
    # As if it had been made before stale proposals were marked: still pending, but the
    # agent is at revision 2 now.
    Proposal.objects.filter(pk=proposal.pk).update(status=ProposalStatus.PENDING)

    response = post_proposal(reviewer_client, proposal.pk, "publish", htmx=True)
    assert response.status_code == 200
    row = fragment(response).one("data-proposal-id", str(proposal.pk), tag="li")
    assert row.get("data-decision") == "stale"
    assert "Wren moved to revision 2 before proposal" in row.squashed
    assert "Nothing was changed." in row.squashed
    assert status_of(proposal) == ProposalStatus.STALE
    assert revision_count(wren) == 2
    assert section_ids(wren) == ["user_profile", "user_preferences"]


def test_publishing_leaves_the_agent_s_other_proposals_stale_and_their_rows_say_so(
    reviewer_client: Client, wren: Agent, proposal: Proposal, rhea: User
) -> None:
    other = propose(wren.team, "wren", retoned("Dry."), rhea)
    response = post_proposal(reviewer_client, other.pk, "publish", htmx=True)
    page = fragment(response)
    aside = page.one("data-proposal-id", str(proposal.pk), tag="li")
    assert aside.get("hx-swap-oob") == "true"
    assert aside.get("data-decision") == "stale"
    assert status_of(proposal) == ProposalStatus.STALE


# --- rejecting and withdrawing -------------------------------------------------------


def test_a_reviewer_rejects_it_with_a_reason_and_the_agent_is_unchanged(
    reviewer_client: Client, wren: Agent, proposal: Proposal
) -> None:
    response = post_proposal(reviewer_client, proposal.pk, "reject", reason="  Keep them.  ")
    assert response.status_code == 302
    proposal.refresh_from_db()
    assert (proposal.status, proposal.decided_by, proposal.reason) == (
        "rejected",
        "mira",
        "Keep them.",
    )
    assert revision_count(wren) == 1
    said = alert_text(dom(reviewer_client.get(response["Location"])))
    assert f"Proposal {proposal.pk} of Wren rejected by mira. Reason: Keep them." in said

    htmx = post_proposal(reviewer_client, proposal.pk, "reject", htmx=True)
    assert htmx.status_code == 409


def test_a_reason_too_long_rejects_nothing(
    reviewer_client: Client, wren: Agent, proposal: Proposal
) -> None:
    response = post_proposal(reviewer_client, proposal.pk, "reject", htmx=True, reason="x" * 2001)
    assert response.status_code == 400
    assert "at most 2000 characters" in response.content.decode()
    assert_unchanged(wren, proposal)


def test_the_proposer_withdraws_it_and_nobody_else_may(
    reviewer_client: Client,
    rhea_client: Client,
    viewer_client: Client,
    wren: Agent,
    proposal: Proposal,
) -> None:
    for client in (reviewer_client, viewer_client):
        assert post_proposal(client, proposal.pk, "withdraw").status_code == 403
        assert post_proposal(client, proposal.pk, "withdraw", htmx=True).status_code == 403
    assert_unchanged(wren, proposal)

    response = post_proposal(rhea_client, proposal.pk, "withdraw")
    assert response.status_code == 302
    assert status_of(proposal) == ProposalStatus.WITHDRAWN
    assert "withdrawn: nothing was changed" in alert_text(
        dom(rhea_client.get(response["Location"]))
    )
    assert revision_count(wren) == 1


def test_a_proposer_who_is_not_a_reviewer_may_withdraw_their_own(
    team: Team, wren: Agent, memories: dict[str, str], viewer: User, viewer_client: Client
) -> None:
    theirs = propose(team, "wren", retoned("Dry."), viewer)
    page = dom(viewer_client.get(f"/proposals/{theirs.pk}/"))
    assert "You proposed this change" in page.one("data-why-no-buttons").squashed
    assert post_proposal(viewer_client, theirs.pk, "withdraw").status_code == 302
    assert status_of(theirs) == ProposalStatus.WITHDRAWN


# --- who may not ---------------------------------------------------------------------


@pytest.mark.parametrize("htmx", [False, True])
@pytest.mark.parametrize("action", ["publish", "reject"])
def test_the_proposer_s_forged_decision_is_refused_and_changes_nothing(
    rhea_client: Client, wren: Agent, proposal: Proposal, action: str, htmx: bool
) -> None:
    # rhea is a reviewer of acme: only being the proposer stops her.
    response = post_proposal(rhea_client, proposal.pk, action, htmx=htmx)
    assert response.status_code == 403
    assert_unchanged(wren, proposal)


@pytest.mark.parametrize("action", ["publish", "reject"])
def test_a_member_who_is_not_a_reviewer_gets_403_and_nothing_changes(
    viewer_client: Client, wren: Agent, proposal: Proposal, action: str
) -> None:
    assert post_proposal(viewer_client, proposal.pk, action).status_code == 403
    assert post_proposal(viewer_client, proposal.pk, action, htmx=True).status_code == 403
    assert_unchanged(wren, proposal)


@pytest.mark.parametrize("action", ["publish", "reject", "withdraw"])
def test_a_non_member_gets_404_or_400_and_nothing_changes(
    stranger: User, wren: Agent, proposal: Proposal, action: str
) -> None:
    client = logged_in(grant(stranger))  # the permission is not team-scoped; membership is
    assert post_proposal(client, proposal.pk, action, team="globex").status_code == 404
    # A form naming acme, which they do not belong to, is refused outright.
    assert post_proposal(client, proposal.pk, action).status_code == 400
    assert_unchanged(wren, proposal)


@pytest.mark.parametrize("htmx", [False, True])
def test_a_refused_publish_is_logged_in_one_line_without_a_traceback(
    viewer_client: Client,
    wren: Agent,
    proposal: Proposal,
    htmx: bool,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO):
        response = post_proposal(viewer_client, proposal.pk, "publish", htmx=htmx)
    assert response.status_code == 403
    assert b"needs the reviewer role" in response.content  # the page says why, as before
    assert_refusal_logged(caplog, f"/proposals/{proposal.pk}/publish/")


@pytest.mark.parametrize("action", ["publish", "reject", "withdraw"])
def test_an_anonymous_visitor_is_sent_to_log_in(
    wren: Agent, proposal: Proposal, action: str
) -> None:
    for htmx in (False, True):
        response = post_proposal(Client(), proposal.pk, action, htmx=htmx)
        assert response.status_code == 302
        path = f"/proposals/{proposal.pk}/{action}/"
        assert response["Location"] == f"/accounts/login/?next={path}"
    assert_unchanged(wren, proposal)


def test_a_get_changes_nothing(reviewer_client: Client, wren: Agent, proposal: Proposal) -> None:
    for action in ("publish", "reject", "withdraw"):
        assert reviewer_client.get(f"/proposals/{proposal.pk}/{action}/").status_code == 405
    assert_unchanged(wren, proposal)


def test_the_forms_need_their_csrf_token(reviewer: User, wren: Agent, proposal: Proposal) -> None:
    client = logged_in(reviewer, enforce_csrf_checks=True)
    assert post_proposal(client, proposal.pk, "publish").status_code == 403
    assert_unchanged(wren, proposal)


def test_publishing_a_proposal_whose_spec_is_gone_says_why(
    reviewer_client: Client, wren: Agent, proposal: Proposal, settings: Any
) -> None:
    settings.MEMORY_ROUTING_SPECS = []  # user-background, which it names, is gone
    response = post_proposal(reviewer_client, proposal.pk, "publish", htmx=True)
    assert response.status_code == 400
    assert "was not published" in response.content.decode()
    assert_unchanged(wren, proposal)
