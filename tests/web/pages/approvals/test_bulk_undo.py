"""Taking back a bulk decision (the queue's Undo after "Approve selected" / "Reject
selected"), and what every Undo says: the memories it names, its deadline. The server
enforces the deadline; the page only counts it down.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from lens.actors import Actor
from lens.models import Agent
from memory.decisions import (
    DEFAULT_UNDO_SECONDS,
    NotYourDecision,
    UndoExpired,
    decide_many,
    revoke,
    undo_many,
)
from memory.models import EventKind, MemoryEvent, PromotionStatus
from tests.factories import (
    HTMX,
    in_prompt,
    many_pending,
    post_bulk,
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
    queue_row_ids,
    with_class,
)

pytestmark = pytest.mark.django_db


def statuses(ids: list[str]) -> list[str]:
    return [promotion_of(record_id).status for record_id in ids]


def fields(form: Element) -> dict[str, str]:
    return {
        str(e.get("name")): str(e.get("value"))
        for e in inside(form, "input")
        if e.get("name") != "csrfmiddlewaretoken"
    }


# --- the operation ----------------------------------------------------------------------


def test_undo_many_puts_every_row_of_a_bulk_decision_back(wren: Agent, reviewer: User) -> None:
    ids = many_pending(wren, 3)
    at = timezone.now()
    decide_many(wren.team, ids, True, Actor.for_user(reviewer), now=at)
    assert all(in_prompt(wren, record_id) for record_id in ids)

    result = undo_many(wren.team, ids, Actor.for_user(reviewer), "approved", at)

    assert (result.undone, result.refused) == (ids, {})
    assert statuses(ids) == ["pending"] * 3
    events = MemoryEvent.objects.filter(kind=EventKind.REOPENED).order_by("record_id")
    assert sorted(e.record_id for e in events) == sorted(ids)
    assert {(e.actor, str(e.detail)) for e in events} == {("mira", "{'undone': 'approved'}")}


def test_a_row_changed_since_stays_and_says_why_the_others_are_undone(
    wren: Agent, reviewer: User, rhea: User
) -> None:
    ids = many_pending(wren, 3)
    at = timezone.now()
    decide_many(wren.team, ids, True, Actor.for_user(reviewer), now=at)
    revoke(ids[1], Actor.for_user(rhea), "wrong")

    result = undo_many(wren.team, ids, Actor.for_user(reviewer), "approved", at)

    assert result.undone == [ids[0], ids[2]]
    assert list(result.refused) == [ids[1]]
    assert "revoked by rhea" in result.refused[ids[1]].message
    assert statuses(ids) == ["pending", "revoked", "pending"]


def test_the_server_refuses_a_bulk_undo_after_the_window(wren: Agent, reviewer: User) -> None:
    ids = many_pending(wren, 2)
    at = timezone.now()
    decide_many(wren.team, ids, False, Actor.for_user(reviewer), now=at)
    late = at + timedelta(seconds=DEFAULT_UNDO_SECONDS, microseconds=1)
    result = undo_many(wren.team, ids, Actor.for_user(reviewer), "rejected", at, now=late)
    assert result.undone == []
    assert all(isinstance(refusal, UndoExpired) for refusal in result.refused.values())
    assert statuses(ids) == ["rejected"] * 2
    # One second inside the window, it lands.
    inside_ = at + timedelta(seconds=DEFAULT_UNDO_SECONDS - 1)
    assert undo_many(wren.team, ids, Actor.for_user(reviewer), "rejected", at, now=inside_).undone


def test_only_the_reviewer_who_decided_can_undo_the_bulk_decision(
    wren: Agent, reviewer: User, rhea: User
) -> None:
    ids = many_pending(wren, 2)
    at = timezone.now()
    decide_many(wren.team, ids, True, Actor.for_user(reviewer), now=at)
    result = undo_many(wren.team, ids, Actor.for_user(rhea), "approved", at)
    assert result.undone == []
    assert all(isinstance(refusal, NotYourDecision) for refusal in result.refused.values())
    assert statuses(ids) == ["approved"] * 2


def test_a_bulk_undo_is_one_update_when_every_row_qualifies(
    wren: Agent, reviewer: User, django_assert_max_num_queries: Any
) -> None:
    ids = many_pending(wren, 40)
    at = timezone.now()
    decide_many(wren.team, ids, True, Actor.for_user(reviewer), now=at)
    # The update, the rows' agents, their events; the audit log's agents, head, events
    # and head again, and the team's webhook endpoints: a fixed number however many rows.
    with django_assert_max_num_queries(10):
        assert len(undo_many(wren.team, ids, Actor.for_user(reviewer), "approved", at).undone) == 40


# --- the page ---------------------------------------------------------------------------


def test_a_bulk_decision_names_its_memories_and_offers_undo_with_a_deadline(
    reviewer_client: Client, wren: Agent, reviewer: User
) -> None:
    ids = many_pending(wren, 5)
    page = fragment(post_bulk(reviewer_client, "reject", ids))
    (notice,) = with_class(page, "bulk-notice")
    assert page.one("data-bulk-notice").squashed == (
        "Rejected 5 memories: “p0: Preference number 0.”, “p1: Preference number 1.”, "
        "“p2: Preference number 2.” and 2 more."
    )
    (form,) = inside(notice, "form")
    assert form.get("id") == "bulk-undo"
    assert form.get("action") == form.get("hx-post") == "/approvals/undo/"
    assert form.get("hx-target") == "#queue"
    assert form.get("data-undo-seconds") == "30"
    decided_at = promotion_of(ids[0]).decided_at
    assert decided_at is not None
    sent = fields(form)
    assert sent == {
        "decided": "rejected",
        "team": "acme",
        "at": decided_at.isoformat(),
        "ids": ",".join(ids),
    }
    (until,) = inside(form, "time")
    assert until.get("datetime") == (decided_at + timedelta(seconds=30)).isoformat()
    assert "possible for 30 s more, until" in form.squashed

    response = reviewer_client.post("/approvals/undo/", sent, headers=HTMX)
    after = fragment(response)
    assert after.one("data-bulk-notice").squashed.startswith(
        "Undone: 5 memories (“p0: Preference number 0.”,"
    )
    assert queue_row_ids(after) == ids
    assert statuses(ids) == ["pending"] * 5


def test_without_javascript_the_queue_offers_undo_for_the_last_bulk_decision(
    reviewer_client: Client, wren: Agent
) -> None:
    ids = many_pending(wren, 2)
    post_bulk(reviewer_client, "approve", ids, htmx=False)
    page = approval_queue(reviewer_client)
    (box,) = with_class(page, "undo-last")
    assert "You approved “p0: Preference number 0.”, “p1: Preference number 1.”" in box.squashed
    (form,) = inside(box, "form")
    assert form.get("action") == "/approvals/undo/"
    assert form.get("hx-post") is None
    assert buttons(box) == ["Undo"]

    response = reviewer_client.post("/approvals/undo/", fields(form))
    assert response.status_code == 302
    page = dom(reviewer_client.get(response["Location"]))
    assert any(message.startswith("Undone: 2 memories") for message in alerts(page))
    assert with_class(page, "undo-last") == []
    assert queue_row_ids(page) == ids


def test_a_late_bulk_undo_is_refused_by_the_server(
    reviewer_client: Client, wren: Agent, settings: Any
) -> None:
    ids = many_pending(wren, 2)
    page = fragment(post_bulk(reviewer_client, "approve", ids))
    sent = fields(page.one("id", "bulk-undo"))
    settings.UNDO_SECONDS = 0
    after = fragment(reviewer_client.post("/approvals/undo/", sent, headers=HTMX))
    (error,) = with_class(after, "alert-error")
    assert "Too late to undo" in error.squashed
    assert "2 memories could not be undone" in error.squashed
    assert statuses(ids) == ["approved"] * 2


def test_who_may_undo_a_bulk_decision(
    wren: Agent,
    reviewer_client: Client,
    viewer_client: Client,
    stranger_client: Client,
) -> None:
    ids = many_pending(wren, 2)
    sent = fields(fragment(post_bulk(reviewer_client, "approve", ids)).one("id", "bulk-undo"))
    assert viewer_client.post("/approvals/undo/", sent, headers=HTMX).status_code == 403
    assert (
        stranger_client.post(
            "/approvals/undo/", {**sent, "team": "globex"}, headers=HTMX
        ).status_code
        == 403
    )
    anonymous = Client().post("/approvals/undo/", sent)
    assert anonymous.status_code == 302
    assert anonymous["Location"].startswith("/accounts/login/")
    assert reviewer_client.get("/approvals/undo/").status_code == 405
    assert reviewer_client.post("/approvals/undo/", {**sent, "at": ""}).status_code == 400
    assert statuses(ids) == ["approved"] * 2


def test_a_single_decision_names_its_memory_and_shows_its_deadline(
    reviewer_client: Client, wren: Agent
) -> None:
    (record_id,) = many_pending(wren, 1)
    page = fragment(post_decision(reviewer_client, record_id, "approve"))
    assert page.one("data-notice-text").squashed == "Approved by mira: “p0: Preference number 0.”"
    decided_at = promotion_of(record_id).decided_at
    assert decided_at is not None
    until = page.one("data-undo-until")
    assert until.get("datetime") == (decided_at + timedelta(seconds=30)).isoformat()
    assert page.one("data-undo-count").squashed == "30"
    assert promotion_of(record_id).status == PromotionStatus.APPROVED


# --- edges --------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_bulk_undo_racing_a_revoke_lets_exactly_one_land_on_the_contested_row(
    wren: Agent, reviewer: User, rhea: User
) -> None:
    for round_ in range(4):
        ids = many_pending(wren, 3, prefix=f"r{round_}-")
        at = timezone.now()
        decide_many(wren.team, ids, True, Actor.for_user(reviewer), now=at)

        def act(i: int, ids: list[str] = ids, at: Any = at) -> Any:
            if i == 0:
                return undo_many(wren.team, ids, Actor.for_user(reviewer), "approved", at)
            return revoke(ids[1], Actor.for_user(rhea), "race")

        undone, revoked = race(2, act)
        contested = promotion_of(ids[1]).status
        assert (ids[1] in undone.undone) == (contested == PromotionStatus.PENDING)
        assert (ids[1] in undone.refused) == (contested == PromotionStatus.REVOKED)
        assert statuses([ids[0], ids[2]]) == ["pending", "pending"]
        landed = MemoryEvent.objects.filter(record_id=ids[1], kind=EventKind.REVOKED).count()
        assert landed == (contested == PromotionStatus.REVOKED), revoked


def test_a_notice_names_a_huge_memory_in_a_few_words(reviewer_client: Client, wren: Agent) -> None:
    ids = [
        preference(wren, "word " * 1990 + "\n\n# not a heading", label=f"huge{i}") for i in range(4)
    ]
    page = fragment(post_bulk(reviewer_client, "approve", ids))
    said = page.one("data-bulk-notice").squashed
    assert len(said) < 300
    assert said.endswith("…” and 1 more.")
    assert "\n" not in page.one("data-bulk-notice").text
