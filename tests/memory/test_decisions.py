"""Deciding promotions (``memory.decisions``), called directly: approve, reject, revoke,
reopen and the all-or-nothing bulk decision (SPEC §5.4). No HTTP.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from django.contrib.auth.models import User

from lens.actors import Actor
from lens.models import Agent, Team
from memory.core.records import MemoryInput
from memory.decisions import (
    AddressTaken,
    AlreadyDecided,
    Decided,
    NotAllPending,
    decide,
    decide_many,
    pending_count,
    reopen,
    revoke,
)
from memory.models import EventKind, MemoryEvent, Promotion, PromotionStatus
from memory.saving import Saved, save_memory
from tests.factories import create_agent, make_user
from tests.samples import SAMPLE_CONFIG

pytestmark = pytest.mark.django_db

AGENT_ACTOR = Actor(label="test")


def background_config() -> dict[str, Any]:
    return {
        **SAMPLE_CONFIG,
        "routing_spec": "user-background",
        "background": {
            "sections": [
                {"id": "user_profile", "title": "About the User", "promotion": "auto"},
                {"id": "user_preferences", "title": "User Preferences", "promotion": "guarded"},
            ]
        },
    }


@pytest.fixture
def wren(team: Team) -> Agent:
    return create_agent(team, "wren", background_config())


@pytest.fixture
def reviewer(team: Team) -> User:
    return make_user("rhea", team)


@pytest.fixture
def person(reviewer: User) -> Actor:
    return Actor.for_user(reviewer)


def remember(agent: Agent, content: str, *, kind: str = "preference", label: str = "theme") -> str:
    saved = save_memory(agent, MemoryInput(kind=kind, content=content, label=label), AGENT_ACTOR)
    assert isinstance(saved, Saved), saved
    return saved.id


def row(record_id: str) -> Promotion:
    return Promotion.objects.get(pk=record_id)


def snapshot() -> tuple[list[Mapping[str, object]], list[Mapping[str, object]]]:
    """Every promotion row and every event, to show that nothing changed."""
    return (
        list(Promotion.objects.order_by("pk").values()),
        list(MemoryEvent.objects.order_by("pk").values()),
    )


def kinds(record_id: str) -> list[str]:
    return list(
        MemoryEvent.objects.filter(record_id=record_id)
        .order_by("at", "id")
        .values_list("kind", flat=True)
    )


# --- decide ----------------------------------------------------------------------------


def test_a_guarded_memory_waits_and_approving_it_records_who_and_when(
    wren: Agent, person: Actor, reviewer: User
) -> None:
    record_id = remember(wren, "Dark theme.")
    assert row(record_id).status == PromotionStatus.PENDING

    result = decide(record_id, True, person)

    assert isinstance(result, Decided)
    landed = row(record_id)
    assert (landed.status, landed.decided_by) == (PromotionStatus.APPROVED, reviewer)
    assert landed.decided_at is not None
    assert kinds(record_id)[-1] == EventKind.APPROVED


def test_rejecting_keeps_the_note_on_the_row_and_the_event(
    wren: Agent, person: Actor, reviewer: User
) -> None:
    record_id = remember(wren, "Dark theme.")
    assert isinstance(decide(record_id, False, person, "not what they said"), Decided)
    landed = row(record_id)
    assert (landed.status, landed.decision_note) == (PromotionStatus.REJECTED, "not what they said")
    event = MemoryEvent.objects.get(record_id=record_id, kind=EventKind.REJECTED)
    assert (event.actor, event.actor_user, event.detail) == (
        "rhea",
        reviewer,
        {"reason": "not what they said"},
    )


def test_deciding_a_row_that_is_no_longer_pending_changes_nothing(
    wren: Agent, person: Actor
) -> None:
    record_id = remember(wren, "Dark theme.")
    decide(record_id, True, person)
    before = snapshot()

    result = decide(record_id, False, Actor.for_user(make_user("otto")))

    assert isinstance(result, AlreadyDecided)
    assert result.promotion.status == PromotionStatus.APPROVED
    assert "already decided by rhea" in result.notice
    assert snapshot() == before


# --- reopen ----------------------------------------------------------------------------


def test_reopening_a_rejected_memory_puts_it_back_in_the_queue(
    wren: Agent, team: Team, person: Actor, reviewer: User
) -> None:
    record_id = remember(wren, "Dark theme.")
    decide(record_id, False, person, "unsure")
    assert pending_count(team) == 0

    result = reopen(record_id, person, "asked again")

    assert isinstance(result, Decided)
    reopened = row(record_id)
    assert reopened.status == PromotionStatus.PENDING
    assert (reopened.decided_by, reopened.decided_at, reopened.decision_note) == (None, None, "")
    assert result.promotion.status == PromotionStatus.PENDING
    assert pending_count(team) == 1
    event = MemoryEvent.objects.get(record_id=record_id, kind=EventKind.REOPENED)
    assert (event.actor, event.actor_user, event.detail) == (
        "rhea",
        reviewer,
        {"reason": "asked again"},
    )
    assert kinds(record_id) == ["saved", "queued", "rejected", "reopened"]


def test_a_reopened_memory_can_be_decided_again(wren: Agent, person: Actor) -> None:
    record_id = remember(wren, "Dark theme.")
    decide(record_id, False, person)
    reopen(record_id, person)
    assert isinstance(decide(record_id, True, person), Decided)
    assert row(record_id).status == PromotionStatus.APPROVED


@pytest.mark.parametrize("approve", [True, None], ids=["approved", "pending"])
def test_reopening_a_memory_that_is_not_rejected_changes_nothing(
    wren: Agent, person: Actor, approve: bool | None
) -> None:
    record_id = remember(wren, "Dark theme.")
    if approve is not None:
        decide(record_id, approve, person)
    before = snapshot()

    result = reopen(record_id, person)

    assert isinstance(result, AlreadyDecided)
    assert result.promotion.status == (
        PromotionStatus.APPROVED if approve else PromotionStatus.PENDING
    )
    assert snapshot() == before


def test_reopening_a_declined_memory_changes_nothing(wren: Agent, person: Actor) -> None:
    record_id = remember(wren, "Met at the fair.", kind="episode")
    assert row(record_id).status == PromotionStatus.DECLINED
    before = snapshot()
    assert isinstance(reopen(record_id, person), AlreadyDecided)
    assert snapshot() == before


def test_reopening_a_superseded_memory_changes_nothing(wren: Agent, person: Actor) -> None:
    older = remember(wren, "Dark theme.")
    decide(older, False, person)
    newer = save_memory(
        wren,
        MemoryInput(kind="preference", content="Light theme.", label="theme", supersedes=older),
        AGENT_ACTOR,
    )
    assert isinstance(newer, Saved)
    assert row(older).status == PromotionStatus.SUPERSEDED
    before = snapshot()

    result = reopen(older, person)

    assert isinstance(result, AlreadyDecided)
    assert "superseded" in result.notice
    assert snapshot() == before


@pytest.mark.parametrize("holder_approved", [False, True], ids=["pending", "approved"])
def test_reopening_is_refused_when_another_memory_now_holds_the_address(
    wren: Agent, person: Actor, holder_approved: bool
) -> None:
    first = remember(wren, "Dark theme.", label="Theme")
    decide(first, False, person)
    holder = remember(wren, "Light theme.", label="theme ")  # the same address
    assert row(holder).placement_key == row(first).placement_key
    if holder_approved:
        decide(holder, True, person)
    before = snapshot()

    result = reopen(first, person)

    assert isinstance(result, AddressTaken)
    assert result.holder_id == holder
    assert holder in result.notice
    assert result.promotion.pk == first
    assert snapshot() == before
    assert row(first).status == PromotionStatus.REJECTED


def test_a_revoked_memory_leaves_the_prompt_and_can_be_reopened(
    wren: Agent, team: Team, person: Actor, reviewer: User
) -> None:
    record_id = remember(wren, "Mira.", kind="profile", label="name")
    assert row(record_id).status == PromotionStatus.APPROVED  # auto

    revoked = revoke(record_id, person, "outdated")

    assert isinstance(revoked, Decided)
    assert row(record_id).status not in (PromotionStatus.APPROVED, PromotionStatus.PENDING)
    assert (row(record_id).decided_by, row(record_id).decision_note) == (reviewer, "outdated")
    assert kinds(record_id)[-1] == EventKind.REVOKED

    reopened = reopen(record_id, person)

    assert isinstance(reopened, Decided)
    assert row(record_id).status == PromotionStatus.PENDING
    assert row(record_id).decided_by is None
    assert pending_count(team) == 1
    assert kinds(record_id)[-2:] == [EventKind.REVOKED, EventKind.REOPENED]


def test_a_revoked_promotion_has_the_status_revoked(wren: Agent, person: Actor) -> None:
    record_id = remember(wren, "Mira.", kind="profile", label="name")
    revoke(record_id, person)
    assert row(record_id).status == "revoked"


def test_revoking_a_memory_that_is_not_approved_changes_nothing(wren: Agent, person: Actor) -> None:
    record_id = remember(wren, "Dark theme.")
    before = snapshot()
    result = revoke(record_id, person)
    assert isinstance(result, AlreadyDecided)
    assert result.promotion.status == PromotionStatus.PENDING
    assert snapshot() == before


# --- another team's rows do not exist --------------------------------------------------


def test_another_teams_reviewer_can_neither_decide_revoke_nor_reopen(
    wren: Agent, other_team: Team, person: Actor, stranger: User
) -> None:
    outsider = Actor.for_user(stranger)
    pending = remember(wren, "Dark theme.")
    approved = remember(wren, "Mira.", kind="profile", label="name")
    rejected = remember(wren, "Tea.", label="drink")
    decide(rejected, False, person)
    before = snapshot()

    assert decide(pending, True, outsider, team=other_team) is None
    assert decide(pending, False, outsider, team=other_team) is None
    assert revoke(approved, outsider, team=other_team) is None
    assert reopen(rejected, outsider, team=other_team) is None

    assert snapshot() == before


def test_the_own_team_may_decide_with_team_given(wren: Agent, team: Team, person: Actor) -> None:
    record_id = remember(wren, "Dark theme.")
    assert isinstance(decide(record_id, True, person, team=team), Decided)
    assert isinstance(revoke(record_id, person, team=team), Decided)
    assert isinstance(reopen(record_id, person, team=team), Decided)


@pytest.mark.parametrize("operation", ["decide", "revoke", "reopen"])
def test_an_unknown_record_is_none(wren: Agent, person: Actor, operation: str) -> None:
    if operation == "decide":
        assert decide("nosuchrecord", True, person) is None
    elif operation == "revoke":
        assert revoke("nosuchrecord", person) is None
    else:
        assert reopen("nosuchrecord", person) is None


# --- decide_many -----------------------------------------------------------------------


def test_deciding_many_pending_memories_decides_them_all(
    wren: Agent, team: Team, person: Actor
) -> None:
    ids = [remember(wren, f"Value {n}.", label=f"pref {n}") for n in range(3)]
    assert decide_many(team, ids, False, person, "bulk") == ids
    assert {row(rid).status for rid in ids} == {PromotionStatus.REJECTED}
    assert MemoryEvent.objects.filter(record_id__in=ids, kind=EventKind.REJECTED).count() == 3


def test_deciding_many_is_all_or_nothing_when_one_is_no_longer_pending(
    wren: Agent, team: Team, person: Actor
) -> None:
    pending = [remember(wren, f"Value {n}.", label=f"pref {n}") for n in range(2)]
    decided = remember(wren, "Dark theme.")
    decide(decided, True, person)
    before = snapshot()

    with pytest.raises(NotAllPending) as raised:
        decide_many(team, [pending[0], decided, pending[1]], True, person)

    assert raised.value.code == "not_pending"
    assert raised.value.stale == [decided]
    assert raised.value.details["stale"] == [decided]
    assert snapshot() == before
    assert pending_count(team) == 2


def test_deciding_many_of_another_teams_memories_changes_nothing(
    wren: Agent, other_team: Team, stranger: User
) -> None:
    ids = [remember(wren, f"Value {n}.", label=f"pref {n}") for n in range(2)]
    before = snapshot()

    with pytest.raises(NotAllPending) as raised:
        decide_many(other_team, ids, True, Actor.for_user(stranger))

    assert raised.value.stale == ids
    assert snapshot() == before
