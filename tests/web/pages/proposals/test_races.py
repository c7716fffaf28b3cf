"""Reviewers deciding one proposal at once, on the real database (SPEC §14): exactly one
decision lands, and every other reviewer is told it was decided already."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lens.models import Agent, Membership, Proposal, ProposalStatus, Revision, Role, Team
from tests.factories import logged_in, make_user, post_proposal, race, revision_count


@pytest.fixture
def tess(team: Team) -> User:
    """A third reviewer of acme, by role."""
    user = make_user("tess")
    Membership.objects.create(team=team, user=user, role=Role.REVIEWER)
    return user


@pytest.mark.django_db(transaction=True)
def test_reviewers_publishing_one_proposal_at_once_publish_it_once(
    wren: Agent, proposal: Proposal, reviewer: User, tess: User
) -> None:
    clients = [logged_in(user) for user in (reviewer, tess, reviewer, tess)]

    answers = race(
        len(clients), lambda i: post_proposal(clients[i], proposal.pk, "publish", htmx=True)
    )

    assert sorted(r.status_code for r in answers) == [200, 409, 409, 409]
    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.PUBLISHED
    assert revision_count(wren) == 2
    winner = next(i for i, r in enumerate(answers) if r.status_code == 200)
    who = ("mira", "tess")[winner % 2]
    assert proposal.decided_by == who
    assert Revision.objects.get(agent=wren, number=2).approved_by == who
    for response in answers:
        if response.status_code == 409:
            assert response.content.decode() == (
                f"Proposal {proposal.pk} was already published by {who}: nothing was changed."
            )


@pytest.mark.django_db(transaction=True)
def test_a_publish_and_a_reject_at_once_land_exactly_one_decision(
    wren: Agent, proposal: Proposal, reviewer: User, tess: User
) -> None:
    clients: list[Client] = [logged_in(reviewer), logged_in(tess)]
    actions = ["publish", "reject"]

    answers = race(2, lambda i: post_proposal(clients[i], proposal.pk, actions[i], htmx=True))

    assert sorted(r.status_code for r in answers) == [200, 409]
    proposal.refresh_from_db()
    landed = actions[next(i for i, r in enumerate(answers) if r.status_code == 200)]
    if landed == "publish":
        assert (proposal.status, revision_count(wren)) == ("published", 2)
    else:
        assert (proposal.status, revision_count(wren)) == ("rejected", 1)
