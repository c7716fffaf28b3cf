"""Deciding guarded promotions: approve, reject (one or many), and revoke.

Every decision is a conditional update on the row's current status, so of two
reviewers racing on one row exactly one decision lands; the other is told who decided.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from lens.models import Agent, Team
from memory.actors import Actor
from memory.models import EventKind, MemoryEvent, Promotion, Status
from memory.services import event


@dataclass(frozen=True)
class Decided:
    promotion: Promotion


@dataclass(frozen=True)
class AlreadyDecided:
    """The row was no longer pending: nothing changed. ``promotion`` is its state now."""

    promotion: Promotion

    @property
    def notice(self) -> str:
        return notice_for(self.promotion)


def pending_count(team: Team) -> int:
    """How many promotions of ``team`` wait for a person (one indexed count)."""
    return Promotion.objects.filter(agent__team=team, status=Status.PENDING).count()


def notice_for(promotion: Promotion) -> str:
    """Why a row can no longer be decided, in words a reviewer can act on."""
    if promotion.status == Status.SUPERSEDED:
        newer = promotion.record.superseded_by.order_by("created_at").first()
        by = f" by memory {newer.pk}" if newer else ""
        return f"This memory was superseded{by} meanwhile; nothing was changed."
    if promotion.status in (Status.APPROVED, Status.REJECTED):
        who = promotion.decided_by.get_username() if promotion.decided_by else "the system"
        when = (
            promotion.decided_at.strftime("%Y-%m-%d %H:%M:%S UTC") if promotion.decided_at else ""
        )
        verb = "approved" if promotion.status == Status.APPROVED else "rejected"
        return f"This was already decided by {who}: {verb} at {when}. Nothing was changed."
    return f"This promotion is {promotion.status}; nothing was changed."


def decide(
    record_id: str, approve: bool, actor: Actor, note: str = "", *, team: Team | None = None
) -> Decided | AlreadyDecided | None:
    """Approve or reject one pending promotion (of ``team``, when given); None if there
    is no such row.
    """
    status, kind = (
        (Status.APPROVED, EventKind.APPROVED) if approve else (Status.REJECTED, EventKind.REJECTED)
    )
    return _transition(record_id, team, Status.PENDING, status, kind, actor, note)


def _transition(
    record_id: str,
    team: Team | None,
    from_status: str,
    to_status: str,
    kind: str,
    actor: Actor,
    note: str,
) -> Decided | AlreadyDecided | None:
    """Move one row from ``from_status`` to ``to_status`` and record the event — only
    if it is still in ``from_status``, so of racing people exactly one lands.
    """
    at = timezone.now()
    rows = _rows(record_id, team)
    with transaction.atomic():
        changed = rows.filter(status=from_status).update(
            status=to_status, decided_by=actor.user, decided_at=at, decision_note=note
        )
        promotion = rows.select_related("record", "decided_by", "agent").first()
        if promotion is None:
            return None
        if not changed:
            return AlreadyDecided(promotion)
        detail = {"reason": note} if note else {}
        event(record_id, promotion.agent_id, kind, actor, at, **detail).save()
    return Decided(promotion)


def _rows(record_id: str, team: Team | None) -> QuerySet[Promotion]:
    rows = Promotion.objects.filter(pk=record_id)
    return rows if team is None else rows.filter(agent__in=_agents_of(team))


def _agents_of(team: Team) -> QuerySet[Agent]:
    # A subquery on agents, never a join: Django turns an UPDATE whose filter joins
    # another table into ``WHERE pk IN (SELECT ... status = 'pending')``, and PostgreSQL
    # does not re-check that subquery against the row a concurrent decision just
    # committed, so both decisions would land. A plain ``status`` condition on the
    # updated table is re-checked after the row lock is granted.
    return Agent.objects.filter(team=team).values("pk")


class NotAllPending(Exception):
    """A bulk decision met rows that are no longer pending: nothing was changed."""

    def __init__(self, stale: Sequence[str]) -> None:
        super().__init__(f"{len(stale)} of the selected promotions are no longer pending")
        self.stale = list(stale)


@transaction.atomic
def decide_many(
    team: Team, record_ids: Sequence[str], approve: bool, actor: Actor, note: str = ""
) -> list[str]:
    """Decide every listed pending promotion of ``team`` in one transaction, or none.

    Raises NotAllPending (and changes nothing) when any of them is not pending.
    """
    ids = list(dict.fromkeys(record_ids))
    at = timezone.now()
    status = Status.APPROVED if approve else Status.REJECTED
    rows = Promotion.objects.filter(pk__in=ids, agent__in=_agents_of(team), status=Status.PENDING)
    changed = rows.update(status=status, decided_by=actor.user, decided_at=at, decision_note=note)
    if changed != len(ids):
        still = set(
            Promotion.objects.filter(pk__in=ids, status=status, decided_at=at).values_list(
                "pk", flat=True
            )
        )
        transaction.set_rollback(True)
        raise NotAllPending([rid for rid in ids if rid not in still])
    kind = EventKind.APPROVED if approve else EventKind.REJECTED
    detail = {"reason": note, "bulk": True} if note else {"bulk": True}
    agent_ids = dict(Promotion.objects.filter(pk__in=ids).values_list("record_id", "agent_id"))
    MemoryEvent.objects.bulk_create(
        event(rid, agent_ids[rid], kind, actor, at, **detail) for rid in ids
    )
    return ids


def revoke(
    record_id: str, actor: Actor, note: str = "", *, team: Team | None = None
) -> Decided | AlreadyDecided | None:
    """Take an approved memory back out of the prompt (its row becomes ``rejected``)."""
    return _transition(
        record_id, team, Status.APPROVED, Status.REJECTED, EventKind.REVOKED, actor, note
    )
