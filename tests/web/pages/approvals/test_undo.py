"""Undo in the approval queue: the operation (``memory.decisions.undo``, no HTTP) and its
page, with htmx and without JavaScript. Only the person who decided, only for a few
seconds, only while nothing else happened to the row or its address; of an undo racing
another decision, a reopen or a save, exactly one lands.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from lens.actors import SYSTEM, Actor
from lens.models import Agent
from memory.core.records import MemoryInput
from memory.decisions import (
    AddressNowTaken,
    Decided,
    DecisionChanged,
    NotYourDecision,
    UndoExpired,
    UndoRefused,
    decide,
    reopen,
    revoke,
    undo,
)
from memory.models import EventKind, MemoryEvent, PromotionStatus
from memory.saving import Conflict, Saved, save_memory
from tests.factories import (
    HTMX,
    drop_reason,
    event_kinds,
    in_prompt,
    logged_in,
    post_decision,
    preference,
    promotion_of,
    race,
)
from tests.pages import (
    Element,
    alerts,
    approval_queue,
    buttons,
    dom,
    fragment,
    inside,
    oob_count,
    queue_rows,
    with_class,
)

pytestmark = pytest.mark.django_db


def decided(record_id: str, approve: bool, user: User, note: str = "") -> Any:
    """Decide and return the moment the decision landed."""
    result = decide(record_id, approve, Actor.for_user(user), note)
    assert isinstance(result, Decided)
    return result.promotion.decided_at


def row_state(record_id: str) -> tuple[str, Any, Any, str, list[str]]:
    row = promotion_of(record_id)
    return (row.status, row.decided_by, row.decided_at, row.decision_note, event_kinds(record_id))


# --- the operation ----------------------------------------------------------------------


@pytest.mark.parametrize(("approve", "status"), [(True, "approved"), (False, "rejected")])
def test_the_decider_can_undo_within_the_window(
    wren: Agent, reviewer: User, approve: bool, status: str
) -> None:
    record_id = preference(wren, "Tea, never coffee.", label="drink")
    at = decided(record_id, approve, reviewer, "" if approve else "not sure")
    assert in_prompt(wren, record_id) is approve

    row = undo(record_id, Actor.for_user(reviewer), status, at)

    assert row.status == PromotionStatus.PENDING
    after = promotion_of(record_id)
    assert (after.status, after.decided_by, after.decided_at, after.decision_note) == (
        PromotionStatus.PENDING,
        None,
        None,
        "",
    )
    assert drop_reason(wren, record_id) == "awaiting-approval"
    event = MemoryEvent.objects.filter(record_id=record_id).order_by("id").last()
    assert event is not None
    assert (event.kind, event.actor, event.actor_user, event.detail) == (
        EventKind.REOPENED,
        "mira",
        reviewer,
        {"undone": status},
    )
    # Pending again, it can be decided again.
    assert isinstance(decide(record_id, True, Actor.for_user(reviewer)), Decided)


def test_the_moment_is_optional_but_must_match_when_given(wren: Agent, reviewer: User) -> None:
    record_id = preference(wren, "Tea, never coffee.", label="drink")
    at = decided(record_id, True, reviewer)
    before = row_state(record_id)
    with pytest.raises(DecisionChanged):
        undo(record_id, Actor.for_user(reviewer), "approved", at - timedelta(microseconds=1))
    assert row_state(record_id) == before
    assert undo(record_id, Actor.for_user(reviewer), "approved").status == "pending"


def test_undo_is_refused_once_the_window_has_passed(
    wren: Agent, reviewer: User, settings: Any
) -> None:
    settings.UNDO_SECONDS = 5
    record_id = preference(wren, "Tea, never coffee.", label="drink")
    at = decided(record_id, True, reviewer)
    before = row_state(record_id)

    with pytest.raises(UndoExpired) as refused:
        undo(record_id, Actor.for_user(reviewer), "approved", at, now=at + timedelta(seconds=6))
    assert refused.value.code == "undo_expired"
    assert "5 seconds" in refused.value.message
    assert row_state(record_id) == before
    # Still inside it, it works.
    undone = undo(
        record_id, Actor.for_user(reviewer), "approved", at, now=at + timedelta(seconds=4)
    )
    assert undone.status == PromotionStatus.PENDING


def test_the_default_window_is_thirty_seconds(wren: Agent, reviewer: User) -> None:
    record_id = preference(wren, "Tea, never coffee.", label="drink")
    at = decided(record_id, False, reviewer)
    with pytest.raises(UndoExpired) as late:
        undo(record_id, Actor.for_user(reviewer), "rejected", at, now=at + timedelta(seconds=31))
    assert "30 seconds" in late.value.message
    assert undo(
        record_id, Actor.for_user(reviewer), "rejected", at, now=at + timedelta(seconds=29)
    ).status == (PromotionStatus.PENDING)


def test_only_the_person_who_decided_can_undo(wren: Agent, reviewer: User, rhea: User) -> None:
    record_id = preference(wren, "Tea, never coffee.", label="drink")
    at = decided(record_id, True, rhea)
    before = row_state(record_id)
    for actor in (Actor.for_user(reviewer), SYSTEM):
        with pytest.raises(NotYourDecision) as refused:
            undo(record_id, actor, "approved", at)
        assert refused.value.code == "undo_not_yours"
    assert "rhea" in str(
        pytest.raises(NotYourDecision, undo, record_id, Actor.for_user(reviewer), "approved").value
    )
    assert row_state(record_id) == before


@pytest.mark.parametrize("then", ["revoke", "reopen", "supersede", "decide-again"])
def test_undo_is_refused_when_the_row_changed_since(
    wren: Agent, reviewer: User, rhea: User, then: str
) -> None:
    record_id = preference(wren, "Tea, never coffee.", label="drink")
    approve = then in ("revoke", "supersede")
    status = "approved" if approve else "rejected"
    at = decided(record_id, approve, reviewer)
    other = Actor.for_user(rhea)
    if then == "revoke":
        revoke(record_id, other, "wrong person")
    elif then == "reopen":
        reopen(record_id, other)
    elif then == "supersede":
        preference(wren, "Coffee after all.", label="drink", supersedes=record_id)
    else:
        reopen(record_id, other)
        decide(record_id, True, Actor.for_user(reviewer))
        status = "rejected"
    before = row_state(record_id)

    with pytest.raises(DecisionChanged) as refused:
        undo(record_id, Actor.for_user(reviewer), status, at)

    assert refused.value.code == "undo_changed"
    assert refused.value.message.startswith("Cannot undo:")
    assert row_state(record_id) == before


def test_undo_of_a_rejection_is_refused_when_a_new_memory_took_the_address(
    wren: Agent, reviewer: User
) -> None:
    record_id = preference(wren, "Tea, never coffee.", label="drink")
    at = decided(record_id, False, reviewer)
    newer = preference(wren, "Green tea.", label="drink")  # the address was free again
    before = row_state(record_id)

    with pytest.raises(AddressNowTaken) as refused:
        undo(record_id, Actor.for_user(reviewer), "rejected", at)

    assert refused.value.code == "address_taken"
    assert refused.value.details == {"holder": newer}
    assert newer in refused.value.message
    assert row_state(record_id) == before
    assert promotion_of(newer).status == PromotionStatus.PENDING


def test_only_approvals_and_rejections_can_be_undone(wren: Agent, reviewer: User) -> None:
    record_id = preference(wren, "Tea, never coffee.", label="drink")
    decided(record_id, True, reviewer)
    revoke(record_id, Actor.for_user(reviewer))
    with pytest.raises(UndoRefused):
        undo(record_id, Actor.for_user(reviewer), "revoked")
    assert promotion_of(record_id).status == PromotionStatus.REVOKED


def test_another_team_cannot_undo(wren: Agent, reviewer: User, other_team: Any) -> None:
    record_id = preference(wren, "Tea, never coffee.", label="drink")
    at = decided(record_id, True, reviewer)
    with pytest.raises(UndoRefused) as refused:
        undo(record_id, Actor.for_user(reviewer), "approved", at, team=other_team)
    assert refused.value.code == "promotion_not_found"
    assert promotion_of(record_id).status == PromotionStatus.APPROVED


# --- races (the real database, concurrent threads) --------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("rival", ["revoke", "reopen", "save"])
def test_undo_racing_another_change_lets_exactly_one_land(
    wren: Agent, reviewer: User, rhea: User, rival: str
) -> None:
    mine, other = Actor.for_user(reviewer), Actor.for_user(rhea)
    status = "approved" if rival == "revoke" else "rejected"
    for round_ in range(4):
        label = f"drink-{rival}-{round_}"
        record_id = preference(wren, f"Tea {round_}.", label=label)
        at = decided(record_id, status == "approved", reviewer)

        def act(i: int, record_id: str = record_id, label: str = label, at: Any = at) -> Any:
            if i == 0:
                try:
                    return undo(record_id, mine, status, at)
                except UndoRefused as refused:
                    return refused
            if rival == "revoke":
                return revoke(record_id, other)
            if rival == "reopen":
                return reopen(record_id, other)
            data = MemoryInput(kind="preference", content="Coffee.", label=label)
            return save_memory(wren, data, other)

        undone, theirs = race(2, act)
        landed = [not isinstance(undone, UndoRefused), isinstance(theirs, Decided | Saved)]
        assert sum(landed) == 1, (undone, theirs)
        if rival == "save":
            assert isinstance(undone, AddressNowTaken) or isinstance(theirs, Conflict)
        reopened = MemoryEvent.objects.filter(record_id=record_id, kind=EventKind.REOPENED)
        assert reopened.count() == 1 if rival == "reopen" else reopened.count() == landed[0]


# --- the page -----------------------------------------------------------------------------


def post_undo(client: Client, record_id: str, data: dict[str, str], *, htmx: bool = True) -> Any:
    data = {"team": "acme", **data}
    return client.post(f"/approvals/{record_id}/undo/", data, headers=HTMX if htmx else {})


def undo_fields(form: Element) -> dict[str, str]:
    """What an Undo form posts: its fields, the CSRF token aside."""
    assert form.get("method") == "post"
    return {
        str(e.get("name")): str(e.get("value"))
        for e in form.descendants()
        if e.tag == "input" and e.get("name") != "csrfmiddlewaretoken"
    }


def test_a_decided_row_offers_undo_and_undo_brings_the_pending_row_back(
    reviewer_client: Client, wren: Agent, reviewer: User
) -> None:
    record_id = preference(wren, "Tea, never coffee.", label="drink")
    page = fragment(post_decision(reviewer_client, record_id, "approve"))
    notice = page.one("data-promotion-id", record_id)
    assert buttons(notice) == ["Undo"]
    (form,) = [e for e in notice.descendants() if e.tag == "form"]
    assert form.get("action") == form.get("hx-post") == f"/approvals/{record_id}/undo/"
    assert form.get("hx-target") == "closest li"
    assert form.get("data-undo-seconds") == "30"
    fields = undo_fields(form)
    assert fields["decided"] == "approved"
    decided_at = promotion_of(record_id).decided_at
    assert decided_at is not None
    assert fields["at"] == decided_at.isoformat()

    response = post_undo(reviewer_client, record_id, fields)
    restored = fragment(response)
    row = restored.one("data-promotion-id", record_id)
    assert row.tag == "li"
    assert row.get("data-decision") is None
    assert buttons(row) == ["Approve", "Reject"]
    assert "Tea, never coffee." in row.squashed
    assert oob_count(restored) == 1
    assert promotion_of(record_id).status == PromotionStatus.PENDING


def test_a_stale_row_offers_no_undo(reviewer_client: Client, wren: Agent, rhea: User) -> None:
    record_id = preference(wren, "Tea, never coffee.", label="drink")
    decided(record_id, True, rhea)
    notice = fragment(post_decision(reviewer_client, record_id, "reject")).one("data-promotion-id")
    assert notice.get("data-decision") == "stale"
    assert buttons(notice) == []


def test_a_refused_undo_with_htmx_says_why_in_the_row(
    reviewer_client: Client, wren: Agent, reviewer: User, rhea: User
) -> None:
    record_id = preference(wren, "Tea, never coffee.", label="drink")
    at = decided(record_id, True, reviewer)
    revoke(record_id, Actor.for_user(rhea))
    response = post_undo(reviewer_client, record_id, {"decided": "approved", "at": at.isoformat()})
    assert response.status_code == 200
    notice = fragment(response).one("data-promotion-id", record_id)
    assert notice.get("data-undo") == "refused"
    assert "revoked by rhea" in notice.squashed
    assert buttons(notice) == []
    assert promotion_of(record_id).status == PromotionStatus.REVOKED


def test_without_javascript_the_queue_offers_undo_for_the_last_decision(
    reviewer_client: Client, wren: Agent
) -> None:
    record_id = preference(wren, "Tea, never coffee.", label="drink")
    waiting = preference(wren, "Short answers.", label="answers")
    response = post_decision(
        reviewer_client, record_id, "reject", "no", htmx=False, query="?agent=wren"
    )
    assert response["Location"] == "/approvals/?team=acme&agent=wren"
    page = approval_queue(reviewer_client, "?agent=wren")
    (box,) = with_class(page, "undo-last")
    (form,) = inside(box, "form")
    assert form.get("action") == f"/approvals/{record_id}/undo/?agent=wren"
    assert "You rejected “drink: Tea, never coffee.”" in box.squashed
    assert buttons(box) == ["Undo"]
    assert list(queue_rows(page)) == [waiting]

    response = post_undo(reviewer_client, record_id, undo_fields(form), htmx=False)
    assert response.status_code == 302
    assert response["Location"] == "/approvals/?team=acme"
    page = dom(reviewer_client.get(response["Location"]))
    assert "Undone: “drink: Tea, never coffee.” waits for approval again." in alerts(page)
    assert list(queue_rows(page)) == [record_id, waiting]
    assert with_class(page, "undo-last") == []


def test_without_javascript_a_late_undo_is_not_offered_and_is_refused(
    reviewer_client: Client, wren: Agent, settings: Any
) -> None:
    record_id = preference(wren, "Tea, never coffee.", label="drink")
    post_decision(reviewer_client, record_id, "approve", htmx=False)
    settings.UNDO_SECONDS = 0
    page = approval_queue(reviewer_client)
    assert with_class(page, "undo-last") == []
    at = promotion_of(record_id).decided_at
    assert at is not None
    response = post_undo(
        reviewer_client, record_id, {"decided": "approved", "at": at.isoformat()}, htmx=False
    )
    assert response.status_code == 302
    after = dom(reviewer_client.get(response["Location"]))
    assert any("Too late to undo" in message for message in alerts(after))
    assert promotion_of(record_id).status == PromotionStatus.APPROVED


def test_undo_needs_a_valid_decision_and_moment(reviewer_client: Client, wren: Agent) -> None:
    record_id = preference(wren, "Tea, never coffee.", label="drink")
    post_decision(reviewer_client, record_id, "approve")
    for data in ({}, {"decided": "maybe"}, {"decided": "approved", "at": "yesterday"}):
        assert post_undo(reviewer_client, record_id, data).status_code == 400
    assert promotion_of(record_id).status == PromotionStatus.APPROVED


def test_who_may_undo_members_strangers_and_anonymous(
    wren: Agent, reviewer: User, viewer_client: Client, stranger_client: Client
) -> None:
    record_id = preference(wren, "Tea, never coffee.", label="drink")
    at = decided(record_id, True, reviewer)
    data = {"decided": "approved", "at": at.isoformat()}
    path = f"/approvals/{record_id}/undo/"

    assert post_undo(viewer_client, record_id, data).status_code == 403
    assert post_undo(stranger_client, record_id, {**data, "team": "globex"}).status_code == 404
    anonymous = Client()
    for headers in ({}, HTMX):
        response = anonymous.post(path, data, headers=headers)
        assert response.status_code == 302
        assert response["Location"] == f"/accounts/login/?next={path}"
    assert logged_in(reviewer).get(path).status_code == 405
    assert promotion_of(record_id).status == PromotionStatus.APPROVED

    fresh = timezone.now()
    assert fresh - at < timedelta(seconds=10)
    assert post_undo(logged_in(reviewer), record_id, data).status_code == 200
    assert promotion_of(record_id).status == PromotionStatus.PENDING
