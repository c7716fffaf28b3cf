"""Stale rows and races in the approval queue (SPEC §5.4): a row decided or superseded
meanwhile changes nothing and says why; reviewers racing on the real database land exactly
one decision.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lens.actors import Actor
from lens.models import Agent
from memory.decisions import decide, pending_count
from memory.models import EventKind, MemoryEvent, PromotionStatus
from tests.factories import (
    decisions,
    in_prompt,
    logged_in,
    many_pending,
    post_bulk,
    post_decision,
    preference,
    promotion_of,
    race,
)
from tests.pages import alerts, dom, fragment, oob_count

pytestmark = pytest.mark.django_db


# --- races and stale rows ----------------------------------------------------------


def test_deciding_a_row_someone_already_decided_changes_nothing_and_says_who(
    reviewer_client: Client, wren: Agent, rhea: User
) -> None:
    record_id = preference(wren, "Tea, never coffee.", label="drink")
    waiting = preference(wren, "Short answers.", label="answers")
    decide(record_id, True, Actor.for_user(rhea))
    before = promotion_of(record_id)

    response = post_decision(reviewer_client, record_id, "reject", reason="nope")
    assert response.status_code == 200
    page = fragment(response)
    stale = page.one("data-promotion-id", record_id)
    assert stale.get("data-decision") == "stale"
    assert "already decided by rhea" in stale.squashed
    assert "approved" in stale.squashed
    assert oob_count(page) == 1

    after = promotion_of(record_id)
    assert (after.status, after.decided_by, after.decided_at, after.decision_note) == (
        PromotionStatus.APPROVED,
        rhea,
        before.decided_at,
        "",
    )
    assert decisions(record_id) == [(record_id, "approved", "rhea")]
    assert promotion_of(waiting).status == PromotionStatus.PENDING


def test_without_javascript_a_stale_decision_says_who_after_the_redirect(
    reviewer_client: Client, wren: Agent, rhea: User
) -> None:
    record_id = preference(wren, "Wants daily jokes.", label="jokes")
    decide(record_id, False, Actor.for_user(rhea), "not useful")
    response = post_decision(reviewer_client, record_id, "approve", htmx=False)
    assert response.status_code == 302
    assert response["Location"] == "/approvals/?team=acme"
    shown = alerts(dom(reviewer_client.get("/approvals/")))
    assert any("already decided by rhea" in m and "rejected" in m for m in shown), shown
    assert promotion_of(record_id).status == PromotionStatus.REJECTED
    assert decisions(record_id) == [(record_id, "rejected", "rhea")]


def test_deciding_a_row_whose_memory_was_superseded_meanwhile_says_so(
    reviewer_client: Client, wren: Agent
) -> None:
    older = preference(wren, "Likes jazz.", label="music")
    newer = preference(wren, "Likes jazz and blues.", label="music", supersedes=older)
    assert promotion_of(older).status == PromotionStatus.SUPERSEDED

    for decision in ("approve", "reject"):
        response = post_decision(reviewer_client, older, decision)
        assert response.status_code == 200
        stale = fragment(response).one("data-promotion-id", older)
        assert stale.get("data-decision") == "stale"
        assert "superseded" in stale.squashed
        assert newer in stale.squashed

    assert promotion_of(older).status == PromotionStatus.SUPERSEDED
    assert promotion_of(older).decided_by is None
    assert promotion_of(newer).status == PromotionStatus.PENDING
    assert decisions(older, newer) == []


@pytest.mark.django_db(transaction=True)
def test_reviewers_deciding_one_row_at_once_land_exactly_one_decision(
    wren: Agent, reviewer: User, rhea: User
) -> None:
    record_ids = many_pending(wren, 3)
    # Two browsers each: approvers and rejecters race on every row.
    clients = [logged_in(user) for user in (reviewer, rhea, reviewer, rhea)]
    wanted = ["approve", "reject", "reject", "approve"]

    def post_as(record_id: str, i: int) -> Any:
        return post_decision(clients[i], record_id, wanted[i])

    for record_id in record_ids:
        answers = race(len(clients), partial(post_as, record_id))
        landed = decisions(record_id)
        assert len(landed) == 1, landed
        _rid, kind, who = landed[0]
        row = promotion_of(record_id)
        assert row.status == kind
        assert row.decided_by is not None
        assert row.decided_by.get_username() == who
        outcomes = []
        for response in answers:
            assert response.status_code == 200
            element = fragment(response).one("data-promotion-id", record_id)
            outcome = element.get("data-decision")
            assert outcome is not None
            outcomes.append(outcome)
            if outcome == "stale":
                assert f"already decided by {who}" in element.squashed
        assert sorted(outcomes) == sorted([kind, "stale", "stale", "stale"])
    assert pending_count(wren.team) == 0


@pytest.mark.django_db(transaction=True)
def test_overlapping_bulk_decisions_at_once_land_all_or_nothing(
    wren: Agent, reviewer: User, rhea: User
) -> None:
    a, b, c, d = many_pending(wren, 4)
    mira_client, rhea_client = logged_in(reviewer), logged_in(rhea)
    bulks = [(mira_client, "approve", [a, b, c]), (rhea_client, "reject", [b, c, d])]
    answers = race(2, lambda i: post_bulk(*bulks[i]))
    assert [r.status_code for r in answers] == [200, 200]
    statuses = {rid: promotion_of(rid).status for rid in (a, b, c, d)}
    assert statuses in (
        {a: "approved", b: "approved", c: "approved", d: "pending"},
        {a: "pending", b: "rejected", c: "rejected", d: "rejected"},
    ), statuses
    assert len(decisions(a, b, c, d)) == 3
    errors = [
        r
        for r in answers
        if fragment(r).all("role", "alert") and b"Nothing was changed" in r.content
    ]
    assert len(errors) == 1


@pytest.mark.django_db(transaction=True)
def test_reviewers_revoking_one_memory_at_once_revoke_it_once(
    wren: Agent, reviewer: User, rhea: User
) -> None:
    record_id = preference(wren, "Tea, never coffee.", label="drink")
    decide(record_id, True, Actor.for_user(reviewer))
    clients = [logged_in(user) for user in (reviewer, rhea, reviewer, rhea)]
    answers = race(
        len(clients),
        lambda i: clients[i].post(
            f"/memories/{record_id}/revoke/", {"team": "acme", "confirm": "on"}
        ),
    )
    assert [r.status_code for r in answers] == [302] * 4
    landed = decisions(record_id)
    assert [kind for _rid, kind, _who in landed] == ["approved", "revoked"]
    assert MemoryEvent.objects.filter(record_id=record_id, kind=EventKind.REVOKED).count() == 1
    row = promotion_of(record_id)
    assert row.status == PromotionStatus.REVOKED
    assert row.decided_by is not None
    assert row.decided_by.get_username() == landed[-1][2]
    assert not in_prompt(wren, record_id)
