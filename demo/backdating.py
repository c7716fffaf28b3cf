"""Moving a demo agent's memories into the past its deliveries tell.

The demo is the only place that rewrites history: the product never changes when a
memory was saved, decided or superseded, nor when a delivery was made. The demo tells
its story in a few seconds, though, and then moves each delivery back to its session's
hour in the past week (``demo.sessions``). Left as they were, the memories would
all say "saved 0 minutes ago" beside deliveries from last week that hold them. So, once
an agent's story is told, every moment of its memories (saved, promoted, queued,
decided, superseded: ``MemoryRecord.created_at``, ``SearchDoc.created_at``,
``Promotion.promoted_at``/``decided_at``, ``MemoryEvent.at``) moves too:

- what happened between two deliveries goes just before the later one, a few minutes
  apart, in the order it happened;
- what happened after the last delivery (or, for an agent without deliveries, at all)
  ends about an hour ago, the newest thing in the demo.

Equal moments stay equal (a save, its events and its promotion; a supersede and the
save that made it), distinct ones keep their order, so one agent's saves keep strictly
increasing times (``memory.saving.next_timestamp``) and every decision follows its save.
Deliveries are not touched here.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from lens.models import Agent
from memory.models import MemoryEvent, MemoryRecord, Promotion, SearchDoc

# Between two moments of the story (a save, a decision), when the sessions around them
# leave the room; closer together when they do not.
STEP = timedelta(minutes=3)
# How long ago the newest memory of the demo was saved.
NEWEST_AGE = timedelta(hours=1)


@dataclass(frozen=True)
class Moved:
    """A delivery as ``deliver`` recorded it (``recorded``) and where the demo moved it."""

    recorded: datetime
    to: datetime


def backdate(agent: Agent, deliveries: Sequence[Moved], now: datetime | None = None) -> None:
    """Move every moment of ``agent``'s memories into the past ``deliveries`` tell.

    ``deliveries`` in the order they were recorded, which is the order they were moved
    to. Called once, right after the story is told: the demo never tells it twice.
    """
    records = list(MemoryRecord.objects.filter(agent=agent).only("created_at"))
    docs = list(SearchDoc.objects.filter(agent=agent).only("created_at"))
    promotions = list(Promotion.objects.filter(agent=agent).only("promoted_at", "decided_at"))
    events = list(MemoryEvent.objects.filter(agent=agent).only("at"))
    moments: set[datetime] = {r.created_at for r in records}
    moments.update(d.created_at for d in docs)
    moments.update(p.promoted_at for p in promotions)
    moments.update(p.decided_at for p in promotions if p.decided_at is not None)
    moments.update(e.at for e in events)
    if not moments:
        return
    to = schedule(moments, deliveries, timezone.now() if now is None else now)
    for record in records:
        record.created_at = to[record.created_at]
    for doc in docs:
        doc.created_at = to[doc.created_at]
    for promotion in promotions:
        promotion.promoted_at = to[promotion.promoted_at]
        if promotion.decided_at is not None:
            promotion.decided_at = to[promotion.decided_at]
    for event in events:
        event.at = to[event.at]
    MemoryRecord.objects.bulk_update(records, ["created_at"])
    SearchDoc.objects.bulk_update(docs, ["created_at"])
    Promotion.objects.bulk_update(promotions, ["promoted_at", "decided_at"])
    MemoryEvent.objects.bulk_update(events, ["at"])


def schedule(
    moments: Iterable[datetime], deliveries: Sequence[Moved], now: datetime
) -> dict[datetime, datetime]:
    """Where each of ``moments`` (real times of the story) goes in the demo's past."""
    recorded = [delivery.recorded for delivery in deliveries]
    # between[k]: the moments before delivery k (and after k - 1); the last, after all.
    between: list[list[datetime]] = [[] for _ in range(len(deliveries) + 1)]
    for moment in sorted(set(moments)):
        between[bisect_left(recorded, moment)].append(moment)
    to: dict[datetime, datetime] = {}
    for k, group in enumerate(between):
        if not group:
            continue
        after = deliveries[k - 1].to if k else None
        if k < len(deliveries):
            before = deliveries[k].to
        else:
            before = now - NEWEST_AGE + STEP
            if after is not None:
                # Only if a delivery was moved to the last hour (the demo's are days ago).
                before = max(before, after + STEP * (len(group) + 1))
        step = STEP if after is None else min(STEP, (before - after) / (len(group) + 1))
        for i, moment in enumerate(group):
            to[moment] = before - step * (len(group) - i)
    return to
