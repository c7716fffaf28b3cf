"""Validity windows (SPEC §19.2) against the database: saving with ``valid_until``, a
reviewer's changes (one audit event each, nothing else of the record changed), the
prompt, recall and ``as_of`` judging the window, and the delivery diff's causes."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from pydantic import ValidationError

from lens.actors import SYSTEM, Actor
from lens.models import Agent, AuditEvent, Team
from memory.as_of import compose_as_of
from memory.composition import compose
from memory.core.records import MemoryInput
from memory.deliveries.causes import causes_between
from memory.models import Delivery, EventKind, MemoryEvent, MemoryRecord
from memory.queries import view_of
from memory.recall import recall
from memory.saving import Conflict, InvalidValidUntil, Saved, save_memory
from memory.validity import change_validity
from tests.api_calls import ApiClient, assert_error, memory_body, post_memory
from tests.factories import deliver_through, drop_reason, in_prompt, written_rows

pytestmark = pytest.mark.django_db


def soon(**delta: float) -> str:
    return (timezone.now() + timedelta(**delta)).isoformat()


def expire_now(record_id: str) -> None:
    """As if the clock had reached the memory's window: its end moved to now."""
    MemoryRecord.objects.filter(pk=record_id).update(valid_until=timezone.now())


def test_a_save_stores_valid_until_and_the_view_carries_it(wren: Agent, api: ApiClient) -> None:
    moment = soon(days=3)
    record = post_memory(api, memory_body("profile", "In Lisbon this week.", valid_until=moment))
    stored = MemoryRecord.objects.get(pk=record)
    assert stored.valid_until is not None
    assert stored.valid_until.isoformat() == moment
    [listed] = api.get("/api/agents/wren/memories").json()["memories"]
    assert listed["valid_until"].replace("Z", "+00:00") == moment
    assert in_prompt(wren, record)


@pytest.mark.parametrize(
    "value", ["yesterday", "2020-01-01T00:00:00Z", 1893456000, "2030-02-30T00:00:00Z", ""]
)
def test_a_save_with_a_bad_or_past_valid_until_is_422_and_writes_nothing(
    wren: Agent, api: ApiClient, value: object
) -> None:
    before = written_rows()
    body = memory_body("profile", "In Lisbon.", valid_until=value)
    for path in ("/api/agents/wren/memories", "/api/agents/wren/memories/preview"):
        error = assert_error(api.post(path, body), 422, "invalid_valid_until")
        assert "valid_until" in error["message"]
    assert written_rows() == before


def test_valid_until_must_fall_after_the_saves_own_time(wren: Agent) -> None:
    with pytest.raises(InvalidValidUntil):
        save_memory(wren, MemoryInput(kind="fact", content="x", valid_until=soon()), SYSTEM)
    with pytest.raises(ValidationError):
        MemoryInput.model_validate({"kind": "fact", "content": "x", "valid_until": "soon"})


def test_an_expired_memory_leaves_the_prompt_and_recall_with_reason_expired(
    wren: Agent, api: ApiClient
) -> None:
    record = post_memory(
        api, memory_body("profile", "Staying at the Lisbon hotel.", valid_until=soon(days=1))
    )
    assert in_prompt(wren, record)
    later = timezone.now() + timedelta(days=2)
    assert {d.memory_id: d.reason for d in compose(wren, now=later).report.drops} == {
        record: "expired"
    }
    expire_now(record)
    assert drop_reason(wren, record) == "expired"
    assert record not in recall(wren, "Lisbon hotel staying").memory_ids


def test_expired_is_reported_before_awaiting_approval(wren: Agent, api: ApiClient) -> None:
    record = post_memory(
        api,
        memory_body("preference", "Wants tea this week.", label="drink", valid_until=soon(hours=1)),
    )
    assert drop_reason(wren, record) == "awaiting-approval"
    expire_now(record)
    assert drop_reason(wren, record) == "expired"


def test_a_reviewer_sets_moves_and_clears_the_window_one_audit_event_each(
    wren: Agent, api: ApiClient, reviewer: User
) -> None:
    record = post_memory(api, memory_body("profile", "In Lisbon."))
    stored = view_of(MemoryRecord.objects.get(pk=record))
    actor = Actor.for_user(reviewer)
    first, second = timezone.now() + timedelta(days=2), timezone.now() + timedelta(days=5)
    for moment in (first, second, None):
        result = change_validity(record, moment, actor, team=wren.team)
        assert result is not None
        assert result.changed
        assert MemoryRecord.objects.get(pk=record).valid_until == moment
    # The same window again changes nothing and logs nothing.
    again = change_validity(record, None, actor)
    assert again is not None
    assert not again.changed
    events = AuditEvent.objects.filter(action="memory.validity_changed").order_by("seq")
    assert [(e.object_id, e.actor, e.details) for e in events] == [
        (record, "mira", {"from": None, "to": first.isoformat()}),
        (record, "mira", {"from": first.isoformat(), "to": second.isoformat()}),
        (record, "mira", {"from": second.isoformat(), "to": None}),
    ]
    assert MemoryEvent.objects.filter(record_id=record, kind=EventKind.VALIDITY).count() == 3
    # Nothing else of the record changed.
    after = view_of(MemoryRecord.objects.get(pk=record))
    assert after == stored


