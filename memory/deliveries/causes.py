"""Why a prompt changed between two deliveries (SPEC §14 "Attribution"): every revision
of the agent's declarations and every memory event between them that can change a
prompt, oldest first.

Revisions are taken by number, between the two deliveries' recorded revisions (exact
even when a change committed while a delivery was being made); memory events by time.
A memory's save counts when it was approved at once (a save that waits for review or is
declined changes no prompt): its ``promoted`` event stands for it, named after who saved
it; its approval, rejection, revocation, reopening, supersession, erasure and a change
of its validity window always count. A memory composed before whose validity window
closed between the two is listed as ``{"type": "memory.expired", "memory_id", "at"}``
(SPEC §19.2), after the events of its moment. At most ``CAUSES_MAX`` are listed; ``total`` counts them, up to ``COUNTED_MAX``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from lens.models import Revision
from memory.models import (
    CompositionMemory,
    Delivery,
    EventKind,
    MemoryEvent,
    MemoryRecord,
    Promotion,
    PromotionStatus,
)

CAUSES_MAX = 500
# Counting stops here: two deliveries far apart may hold millions of events between them.
COUNTED_MAX = 100_000
_COUNTED = (
    EventKind.PROMOTED,
    EventKind.APPROVED,
    EventKind.REJECTED,
    EventKind.REVOKED,
    EventKind.REOPENED,
    EventKind.SUPERSEDED,
    EventKind.ERASED,
    EventKind.MIGRATED,
    # Approved on its sightings (SPEC §19.1): it entered the prompt.
    EventKind.EARNED,
    # A reviewer moved or cleared a validity window: an expired memory can come back.
    EventKind.VALIDITY,
)


@dataclass(frozen=True)
class Causes:
    items: list[dict[str, Any]]
    total: int


def causes_between(before: Delivery | None, after: Delivery) -> Causes:
    """The causes from ``before`` (None: the agent's beginning) to ``after``, in either
    order of the two."""
    if before is not None and before.delivered_at > after.delivered_at:
        before, after = after, before
    since = None if before is None else before.delivered_at
    expiries = (
        []
        if before is None
        else _expiries(
            after.agent_id,
            before.delivered_at,
            after.delivered_at,
            CompositionMemory.objects.filter(composition_id=before.composition_id).values(
                "memory_id"
            ),
        )
    )
    return _listed(
        _revision_rows(before, after),
        _event_rows(after.agent_id, since, after.delivered_at),
        expiries,
    )


def causes_since(
    agent_id: int, revisions: tuple[int, int], since: datetime, until: datetime
) -> Causes:
    """The causes of a change of ``agent_id``'s prompt seen after the fact (a
    ``prompt.changed`` event): the revisions numbered in ``(low, high]`` and the memory
    events timed in ``(since, until]``."""
    low, high = revisions
    rows = Revision.objects.filter(agent_id=agent_id, number__gt=low, number__lte=high)
    # Composed before: approved (the mark keeps no memory ids; an approved memory the
    # fold left out for another reason is told too, which is harmless).
    approved = Promotion.objects.filter(agent_id=agent_id, status=PromotionStatus.APPROVED).values(
        "record_id"
    )
    return _listed(
        rows, _event_rows(agent_id, since, until), _expiries(agent_id, since, until, approved)
    )


_Item = tuple[datetime, int, dict[str, Any]]


def _listed(
    revisions: QuerySet[Revision], events: QuerySet[MemoryEvent], expiries: list[_Item]
) -> Causes:
    listed = sorted(
        _revisions(revisions) + _events(events) + expiries, key=lambda item: (item[0], item[1])
    )
    total = revisions.count() + events.values("id")[:COUNTED_MAX].count() + len(expiries)
    return Causes(items=[item[2] for item in listed[:CAUSES_MAX]], total=total)


def _expiries(
    agent_id: int, since: datetime, until: datetime, composed: QuerySet[Any]
) -> list[_Item]:
    """The memories among ``composed`` (a subquery of ids) whose validity window closed
    in ``(since, until]`` (SPEC §19.2): no event marks an expiry, the clock does. One
    query on the ``valid_until`` index, at most ``CAUSES_MAX``."""
    rows = (
        MemoryRecord.objects.filter(
            agent_id=agent_id, valid_until__gt=since, valid_until__lte=until, pk__in=composed
        )
        .order_by("valid_until", "id")
        .values_list("id", "valid_until")[:CAUSES_MAX]
    )
    # After every event of the same moment (ids are positive): the window closes last.
    return [
        (
            at,
            2**63,
            {
                "kind": "memory",
                "type": "memory.expired",
                "memory_id": record_id,
                "event": "expired",
                "actor": "system",
                "at": at,
            },
        )
        for record_id, at in rows
        if at is not None  # the filter makes it so
    ]


def _revision_rows(before: Delivery | None, after: Delivery) -> QuerySet[Revision]:
    rows = Revision.objects.filter(agent_id=after.agent_id)
    low = 0 if before is None else before.revision
    if low is not None and after.revision is not None:
        return rows.filter(number__gt=low, number__lte=after.revision)
    # A delivery made before revisions were recorded: by time instead.
    rows = rows.filter(created_at__lte=after.delivered_at)
    return rows if before is None else rows.filter(created_at__gt=before.delivered_at)


def _event_rows(agent_id: int, since: datetime | None, until: datetime) -> QuerySet[MemoryEvent]:
    rows = MemoryEvent.objects.filter(agent_id=agent_id, kind__in=_COUNTED, at__lte=until)
    return rows if since is None else rows.filter(at__gt=since)


def _revisions(rows: QuerySet[Revision]) -> list[tuple[datetime, int, dict[str, Any]]]:
    return [
        (
            row.created_at,
            0,
            {
                "kind": "revision",
                "revision": row.number,
                "actor": row.actor,
                "approved_by": row.approved_by,
                "at": row.created_at,
                "summary": row.summary,
            },
        )
        for row in rows.order_by("number")[:CAUSES_MAX]
    ]


def _events(rows: QuerySet[MemoryEvent]) -> list[tuple[datetime, int, dict[str, Any]]]:
    found = list(
        rows.order_by("at", "id").values_list("id", "record_id", "kind", "actor", "at")[:CAUSES_MAX]
    )
    # A migration approved at once writes "migrated" then "promoted" at one moment: the
    # migration is the cause, not a save.
    migrated = {
        (record, at) for _id, record, kind, _actor, at in found if kind == EventKind.MIGRATED
    }
    found = [
        row for row in found if row[2] != EventKind.PROMOTED or (row[1], row[4]) not in migrated
    ]
    # A save approved at once: its "promoted" event, named after who saved the memory.
    promoted = [record for _id, record, kind, _actor, _at in found if kind == EventKind.PROMOTED]
    savers = dict(
        MemoryEvent.objects.filter(record_id__in=promoted, kind=EventKind.SAVED).values_list(
            "record_id", "actor"
        )
    )
    return [
        (
            at,
            pk,
            {
                "kind": "memory",
                "memory_id": record,
                "event": EventKind.SAVED if kind == EventKind.PROMOTED else kind,
                "actor": savers.get(record, actor) if kind == EventKind.PROMOTED else actor,
                "at": at,
            },
        )
        for pk, record, kind, actor, at in found
    ]
