"""Sightings of earning memories (SPEC §19.1), as saving records them: the holder's
lock, its sightings so far, and the one place the system approves an earned memory.

A save routed to an earned section waits (``pending``, reason ``earning``). Each later
save of the same content at its address is a sighting: a record of its own whose
promotion row ``corroborates`` the holder. Once the holder and its sightings come from
``EARNED_SIGHTINGS`` distinct sessions, ``approve_earned`` approves the holder in the
sighting's transaction.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db.models import Q

from lens.actors import SYSTEM
from memory.core.outcome import INSTRUCTION_SHAPED, system_may_approve
from memory.core.screening import screen
from memory.core.sightings import Sighting, counted, distinct_sessions
from memory.models import (
    HOLDING,
    EventKind,
    MemoryEvent,
    MemoryRecord,
    Promotion,
    PromotionStatus,
    new_event,
)

EARNING = "earning"
EARNED = "earned"


def earned_sightings() -> int:
    """How many distinct sessions earn a memory its place (``EARNED_SIGHTINGS``)."""
    return int(getattr(settings, "EARNED_SIGHTINGS", 3))


class HolderMoved(Exception):
    """The holder stopped holding its address between the gate and the lock (it was
    superseded, decided or erased meanwhile): the save looks again."""


@dataclass(frozen=True)
class Holder:
    """The locked promotion row of the earning memory a sighting saw."""

    promotion: Promotion

    @property
    def earning(self) -> bool:
        row = self.promotion
        return row.status == PromotionStatus.PENDING and row.reason == EARNING


def lock_holder(holder_id: str) -> Holder:
    """The holder's promotion row, locked until the transaction ends: concurrent
    sightings of one memory are counted one at a time (PostgreSQL; SQLite serialises
    every write). Raises HolderMoved when it no longer holds its address."""
    row = (
        Promotion.objects.select_for_update()
        .filter(record_id=holder_id, status__in=HOLDING)
        .first()
    )
    if row is None:
        raise HolderMoved(holder_id)
    return Holder(row)


def sightings_of(holder_ids: Collection[str]) -> dict[str, list[Sighting]]:
    """Each holder's own save and its live sightings, as the count reads them (one
    query, none for no holders)."""
    found: dict[str, list[Sighting]] = {holder: [] for holder in holder_ids}
    if not found:
        return found
    ids = list(found)
    rows = Promotion.objects.filter(
        Q(record_id__in=ids) | Q(corroborates_id__in=ids, status=PromotionStatus.CORROBORATES)
    ).values_list("record_id", "corroborates_id", "record__session", "record__created_at")
    for record_id, holder, session, at in rows:
        found[holder or record_id].append(Sighting(record_id, session, at))
    return found


def approve_earned(holder: Holder, sightings: list[Sighting], at: datetime) -> list[MemoryEvent]:
    """The one place the system approves a memory on its sightings: when the holder is
    still earning and its sightings come from enough distinct sessions, approve it
    (``decided_by`` NULL, reason ``earned``) and answer the event that says so.

    Any rule that must keep a memory from composing without a person belongs here,
    before the approval."""
    sessions = distinct_sessions(sightings)
    if not holder.earning or sessions < earned_sightings():
        return []
    row = holder.promotion
    content = MemoryRecord.objects.filter(pk=row.record_id).values_list("content", flat=True)
    if not system_may_approve(screen(content.get())):
        # It reads as an instruction to the model (SPEC §19.4): its sightings earn it a
        # person's look, never the system's approval. (A save screened so waits in the
        # queue from the start; this keeps one saved before the screen from slipping by.)
        Promotion.objects.filter(pk=row.pk, status=PromotionStatus.PENDING).update(
            reason=INSTRUCTION_SHAPED
        )
        return []
    Promotion.objects.filter(pk=row.pk, status=PromotionStatus.PENDING).update(
        status=PromotionStatus.APPROVED, decided_by=None, decided_at=at, reason=EARNED
    )
    return [
        new_event(
            row.record_id,
            row.agent_id,
            EventKind.EARNED,
            SYSTEM,
            at,
            section=row.section,
            sessions=sessions,
        )
    ]


@dataclass(frozen=True)
class SeenLine:
    """One save of an earning memory's content, as its page lists it."""

    memory_id: str
    session: str | None
    at: datetime
    counted: bool  # a session no earlier save of it had


@dataclass(frozen=True)
class Seen:
    """An earned-section memory's sightings, for the page of it or of one of them."""

    holder: str
    lines: list[SeenLine]
    needed: int

    @property
    def sessions(self) -> int:
        return sum(line.counted for line in self.lines)


def seen_for(promotion: Promotion | None) -> Seen | None:
    """The sightings story of the memory whose row is ``promotion``: a memory saved
    to an earned section, or a sighting of one (one query; None, with no query, for
    any other memory)."""
    if promotion is None:
        return None
    if promotion.corroborates_id is not None:
        holder = promotion.corroborates_id
    elif promotion.tier == "earned" and promotion.section is not None:
        holder = promotion.record_id
    else:
        return None
    found = sightings_of([holder])[holder]
    kept = {s.memory_id for s in counted(found)}
    lines = [
        SeenLine(s.memory_id, s.session, s.created_at, s.memory_id in kept)
        for s in sorted(found, key=lambda s: (s.created_at, s.memory_id))
    ]
    return Seen(holder, lines, earned_sightings())