def test_a_window_in_the_past_is_refused_and_nothing_changes(
    wren: Agent, api: ApiClient, reviewer: User
) -> None:
    record = post_memory(api, memory_body("profile", "In Lisbon.", valid_until=soon(days=1)))
    before = written_rows(), MemoryRecord.objects.get(pk=record).valid_until
    with pytest.raises(InvalidValidUntil):
        change_validity(record, timezone.now() - timedelta(seconds=1), Actor.for_user(reviewer))
    assert (written_rows(), MemoryRecord.objects.get(pk=record).valid_until) == before


def test_another_teams_memory_is_not_found(wren: Agent, api: ApiClient, other_team: Team) -> None:
    record = post_memory(api, memory_body("profile", "In Lisbon."))
    assert change_validity(record, None, SYSTEM, team=other_team) is None


def test_as_of_judges_validity_at_its_moment_with_the_window_then(
    wren: Agent, api: ApiClient, reviewer: User
) -> None:
    record = post_memory(api, memory_body("profile", "In Lisbon.", valid_until=soon(days=1)))
    saved = MemoryRecord.objects.get(pk=record)
    assert saved.valid_until is not None
    ends = saved.valid_until
    just_after = timezone.now()
    change_validity(record, ends + timedelta(days=10), Actor.for_user(reviewer))
    # At a moment before the move, the window then (one day) judges it.
    inside = compose_as_of(wren, just_after)
    assert any(record in s.memory_ids for s in inside.prompt.sections)
    later = ends + timedelta(days=2)
    # As of ``later`` with the window it has now (eleven days): still composed.
    assert any(record in s.memory_ids for s in compose_as_of(wren, later).prompt.sections)
    # Had the window not moved, it would have expired by then.
    MemoryEvent.objects.filter(kind=EventKind.VALIDITY).update(at=later + timedelta(days=1))
    gone = compose_as_of(wren, later)
    assert {d.memory_id: d.reason for d in gone.report.drops}.get(record) == "expired"


def test_a_delivery_diff_names_each_memory_that_expired_between(
    wren: Agent, api: ApiClient
) -> None:
    record = post_memory(api, memory_body("profile", "In Lisbon.", valid_until=soon(days=1)))
    never = post_memory(
        api, memory_body("fact", "Not composed, expires too.", valid_until=soon(days=1))
    )
    first = deliver_through(api)
    expire_now(record)
    expire_now(never)
    second = deliver_through(api)
    before, after = (
        Delivery.objects.get(pk=first["delivery_id"]),
        Delivery.objects.get(pk=second["delivery_id"]),
    )
    expired = [c for c in causes_between(before, after).items if c.get("type") == "memory.expired"]
    assert [(c["memory_id"], c["at"]) for c in expired] == [
        (record, MemoryRecord.objects.get(pk=record).valid_until)
    ]
    answer = api.get(f"/api/deliveries/{second['delivery_id']}/diff").json()
    assert record in answer["memories"]["removed"]
    assert [c["memory_id"] for c in answer["causes"] if c.get("type") == "memory.expired"] == [
        record
    ]


def test_composing_an_agent_passes_the_time(wren: Agent) -> None:
    result = save_memory(
        wren, MemoryInput(kind="profile", content="In Lisbon.", valid_until=soon(hours=1)), SYSTEM
    )
    assert isinstance(result, Saved)
    assert in_prompt(wren, result.id)
    assert drop_reason(wren, result.id) is None
    assert (
        compose(wren, now=timezone.now() + timedelta(hours=2)).report.drops[0].reason == "expired"
    )


def test_an_expired_memory_still_holds_its_address(wren: Agent) -> None:
    """Expiry takes a memory out of the prompt, not off its address: a new save with its
    label answers conflict until it is superseded (or a reviewer rejects or revokes it)."""
    first = save_memory(
        wren,
        MemoryInput(kind="profile", content="In Lisbon.", label="city", valid_until=soon(days=1)),
        SYSTEM,
    )
    assert isinstance(first, Saved)
    expire_now(first.id)
    assert drop_reason(wren, first.id) == "expired"
    again = save_memory(
        wren, MemoryInput(kind="profile", content="In Porto.", label="city"), SYSTEM
    )
    assert isinstance(again, Conflict)
    assert again.existing.pk == first.id
    newer = save_memory(
        wren,
        MemoryInput(kind="profile", content="In Porto.", label="city", supersedes=first.id),
        SYSTEM,
    )
    assert isinstance(newer, Saved)
    assert in_prompt(wren, newer.id)
