"""Deciding one row of the approval queue and revoking an approved memory (SPEC §5.4):
with htmx and without JavaScript, what is stored, and what the composition then says.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lens.actors import Actor
from lens.models import Agent
from memory.decisions import decide
from memory.models import EventKind, MemoryEvent, PromotionStatus
from tests.factories import (
    HTMX,
    decisions,
    drop_reason,
    in_prompt,
    post_decision,
    preference,
    promotion_of,
    remember,
)
from tests.pages import (
    alerts,
    approval_queue,
    buttons,
    dom,
    fragment,
    oob_count,
    queue_row_ids,
)

pytestmark = pytest.mark.django_db


# --- deciding one row --------------------------------------------------------------


def test_approving_with_htmx_swaps_the_row_and_composes_the_memory(
    reviewer_client: Client, wren: Agent, reviewer: User
) -> None:
    record_id = preference(wren, "Tea, never coffee.", label="drink")
    other = preference(wren, "Short answers.", label="answers")
    assert drop_reason(wren, record_id) == "awaiting-approval"

    # The row's form also sends its (empty or not) reason field: approving ignores it.
    response = post_decision(reviewer_client, record_id, "approve", reason="ignored")
    page = fragment(response)
    (decided,) = page.all("data-promotion-id")
    assert decided.tag == "li"
    assert decided.get("data-promotion-id") == record_id
    assert decided.get("data-decision") == "approved"
    assert "Approved by mira: “drink: Tea, never coffee.”" in decided.squashed
    assert oob_count(page) == 1

    row = promotion_of(record_id)
    assert row.status == PromotionStatus.APPROVED
    assert row.decided_by == reviewer
    assert row.decided_at is not None
    assert row.decision_note == ""
    event = MemoryEvent.objects.get(record_id=record_id, kind=EventKind.APPROVED)
    assert (event.actor, event.actor_user, event.actor_token) == ("mira", reviewer, None)
    assert event.detail == {}

    assert in_prompt(wren, record_id)
    assert drop_reason(wren, record_id) is None
    lens = dom(reviewer_client.get("/agents/wren/"))
    assert lens.one("data-memory-ids", record_id).squashed == "- **drink**: Tea, never coffee."
    assert promotion_of(other).status == PromotionStatus.PENDING
    assert queue_row_ids(approval_queue(reviewer_client)) == [other]


def test_rejecting_with_a_reason_drops_the_memory_as_rejected(
    reviewer_client: Client, wren: Agent, reviewer: User
) -> None:
    record_id = preference(wren, "Wants daily jokes.", label="jokes")
    response = post_decision(reviewer_client, record_id, "reject", reason="  not useful  ")
    page = fragment(response)
    decided = page.one("data-promotion-id", record_id)
    assert decided.get("data-decision") == "rejected"
    assert "Rejected by mira: “jokes: Wants daily jokes.” Reason: not useful" in decided.squashed
    assert oob_count(page) == 0

    row = promotion_of(record_id)
    assert (row.status, row.decided_by, row.decision_note) == (
        PromotionStatus.REJECTED,
        reviewer,
        "not useful",
    )
    event = MemoryEvent.objects.get(record_id=record_id, kind=EventKind.REJECTED)
    assert (event.actor, event.actor_user) == ("mira", reviewer)
    assert event.detail == {"reason": "not useful"}
    assert drop_reason(wren, record_id) == "rejected"
    assert not in_prompt(wren, record_id)


def test_rejecting_without_a_reason_stores_none(reviewer_client: Client, wren: Agent) -> None:
    record_id = preference(wren, "Wants daily jokes.", label="jokes")
    decided = fragment(post_decision(reviewer_client, record_id, "reject", reason=""))
    assert (
        "Rejected by mira: “jokes: Wants daily jokes.” Open"
        in decided.one("data-promotion-id").squashed
    )
    assert promotion_of(record_id).decision_note == ""
    assert MemoryEvent.objects.get(record_id=record_id, kind=EventKind.REJECTED).detail == {}


def test_without_javascript_deciding_redirects_back_to_the_queue_with_a_message(
    reviewer_client: Client, wren: Agent
) -> None:
    approved = preference(wren, "Tea, never coffee.", label="drink")
    rejected = preference(wren, "Wants daily jokes.", label="jokes")

    response = post_decision(reviewer_client, approved, "approve", htmx=False)
    assert response.status_code == 302
    assert response["Location"] == "/approvals/?team=acme"
    page = dom(reviewer_client.get(response["Location"]))
    assert "Approved by mira: “drink: Tea, never coffee.”" in alerts(page)
    assert queue_row_ids(page) == [rejected]

    # The filters of the page the form was on are kept.
    response = post_decision(
        reviewer_client, rejected, "reject", "too noisy", htmx=False, query="?agent=wren"
    )
    assert response.status_code == 302
    assert response["Location"] == "/approvals/?team=acme&agent=wren"
    page = dom(reviewer_client.get(response["Location"]))
    assert "Rejected by mira: “jokes: Wants daily jokes.” Reason: too noisy" in alerts(page)
    assert queue_row_ids(page) == []
    assert promotion_of(approved).status == PromotionStatus.APPROVED
    assert promotion_of(rejected).status == PromotionStatus.REJECTED


@pytest.mark.parametrize("decision", [None, "", "maybe", "APPROVE"])
def test_a_decision_other_than_approve_or_reject_is_refused(
    reviewer_client: Client, wren: Agent, decision: str | None
) -> None:
    record_id = preference(wren, "Tea, never coffee.", label="drink")
    data = {"team": "acme"} if decision is None else {"decision": decision, "team": "acme"}
    response = reviewer_client.post(f"/approvals/{record_id}/decide/", data, headers=HTMX)
    assert response.status_code == 400
    assert promotion_of(record_id).status == PromotionStatus.PENDING
    assert decisions(record_id) == []


def test_an_unknown_promotion_is_404(reviewer_client: Client, wren: Agent) -> None:
    assert post_decision(reviewer_client, "zzzzzzzzzzzzzzzzzz", "approve").status_code == 404
    assert (
        reviewer_client.post("/memories/zzzzzzzzzzzzzzzzzz/revoke/", {"team": "acme"}).status_code
        == 404
    )


def test_the_decide_and_bulk_urls_refuse_get(reviewer_client: Client, wren: Agent) -> None:
    record_id = preference(wren, "Tea, never coffee.", label="drink")
    assert reviewer_client.get(f"/approvals/{record_id}/decide/").status_code == 405
    assert reviewer_client.get("/approvals/bulk/").status_code == 405
    # A GET of revoke is its confirmation page: it changes nothing.
    assert reviewer_client.get(f"/memories/{record_id}/revoke/").status_code == 200
    assert reviewer_client.post("/approvals/").status_code == 405
    assert promotion_of(record_id).status == PromotionStatus.PENDING


# --- revoking ----------------------------------------------------------------------


def test_revoking_an_approved_memory_takes_it_out_of_the_prompt(
    reviewer_client: Client, wren: Agent, reviewer: User, rhea: User
) -> None:
    record_id = preference(wren, "Tea, never coffee.", label="drink")
    decide(record_id, True, Actor.for_user(rhea))
    assert in_prompt(wren, record_id)
    detail = dom(reviewer_client.get(f"/memories/{record_id}/"))
    (revoke_form,) = [
        e for e in detail.elements if e.tag == "form" and "revoke" in (e.get("action") or "")
    ]
    assert revoke_form.get("action") == f"/memories/{record_id}/revoke/"
    assert buttons(revoke_form) == ["Revoke"]

    response = reviewer_client.post(
        f"/memories/{record_id}/revoke/", {"team": "acme", "reason": "outdated", "confirm": "on"}
    )
    assert response.status_code == 302
    assert response["Location"] == f"/memories/{record_id}/?team=acme"
    page = dom(reviewer_client.get(response["Location"]))
    assert any("Revoked by mira" in m for m in alerts(page))
    assert page.one("data-memory-status").get("data-memory-status") == "revoked"
    assert "Reopen" in buttons(page)
    assert "Revoke" not in buttons(page)

    row = promotion_of(record_id)
    assert (row.status, row.decided_by, row.decision_note) == (
        PromotionStatus.REVOKED,
        reviewer,
        "outdated",
    )
    event = MemoryEvent.objects.get(record_id=record_id, kind=EventKind.REVOKED)
    assert (event.actor, event.actor_user, event.detail) == (
        "mira",
        reviewer,
        {"reason": "outdated"},
    )
    assert decisions(record_id) == [
        (record_id, "approved", "rhea"),
        (record_id, "revoked", "mira"),
    ]
    assert not in_prompt(wren, record_id)
    assert drop_reason(wren, record_id) == "revoked"


def test_an_auto_promoted_memory_can_be_revoked_too(reviewer_client: Client, wren: Agent) -> None:
    record_id = remember(wren, "profile", "Mira", label="name")
    assert in_prompt(wren, record_id)
    assert (
        reviewer_client.post(
            f"/memories/{record_id}/revoke/", {"team": "acme", "confirm": "on"}
        ).status_code
        == 302
    )
    assert not in_prompt(wren, record_id)
    assert decisions(record_id) == [(record_id, "revoked", "mira")]
    assert MemoryEvent.objects.get(record_id=record_id, kind=EventKind.REVOKED).detail == {}


@pytest.mark.parametrize("state", ["pending", "rejected", "declined"])
def test_revoking_a_memory_that_is_not_approved_changes_nothing(
    reviewer_client: Client, wren: Agent, rhea: User, state: str
) -> None:
    if state == "declined":
        record_id = remember(wren, "fact", "Visited Kraków.")
    else:
        record_id = preference(wren, "Tea, never coffee.", label="drink")
    if state == "rejected":
        decide(record_id, False, Actor.for_user(rhea))
    before = decisions(record_id)

    response = reviewer_client.post(
        f"/memories/{record_id}/revoke/", {"team": "acme", "confirm": "on"}, follow=True
    )
    assert response.status_code == 200
    shown = alerts(dom(response))
    assert any("Only an approved memory can be revoked" in m for m in shown), shown
    assert promotion_of(record_id).status == state
    assert decisions(record_id) == before
