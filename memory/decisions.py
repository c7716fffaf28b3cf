"""Deciding guarded promotions: approve, reject (one or many), undo, revoke and reopen.

Every decision is a conditional update on the row's current status, so of two
reviewers racing on one row exactly one decision lands; the other is told who decided.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from lens.actors import Actor
from lens.core.errors import DomainError
from lens.models import Agent, Team
from lens.tracing import AGENT, DECISION, MEMORY_ID, TEAM, Attributes, span
from memory.core.records import is_record_id
from memory.events import write_events
from memory.models import EventKind, Promotion, PromotionStatus, new_event
from memory.saving import holder_of


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
    return Promotion.objects.filter(agent__team=team, status=PromotionStatus.PENDING).count()


def notice_for(promotion: Promotion) -> str:
    """Why a row can no longer be decided, in words a reviewer can act on."""
    if promotion.status == PromotionStatus.SUPERSEDED:
        newer = promotion.record.superseded_by.order_by("created_at").first()
        by = f" by memory {newer.pk}" if newer else ""
        return f"This memory was superseded{by} meanwhile; nothing was changed."
    if promotion.status == PromotionStatus.ERASED:
        return "This memory was erased meanwhile; nothing was changed."
    decided = (PromotionStatus.APPROVED, PromotionStatus.REJECTED, PromotionStatus.REVOKED)
    if promotion.status in decided:
        who = promotion.decided_by.get_username() if promotion.decided_by else "the system"
        when = (
            promotion.decided_at.strftime("%Y-%m-%d %H:%M:%S UTC") if promotion.decided_at else ""
        )
        verb = str(promotion.status)
        return f"This was already decided by {who}: {verb} at {when}. Nothing was changed."
    return f"This promotion is {promotion.status}; nothing was changed."


def decide(
    record_id: str, approve: bool, actor: Actor, note: str = "", *, team: Team | None = None
) -> Decided | AlreadyDecided | None:
    """Approve or reject one pending promotion (of ``team``, when given); None if there
    is no such row.
    """
    status, kind = (
        (PromotionStatus.APPROVED, EventKind.APPROVED)
        if approve
        else (PromotionStatus.REJECTED, EventKind.REJECTED)
    )
    with span("memory.decide") as current:
        result = _transition(record_id, team, PromotionStatus.PENDING, status, kind, actor, note)
        if current.is_recording():
            current.set_attributes(_traced(record_id, status, result, team))
        return result


def _traced(
    record_ids: str | list[str],
    decision: str,
    result: Decided | AlreadyDecided | AddressTaken | Promotion | None,
    team: Team | None,
) -> Attributes:
    """A memory.decide span's attributes: which memories, what was decided, and the
    agent and team they belong to once the row was found."""
    attributes: Attributes = {MEMORY_ID: record_ids, DECISION: str(decision)}
    promotion = result if isinstance(result, Promotion) or result is None else result.promotion
    if promotion is not None:
        attributes[AGENT] = promotion.agent.slug
        attributes[TEAM] = (team or promotion.agent.team).slug
    elif team is not None:
        attributes[TEAM] = team.slug
    return attributes


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
        write_events([new_event(record_id, promotion.agent_id, kind, actor, at, **detail)])
    return Decided(promotion)


def _rows(record_id: str, team: Team | None) -> QuerySet[Promotion]:
    rows = Promotion.objects.filter(pk=record_id)
    return rows if team is None else rows.filter(agent__in=_agents_of(team))


def _agents_of(team: Team) -> QuerySet[Agent, Mapping[str, object]]:
    # A subquery on agents, never a join: Django turns an UPDATE whose filter joins
    # another table into ``WHERE pk IN (SELECT ... status = 'pending')``, and PostgreSQL
    # does not re-check that subquery against the row a concurrent decision just
    # committed, so both decisions would land. A plain ``status`` condition on the
    # updated table is re-checked after the row lock is granted.
    return Agent.objects.filter(team=team).values("pk")


class NotAllPending(DomainError):
    """A bulk decision met rows that are no longer pending: nothing was changed."""

    code = "not_pending"

    def __init__(self, stale: Sequence[str], message: str = "") -> None:
        super().__init__(
            message
            or f"Nothing was changed: {len(stale)} of the selected memories are no longer "
            "pending (someone decided them, or they were superseded or erased).",
            stale=list(stale),
        )
        self.stale = list(stale)


def decide_many(
    team: Team,
    record_ids: Sequence[str],
    approve: bool,
    actor: Actor,
    note: str = "",
    *,
    now: datetime | None = None,
) -> list[str]:
    """Decide every listed pending promotion of ``team`` in one transaction, or none, at
    the moment ``now`` (default: now), which an undo of the whole decision names.

    Raises NotAllPending (and changes nothing) when any of them is not pending.
    """
    ids = list(dict.fromkeys(record_ids))
    with span("memory.decide") as current:
        if current.is_recording():
            status = PromotionStatus.APPROVED if approve else PromotionStatus.REJECTED
            current.set_attributes(_traced(ids, status, None, team))
        return _decide_many(team, ids, approve, actor, note, now)


@transaction.atomic
def _decide_many(
    team: Team, ids: list[str], approve: bool, actor: Actor, note: str, now: datetime | None
) -> list[str]:
    at = now or timezone.now()
    status = PromotionStatus.APPROVED if approve else PromotionStatus.REJECTED
    rows = Promotion.objects.filter(
        pk__in=ids, agent__in=_agents_of(team), status=PromotionStatus.PENDING
    )
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
    write_events([new_event(rid, agent_ids[rid], kind, actor, at, **detail) for rid in ids])
    return ids


def revoke(
    record_id: str, actor: Actor, note: str = "", *, team: Team | None = None
) -> Decided | AlreadyDecided | None:
    """Take an approved memory back out of the prompt (its row becomes ``revoked``)."""
    with span("memory.decide") as current:
        result = _transition(
            record_id,
            team,
            PromotionStatus.APPROVED,
            PromotionStatus.REVOKED,
            EventKind.REVOKED,
            actor,
            note,
        )
        if current.is_recording():
            current.set_attributes(_traced(record_id, PromotionStatus.REVOKED, result, team))
        return result


@dataclass(frozen=True)
class AddressTaken:
    """Reopening was refused: another record now holds the address. Nothing changed."""

    promotion: Promotion
    holder_id: str

    @property
    def notice(self) -> str:
        return (
            f"Memory {self.holder_id} now holds this address, so this one cannot wait for "
            "approval again; nothing was changed."
        )


def reopen(
    record_id: str, actor: Actor, note: str = "", *, team: Team | None = None
) -> Decided | AlreadyDecided | AddressTaken | None:
    """Put a rejected (or revoked) promotion back into the queue as ``pending`` — unless
    the memory was superseded meanwhile (AlreadyDecided) or another record holds its
    address now (AddressTaken). None if there is no such row.
    """
    with span("memory.decide") as current:
        result = _reopen(record_id, actor, note, team)
        if current.is_recording():
            current.set_attributes(_traced(record_id, "reopened", result, team))
        return result


def _reopen(
    record_id: str, actor: Actor, note: str, team: Team | None
) -> Decided | AlreadyDecided | AddressTaken | None:
    at = timezone.now()
    rows = _rows(record_id, team)
    promotion = rows.select_related("agent").first()
    if promotion is None:
        return None
    try:
        with transaction.atomic():
            # The partial unique index refuses a second holder of one address, so a
            # save racing this update cannot leave two records holding it.
            changed = rows.filter(
                status__in=(PromotionStatus.REJECTED, PromotionStatus.REVOKED)
            ).update(
                status=PromotionStatus.PENDING, decided_by=None, decided_at=None, decision_note=""
            )
            if changed:
                detail = {"reason": note} if note else {}
                write_events(
                    [
                        new_event(
                            record_id, promotion.agent_id, EventKind.REOPENED, actor, at, **detail
                        )
                    ]
                )
    except IntegrityError:
        holder = holder_of(promotion.agent, promotion.placement_key or "")
        return AddressTaken(promotion, holder.record_id if holder else "")
    current = rows.select_related("record", "decided_by", "agent").get()
    return Decided(current) if changed else AlreadyDecided(current)


# --- undo ------------------------------------------------------------------------------

# How long a reviewer may take a decision back from the queue (the setting UNDO_SECONDS):
# long enough to read the notice naming what was decided, and to notice a slip after
# the next row or two.
DEFAULT_UNDO_SECONDS = 30


def undo_seconds() -> int:
    return int(getattr(settings, "UNDO_SECONDS", DEFAULT_UNDO_SECONDS))


UNDOABLE = (PromotionStatus.APPROVED, PromotionStatus.REJECTED)


class UndoRefused(DomainError):
    """Taking a decision back was refused; nothing changed."""

    code = "undo_refused"


class NoSuchPromotion(UndoRefused):
    code = "promotion_not_found"


class NotYourDecision(UndoRefused):
    code = "undo_not_yours"


class UndoExpired(UndoRefused):
    code = "undo_expired"


class DecisionChanged(UndoRefused):
    """The row is no longer in the state the decision left it in (decided again,
    revoked, reopened, superseded)."""

    code = "undo_changed"


class AddressNowTaken(UndoRefused):
    """Another record holds the address the rejection freed."""

    code = "address_taken"


def undo(
    record_id: str,
    actor: Actor,
    decided: str,
    decided_at: datetime | None = None,
    *,
    team: Team | None = None,
    now: datetime | None = None,
) -> Promotion:
    """Put a promotion that ``actor`` just approved or rejected back to ``pending``.

    ``decided`` is the status the decision left (``approved`` or ``rejected``) and
    ``decided_at`` its moment when known, so an old Undo never takes back a later
    decision. Allowed only to the person who decided, within ``undo_seconds()`` of the
    decision, while the row is still exactly as the decision left it and no other record
    took the address meanwhile. The checks sit in the UPDATE's condition, so of an undo
    racing another decision, a reopen or a save to the same address exactly one lands.
    Returns the pending row; raises an UndoRefused subclass (nothing changed) otherwise.
    """
    with span("memory.decide") as current:
        if current.is_recording():
            current.set_attributes(_traced(record_id, "undone", None, team))
        undone = _undo(record_id, actor, decided, decided_at, team, now)
        if current.is_recording():
            current.set_attributes(_traced(record_id, "undone", undone, team))
        return undone


def _undo(
    record_id: str,
    actor: Actor,
    decided: str,
    decided_at: datetime | None,
    team: Team | None,
    now: datetime | None,
) -> Promotion:
    at = now or timezone.now()
    window = timedelta(seconds=undo_seconds())
    rows = _rows(record_id, team)
    if decided not in UNDOABLE:
        raise DecisionChanged(f"Only an approval or a rejection can be undone, not {decided!r}.")
    if actor.user is None:
        raise NotYourDecision("Only the person who decided can undo a decision.")
    mine = rows.filter(status=decided, decided_by=actor.user, decided_at__gte=at - window)
    if decided_at is not None:
        mine = mine.filter(decided_at=decided_at)
    promotion = rows.select_related("agent").first()
    if promotion is None:
        raise NoSuchPromotion(f"No memory {record_id!r} here.")
    try:
        with transaction.atomic():
            # The partial unique index refuses a second holder of one address, so a
            # save that took the address a rejection freed makes this update fail.
            changed = mine.update(
                status=PromotionStatus.PENDING, decided_by=None, decided_at=None, decision_note=""
            )
            if changed:
                write_events(
                    [
                        new_event(
                            record_id,
                            promotion.agent_id,
                            EventKind.REOPENED,
                            actor,
                            at,
                            undone=decided,
                        )
                    ]
                )
    except IntegrityError:
        holder = holder_of(promotion.agent, promotion.placement_key or "")
        held = f"memory {holder.record_id}" if holder else "another memory"
        raise AddressNowTaken(
            f"{held.capitalize()} took this address meanwhile, so this memory cannot wait "
            "for approval again; nothing was changed.",
            holder=holder.record_id if holder else None,
        ) from None
    current = rows.select_related("record", "record__supersedes", "decided_by", "agent").get()
    if not changed:
        raise _why_not_undone(current, actor, decided, decided_at, at - window)
    return current


def _why_not_undone(
    promotion: Promotion,
    actor: Actor,
    decided: str,
    decided_at: datetime | None,
    since: datetime,
) -> UndoRefused:
    """Why the conditional update changed nothing, read from the row as it is now."""
    if promotion.status != decided or (
        decided_at is not None and promotion.decided_at != decided_at
    ):
        return DecisionChanged(f"Cannot undo: {_changed_since(promotion)}")
    if promotion.decided_by_id != actor.user.pk:
        who = promotion.decided_by.get_username() if promotion.decided_by else "the system"
        return NotYourDecision(
            f"Cannot undo: only {who}, who decided it, can; nothing was changed."
        )
    if promotion.decided_at is None or promotion.decided_at < since:
        return UndoExpired(
            f"Too late to undo: a decision can be undone for {undo_seconds()} seconds. "
            "Reopen it from the memory's page instead; nothing was changed."
        )
    return DecisionChanged(f"Cannot undo: {_changed_since(promotion)}")


def _changed_since(promotion: Promotion) -> str:
    if promotion.status in (PromotionStatus.SUPERSEDED, PromotionStatus.ERASED):
        return notice_for(promotion).replace("This memory", "the memory", 1)
    if promotion.status == PromotionStatus.PENDING:
        return "it was reopened meanwhile and waits for approval again; nothing was changed."
    who = promotion.decided_by.get_username() if promotion.decided_by else "the system"
    return f"it was {promotion.status} by {who} meanwhile; nothing was changed."


# A bulk decision is taken back whole or row by row: at most this many rows at once
# (a page of the queue holds 50).
UNDO_MANY_MAX = 200


@dataclass(frozen=True)
class UndoneMany:
    """What taking back a bulk decision did: the rows that wait again, and the ones that
    could not (each with why; nothing changed for them)."""

    undone: list[str]
    refused: dict[str, UndoRefused]


def undo_many(
    team: Team,
    record_ids: Sequence[str],
    actor: Actor,
    decided: str,
    decided_at: datetime,
    *,
    now: datetime | None = None,
) -> UndoneMany:
    """Put the rows of a bulk decision ``actor`` took at ``decided_at`` back to pending.

    Each row is undone as ``undo`` would (same person, same moment, within the window,
    unchanged since, address still free). When every row qualifies, one conditional
    UPDATE does it; otherwise each row is tried on its own and the ones refused say why.
    """
    ids = list(dict.fromkeys(record_ids))[:UNDO_MANY_MAX]
    with span("memory.decide") as current:
        if current.is_recording():
            current.set_attributes(_traced(ids, "undone", None, team))
        return _undo_many(team, ids, actor, decided, decided_at, now)


def _undo_many(
    team: Team,
    ids: list[str],
    actor: Actor,
    decided: str,
    decided_at: datetime,
    now: datetime | None,
) -> UndoneMany:
    at = now or timezone.now()
    if decided not in UNDOABLE:
        raise DecisionChanged(f"Only an approval or a rejection can be undone, not {decided!r}.")
    if actor.user is None:
        raise NotYourDecision("Only the person who decided can undo a decision.")
    window = timedelta(seconds=undo_seconds())
    rows = Promotion.objects.filter(
        pk__in=ids,
        agent__in=_agents_of(team),
        status=decided,
        decided_by=actor.user,
        decided_at=decided_at,
        decided_at__gte=at - window,
    )
    try:
        with transaction.atomic():
            changed = rows.update(
                status=PromotionStatus.PENDING, decided_by=None, decided_at=None, decision_note=""
            )
            if changed != len(ids):
                raise _NotWhole
            agent_ids = dict(
                Promotion.objects.filter(pk__in=ids).values_list("record_id", "agent_id")
            )
            write_events(
                [
                    new_event(rid, agent_ids[rid], EventKind.REOPENED, actor, at, undone=decided)
                    for rid in ids
                ]
            )
            return UndoneMany(ids, {})
    except (_NotWhole, IntegrityError):
        pass  # rolled back: each row on its own says what stops it
    undone: list[str] = []
    refused: dict[str, UndoRefused] = {}
    for record_id in ids:
        try:
            undo(record_id, actor, decided, decided_at, team=team, now=at)
        except UndoRefused as exc:
            refused[record_id] = exc
        else:
            undone.append(record_id)
    return UndoneMany(undone, refused)


class _NotWhole(Exception):
    """Some row of a bulk undo no longer qualifies: roll the whole UPDATE back."""


# --- a decision checked, not made ------------------------------------------------------


class NotApproved(DomainError):
    """Revoking a memory that is not approved, asked about (``revoke`` would tell a page
    ``AlreadyDecided``)."""

    code = "not_approved"


class NotReopenable(DomainError):
    """Reopening a memory that is neither rejected nor revoked, asked about (``reopen``
    would tell a page ``AlreadyDecided``)."""

    code = "not_reopenable"


# What each decision needs the row to be in; what a page says otherwise.
_ALLOWED: dict[str, tuple[tuple[str, ...], str]] = {
    "approve": ((PromotionStatus.PENDING,), ""),
    "reject": ((PromotionStatus.PENDING,), ""),
    "revoke": ((PromotionStatus.APPROVED,), "Only an approved memory can be revoked."),
    "reopen": (
        (PromotionStatus.REJECTED, PromotionStatus.REVOKED),
        "Only a rejected or revoked memory can be reopened.",
    ),
}


def check_decision(agent: Agent, record_id: str, decision: str) -> Promotion:
    """The promotion row of ``agent``'s memory ``record_id`` that ``decision`` (approve,
    reject, revoke or reopen) would move now, read and left as it is.

    Raises NoSuchPromotion for a memory the agent does not have; where ``decide``,
    ``revoke`` or ``reopen`` would change nothing, the error that says why with its
    code: NotAllPending (approving or rejecting a row that is not pending, as deciding
    several does), NotApproved, NotReopenable, or AddressNowTaken (reopening where
    another record holds the address now, as undoing a rejection does).
    """
    # Anything that is no record id names no memory: not found, with no query at all (as
    # the approvals page's decide answers it).
    promotion = (
        Promotion.objects.select_related("record", "decided_by", "agent")
        .filter(agent=agent, record_id=record_id)
        .first()
        if is_record_id(record_id)
        else None
    )
    if promotion is None:
        shown = record_id if len(record_id) <= 40 else record_id[:40] + "…"
        raise NoSuchPromotion(f"No memory {shown!r} here.")
    allowed, only = _ALLOWED[decision]
    if promotion.status not in allowed:
        notice = notice_for(promotion)
        if decision in ("approve", "reject"):
            raise NotAllPending([record_id], notice)
        refused = NotApproved if decision == "revoke" else NotReopenable
        raise refused(f"{only} {notice}", current_status=promotion.status)
    if decision == "reopen" and promotion.placement_key:
        holder = holder_of(promotion.agent, promotion.placement_key)
        if holder is not None and holder.record_id != record_id:
            notice = AddressTaken(promotion, holder.record_id).notice
            raise AddressNowTaken(notice, holder=holder.record_id)
    return promotion
