"""Bulk decisions from the approval queue (SPEC §5.4): every selected row or none."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lens.actors import Actor
from lens.models import Agent, Team
from memory.decisions import decide, pending_count
from memory.models import EventKind, MemoryEvent, Promotion, PromotionStatus
from tests.factories import (
    HTMX,
    composed,
    create_agent,
    decisions,
    drop_reason,
    in_prompt,
    many_pending,
    memory_config,
    post_bulk,
    preference,
    promotion_of,
    remember,
)
from tests.pages import (
    alerts,
    approval_queue,
    dom,
    fragment,
    oob_count,
    queue_row_ids,
)

pytestmark = pytest.mark.django_db


# --- bulk --------------------------------------------------------------------------


def test_bulk_approve_decides_every_selected_row_and_nothing_else(
    reviewer_client: Client, wren: Agent, atlas: Agent, reviewer: User
) -> None:
    ids = many_pending(wren, 3)
    convention = remember(atlas, "convention", "Tabs, never spaces.", label="indent")
    left = preference(wren, "Short answers.", label="answers")

    response = post_bulk(reviewer_client, "approve", [*ids, convention, ids[0]])
    page = fragment(response)
    assert page.one("role", "status").squashed == (
        "Approved 4 memories: “p0: Preference number 0.”, “p1: Preference number 1.”, “p2: Preference number 2.” and 1 more."
    )
    assert queue_row_ids(page) == [left]
    assert oob_count(page) == 1

    for record_id in [*ids, convention]:
        row = promotion_of(record_id)
        assert (row.status, row.decided_by) == (PromotionStatus.APPROVED, reviewer)
    assert promotion_of(left).status == PromotionStatus.PENDING
    events = MemoryEvent.objects.filter(kind=EventKind.APPROVED).order_by("record_id")
    assert sorted(e.record_id for e in events) == sorted([*ids, convention])
    assert {(e.actor, e.actor_user_id, json.dumps(e.detail)) for e in events} == {
        ("mira", reviewer.pk, '{"bulk": true}')
    }
    assert {e.agent_id for e in events} == {wren.pk, atlas.pk}
    assert all(in_prompt(wren, record_id) for record_id in ids)
    assert in_prompt(atlas, convention)


def test_bulk_reject_stores_the_reason_on_every_row(
    reviewer_client: Client, wren: Agent, reviewer: User
) -> None:
    ids = many_pending(wren, 2)
    page = fragment(post_bulk(reviewer_client, "reject", ids, reason="duplicates"))
    assert (
        page.one("role", "status").squashed
        == "Rejected 2 memories: “p0: Preference number 0.”, “p1: Preference number 1.”"
    )
    for record_id in ids:
        row = promotion_of(record_id)
        assert (row.status, row.decision_note) == (PromotionStatus.REJECTED, "duplicates")
        event = MemoryEvent.objects.get(record_id=record_id, kind=EventKind.REJECTED)
        assert event.detail == {"reason": "duplicates", "bulk": True}
        assert drop_reason(wren, record_id) == "rejected"


def test_without_javascript_bulk_redirects_back_with_a_message(
    reviewer_client: Client, wren: Agent
) -> None:
    (record_id,) = many_pending(wren, 1)
    response = post_bulk(reviewer_client, "approve", [record_id], htmx=False, query="?agent=wren")
    assert response.status_code == 302
    assert response["Location"] == "/approvals/?team=acme&agent=wren"
    assert "Approved 1 memory: “p0: Preference number 0.”" in alerts(
        dom(reviewer_client.get(response["Location"]))
    )
    assert promotion_of(record_id).status == PromotionStatus.APPROVED


def test_bulk_is_all_or_nothing_when_a_selected_row_is_no_longer_pending(
    reviewer_client: Client, wren: Agent, rhea: User
) -> None:
    ids = many_pending(wren, 4)
    decide(ids[2], False, Actor.for_user(rhea))

    page = fragment(post_bulk(reviewer_client, "approve", ids))
    (error,) = page.all("role", "alert")
    assert "Nothing was changed" in error.squashed
    assert "1 of the selected memories are no longer pending" in error.squashed
    assert queue_row_ids(page) == [ids[0], ids[1], ids[3]]
    assert oob_count(page) == 3
    assert [promotion_of(rid).status for rid in ids] == [
        "pending",
        "pending",
        "rejected",
        "pending",
    ]
    assert decisions(*ids) == [(ids[2], "rejected", "rhea")]

    response = post_bulk(reviewer_client, "reject", ids, "spam", htmx=False)
    assert response.status_code == 302
    shown = alerts(dom(reviewer_client.get(response["Location"])))
    assert any("Nothing was changed" in m for m in shown), shown
    assert [promotion_of(rid).status for rid in ids] == [
        "pending",
        "pending",
        "rejected",
        "pending",
    ]
    assert decisions(*ids) == [(ids[2], "rejected", "rhea")]


def test_bulk_with_a_superseded_row_changes_nothing(reviewer_client: Client, wren: Agent) -> None:
    older = preference(wren, "Likes jazz.", label="music")
    other = preference(wren, "Short answers.", label="answers")
    newer = preference(wren, "Likes jazz and blues.", label="music", supersedes=older)
    page = fragment(post_bulk(reviewer_client, "approve", [older, other, newer]))
    assert "Nothing was changed" in page.one("role", "alert").squashed
    assert [promotion_of(rid).status for rid in (older, other, newer)] == [
        "superseded",
        "pending",
        "pending",
    ]
    assert decisions(older, other, newer) == []


def test_bulk_with_a_row_of_another_team_changes_nothing(
    reviewer_client: Client, wren: Agent, other_team: Team
) -> None:
    gizmo = create_agent(other_team, "gizmo", memory_config(name="Gizmo"))
    theirs = preference(gizmo, "Globex secret preference.", label="secret")
    ours = preference(wren, "Short answers.", label="answers")
    for ids in ([ours, theirs], [theirs], [ours, "zzzzzzzzzzzzzzzzzz"]):
        page = fragment(post_bulk(reviewer_client, "approve", ids))
        assert "Nothing was changed" in page.one("role", "alert").squashed
        assert queue_row_ids(page) == [ours]
    assert promotion_of(theirs).status == promotion_of(ours).status == PromotionStatus.PENDING
    assert decisions(theirs, ours) == []


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"decision": "approve"}, "Select at least one memory first."),
        ({"decision": "reject", "selected": []}, "Select at least one memory first."),
        ({"selected": ["x"]}, "Choose Approve selected or Reject selected."),
        ({"decision": "delete", "selected": ["x"]}, "Choose Approve selected or Reject selected."),
    ],
)
def test_bulk_without_a_selection_or_a_decision_shows_an_error(
    reviewer_client: Client, wren: Agent, data: dict[str, Any], error: str
) -> None:
    record_id = preference(wren, "Short answers.", label="answers")
    if data.get("selected") == ["x"]:
        data = {**data, "selected": [record_id]}
    data = {**data, "team": "acme"}
    page = fragment(reviewer_client.post("/approvals/bulk/", data, headers=HTMX))
    assert page.one("role", "alert").squashed == error
    assert promotion_of(record_id).status == PromotionStatus.PENDING
    assert decisions(record_id) == []


def test_bulk_approving_sixty_rows_creates_sixty_events_and_empties_the_queue(
    reviewer_client: Client, wren: Agent, reviewer: User
) -> None:
    ids = many_pending(wren, 60)
    assert pending_count(wren.team) == 60
    page = fragment(post_bulk(reviewer_client, "approve", ids))
    notice = page.one("role", "status").squashed
    assert notice.startswith("Approved 60 memories: “p0: Preference number 0.”, ")
    assert notice.endswith(" and 57 more.")
    assert oob_count(page) == 0
    assert queue_row_ids(page) == []
    assert pending_count(wren.team) == 0
    events = MemoryEvent.objects.filter(kind=EventKind.APPROVED)
    assert events.count() == 60
    assert set(events.values_list("record_id", flat=True)) == set(ids)
    assert set(events.values_list("actor_user", flat=True)) == {reviewer.pk}
    assert Promotion.objects.filter(pk__in=ids, status=PromotionStatus.APPROVED).count() == 60
    assert composed(wren).report.stats.composed == 60
    assert queue_row_ids(approval_queue(reviewer_client)) == []
