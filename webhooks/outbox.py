"""Queueing messages for a team's endpoints, in the transaction of the change they tell
of (SPEC §16): an outbox row per message and endpoint, and one task for the engine to
send them after the commit. A change that rolls back takes its rows and task with it; a
crash after the commit loses nothing, since the rows wait in the database.

Called by the audit log for every append (``lens.audit.listen``); a team without
endpoints costs one indexed read.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from lens.audit import canonical
from webhooks import tasks
from webhooks.core.topics import (
    APPROVAL_PENDING,
    PROMPT_CHANGED,
    recomposed_agents,
    starts_waiting,
    wants,
)
from webhooks.models import Dispatch, Endpoint

# Dispatches one task sends: a bulk decision of thousands of memories becomes a few
# tasks, each of bounded work.
PER_TASK = 200


def new_message_id() -> str:
    return "msg_" + secrets.token_urlsafe(18)


def message_body(event_type: str, timestamp: str, data: Mapping[str, Any]) -> str:
    """``{"type", "timestamp", "data"}`` as sent, in canonical JSON: the bytes each try
    signs are the bytes stored."""
    return canonical({"type": event_type, "timestamp": timestamp, "data": data})


def queue_events(team_id: int, events: list[dict[str, Any]]) -> None:
    """Queue ``events`` (just appended to ``team_id``'s log) for the endpoints that
    want them, and a prompt check for each agent they may have recomposed."""
    endpoints = endpoints_of(team_id)
    if not endpoints:
        return
    now = timezone.now()
    rows: list[Dispatch] = []
    for event in events:
        rows += dispatches(team_id, endpoints, event["action"], event["at"], event, now)
        if starts_waiting(event):
            rows += dispatches(team_id, endpoints, APPROVAL_PENDING, event["at"], event, now)
    queue(rows)
    if any(wants(subscribed, PROMPT_CHANGED) for _pk, subscribed in endpoints):
        for slug in recomposed_agents(events):
            tasks.check_prompt.enqueue(team_id, slug)


def endpoints_of(team_id: int) -> list[tuple[int, list[str]]]:
    """The team's endpoints: id and the event types each wants."""
    return list(Endpoint.objects.filter(team_id=team_id).values_list("pk", "events"))


def dispatches(
    team_id: int,
    endpoints: Sequence[tuple[int, list[str]]],
    event_type: str,
    timestamp: str,
    data: Mapping[str, Any],
    now: datetime,
) -> list[Dispatch]:
    """One message of ``event_type``: a dispatch of it per endpoint that wants it."""
    wanting = [pk for pk, subscribed in endpoints if wants(subscribed, event_type)]
    if not wanting:
        return []
    message_id, body = new_message_id(), message_body(event_type, timestamp, data)
    return [
        Dispatch(
            team_id=team_id,
            endpoint_id=pk,
            message_id=message_id,
            event_type=event_type,
            body=body,
            created_at=now,
            next_try_at=now,
        )
        for pk in wanting
    ]


def queue(rows: list[Dispatch]) -> None:
    """Store ``rows`` and enqueue the tasks that send them, in the caller's transaction."""
    if not rows:
        return
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("messages are queued in the transaction of their change")
    Dispatch.objects.bulk_create(rows)
    ids = [row.pk for row in rows]
    for start in range(0, len(ids), PER_TASK):
        tasks.send.enqueue(ids[start : start + PER_TASK])
