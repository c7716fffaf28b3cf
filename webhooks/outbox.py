"""Queueing messages for a team's endpoints, in the transaction of the change they tell
of (SPEC §16): an outbox row per message and endpoint, and one task for the engine to
send them after the commit. A change that rolls back takes its rows and task with it; a
crash after the commit loses nothing, since the rows wait in the database.

Called by the audit log for every append (``lens.audit.listen``), with the team's
endpoints read in the append's own last statement on PostgreSQL (``ENDPOINTS``): a team
without endpoints costs no round trip of its own there, and one indexed read on SQLite.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from django.db import connection, transaction
from django.utils import timezone

from lens.audit import canonical
from lens.models import Agent
from lens.sql import statement_cursor
from webhooks import tasks
from webhooks.core.topics import (
    APPROVAL_PENDING,
    PROMPT_CHANGED,
    recomposed_agents,
    starts_waiting,
    wants,
)
from webhooks.models import Dispatch, Endpoint, PromptMark


def new_message_id() -> str:
    return "msg_" + secrets.token_urlsafe(18)


def message_body(event_type: str, timestamp: str, data: Mapping[str, Any]) -> str:
    """``{"type", "timestamp", "data"}`` as sent, in canonical JSON: the bytes each try
    signs are the bytes stored."""
    return canonical({"type": event_type, "timestamp": timestamp, "data": data})


def queue_events(team_id: int, events: list[dict[str, Any]], found: list[tuple[Any, ...]]) -> None:
    """Queue ``events`` (just appended to ``team_id``'s log) for the endpoints that
    want them, and a prompt check for each agent they may have recomposed. ``found``:
    the team's endpoints as ``ENDPOINTS`` reads them, in the appending transaction."""
    endpoints = endpoint_rows(found)
    if not endpoints:
        return
    now = timezone.now()
    listed = [(pk, subscribed) for pk, subscribed, _waking in endpoints]
    rows: list[Outgoing] = []
    for event in events:
        rows += dispatches(team_id, listed, event["action"], event["at"], event, now)
        if starts_waiting(event):
            rows += dispatches(team_id, listed, APPROVAL_PENDING, event["at"], event, now)
    _store(rows, {pk: waking for pk, _subscribed, waking in endpoints})
    if any(wants(subscribed, PROMPT_CHANGED) for _pk, subscribed in listed):
        wake_checks(team_id, recomposed_agents(events))


_TABLE = Endpoint._meta.db_table
_COLUMNS = ("team_id", "endpoint_id", "message_id", "event_type", "body", "created_at")
_ROWS_PER_INSERT = 500


def endpoints_sql() -> str:
    """The team's endpoints (its id the one parameter): id, the event types each wants,
    and whether a task to send its messages is waiting. Plain SQL, riding on the audit
    append: it runs with every change of every team.

    On PostgreSQL the rows are locked (FOR UPDATE) until the change commits, so a task
    that starts sending in the meantime (``webhooks.sending.drain_endpoint``, which first
    clears ``waking``) waits for the commit and then sees its messages. SQLite has one
    writer at a time, which orders them alike.
    """
    lock = " ORDER BY id FOR UPDATE" if connection.vendor == "postgresql" else ""
    return f"SELECT id, events, waking FROM {_TABLE} WHERE team_id = %s{lock}"


def endpoints_of(team_id: int) -> list[tuple[int, list[str], bool]]:
    """``endpoints_sql``'s rows, read alone."""
    with statement_cursor() as cursor:
        cursor.execute(endpoints_sql(), [team_id])
        found = cursor.fetchall()
    return endpoint_rows(found)


def endpoint_rows(found: Sequence[Sequence[Any]]) -> list[tuple[int, list[str], bool]]:
    """The endpoints as ``endpoints_sql`` reads them, decoded."""
    # PostgreSQL's driver reads jsonb as lists; SQLite answers the JSON text.
    return [
        (pk, events if isinstance(events, list) else json.loads(events), bool(waking))
        for pk, events, waking in found
    ]


class Outgoing(NamedTuple):
    """A dispatch to store: plain values, since it rides on every change (a model
    instance costs more to build than its row costs to insert)."""

    team_id: int
    endpoint_id: int
    message_id: str
    event_type: str
    body: str
    created_at: datetime


def dispatches(
    team_id: int,
    endpoints: Sequence[tuple[int, list[str]]],
    event_type: str,
    timestamp: str,
    data: Mapping[str, Any],
    now: datetime,
) -> list[Outgoing]:
    """One message of ``event_type``: a dispatch of it per endpoint that wants it."""
    wanting = [pk for pk, subscribed in endpoints if wants(subscribed, event_type)]
    if not wanting:
        return []
    message_id, body = new_message_id(), message_body(event_type, timestamp, data)
    return [Outgoing(team_id, pk, message_id, event_type, body, now) for pk in wanting]


def queue_message(
    team_id: int, event_type: str, timestamp: str, data: Mapping[str, Any], now: datetime
) -> None:
    """Queue one message of ``event_type`` for the team's endpoints that want it, in the
    caller's transaction."""
    endpoints = endpoints_of(team_id)
    listed = [(pk, subscribed) for pk, subscribed, _waking in endpoints]
    rows = dispatches(team_id, listed, event_type, timestamp, data, now)
    _store(rows, {pk: waking for pk, _subscribed, waking in endpoints})


def queue(rows: list[Outgoing]) -> None:
    """Store ``rows`` and make sure a task will send them, in the caller's transaction
    (for callers that did not read the endpoints already)."""
    if not rows:
        return
    _store(rows, waking_of(sorted({row.endpoint_id for row in rows})))


def waking_of(endpoint_ids: list[int]) -> dict[int, bool]:
    """Each endpoint's ``waking`` flag, locked as ``endpoints_of`` locks it."""
    lock = " FOR UPDATE" if connection.vendor == "postgresql" else ""
    marks = ", ".join(["%s"] * len(endpoint_ids))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, waking FROM {_TABLE} WHERE id IN ({marks}) ORDER BY id{lock}",
            endpoint_ids,
        )
        return {pk: bool(flag) for pk, flag in cursor.fetchall()}


