"""Why a prompt changed between two deliveries (SPEC §14 "Attribution"): every revision
of the agent's declarations and every memory event between them that can change a
prompt, oldest first.

Revisions are taken by number, between the two deliveries' recorded revisions (exact
even when a change committed while a delivery was being made); memory events by time.
A memory's save counts when it was approved at once (a save that waits for review or is
declined changes no prompt): its ``promoted`` event stands for it, named after who saved
it; its approval, rejection, revocation, reopening, supersession and erasure always
count. At
most ``CAUSES_MAX`` are listed; ``total`` counts them, up to ``COUNTED_MAX``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from lens.models import Revision
from memory.models import Delivery, EventKind, MemoryEvent

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
    return _listed(
        _revision_rows(before, after), _event_rows(after.agent_id, since, after.delivered_at)
    )


def causes_since(
    agent_id: int, revisions: tuple[int, int], since: datetime, until: datetime
) -> Causes:
    """The causes of a change of ``agent_id``'s prompt seen after the fact (a
    ``prompt.changed`` event): the revisions numbered in ``(low, high]`` and the memory
    events timed in ``(since, until]``."""
    low, high = revisions
    rows = Revision.objects.filter(agent_id=agent_id, number__gt=low, number__lte=high)
    return _listed(rows, _event_rows(agent_id, since, until))


def _listed(revisions: QuerySet[Revision], events: QuerySet[MemoryEvent]) -> Causes:
    listed = sorted(_revisions(revisions) + _events(events), key=lambda item: (item[0], item[1]))
    total = revisions.count() + events.values("id")[:COUNTED_MAX].count()
    return Causes(items=[item[2] for item in listed[:CAUSES_MAX]], total=total)


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