def _store(rows: list[Outgoing], waking: dict[int, bool]) -> None:
    """Store ``rows`` and wake the endpoints they are for: one sending task per
    endpoint, enqueued by the first change that finds none waiting, however many
    changes queue messages before it starts. ``waking``: each endpoint's flag as read,
    under the lock ``endpoints_of`` describes."""
    if not rows:
        return
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("messages are queued in the transaction of their change")
    _insert(rows)
    wake(sorted({row.endpoint_id for row in rows if not waking.get(row.endpoint_id, True)}))


def wake(endpoint_ids: list[int]) -> None:
    """Mark ``endpoint_ids`` waking and enqueue a sending task for each (the caller
    read them not waking, under the lock)."""
    if not endpoint_ids:
        return
    marks = ", ".join(["%s"] * len(endpoint_ids))
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {_TABLE} SET waking = %s WHERE id IN ({marks})", [True, *endpoint_ids]
        )
    for pk in endpoint_ids:
        tasks.drain.enqueue(pk)


_MARKS = PromptMark._meta.db_table
_AGENTS = Agent._meta.db_table


def wake_checks(team_id: int, slugs: list[str]) -> None:
    """Make sure a ``prompt.changed`` check of each agent named will run: one statement
    marks each agent's check waiting (making its mark when it has none) and answers the
    agents that had none waiting, whose checks are enqueued. On PostgreSQL the upsert
    locks the marks until the change commits, as ``endpoints_of`` locks endpoints."""
    if not slugs:
        return
    marks = ", ".join(["%s"] * len(slugs))
    with connection.cursor() as cursor:
        now = connection.ops.adapt_datetimefield_value(timezone.now())
        cursor.execute(
            f"INSERT INTO {_MARKS} (agent_id, prompt_sha256, revision, at, waking, woken_at) "
            f"SELECT id, '', 0, NULL, %s, %s FROM {_AGENTS} "
            f"WHERE team_id = %s AND slug IN ({marks}) "
            f"ON CONFLICT (agent_id) DO UPDATE SET waking = %s, woken_at = %s "
            f"WHERE {_MARKS}.waking = %s RETURNING agent_id",
            [True, now, team_id, *slugs, True, now, False],
        )
        woken = {pk for (pk,) in cursor.fetchall()}
    if woken:
        found = Agent.objects.filter(pk__in=woken).values_list("slug", flat=True)
        for slug in sorted(found):
            tasks.check_prompt.enqueue(team_id, slug)


def _insert(rows: list[Outgoing]) -> None:
    """Store ``rows``: plain SQL, a multi-row INSERT, chunked."""
    ops = connection.ops
    table, columns = (
        Dispatch._meta.db_table,
        ", ".join((*_COLUMNS, "state", "tries", "next_try_at")),
    )
    with connection.cursor() as cursor:
        for start in range(0, len(rows), _ROWS_PER_INSERT):
            chunk = rows[start : start + _ROWS_PER_INSERT]
            params: list[Any] = []
            for row in chunk:
                stamp = ops.adapt_datetimefield_value(row.created_at)
                params += [row.team_id, row.endpoint_id, row.message_id, row.event_type]
                params += [row.body, stamp, Dispatch.State.PENDING, 0, stamp]
            values = ", ".join(["(%s, %s, %s, %s, %s, %s, %s, %s, %s)"] * len(chunk))
            cursor.execute(f"INSERT INTO {table} ({columns}) VALUES {values}", params)
