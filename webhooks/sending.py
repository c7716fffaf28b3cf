"""Sending dispatches: claim, post, record — the body of the ``drain`` task (an
endpoint's due messages, woken by the changes that queue them) and of the ``send`` task
(a retry at its time).

A dispatch is claimed by one conditional UPDATE (pending, due, and not leased to a
worker still within its lease), so of several workers holding tasks for the same
dispatch exactly one sends it per try. The lease outlasts the send's deadline: a worker
killed mid-send leaves its lease, which runs out, and the message is sent again (the
same ``webhook-id``: delivery is at least once).

The outcome is recorded in one transaction: the try, the dispatch's next state, the
endpoint's health and, when it failed, the task of its next try (SPEC §16's schedule).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from webhooks import tasks
from webhooks.core.schedule import next_try
from webhooks.core.signing import headers
from webhooks.models import Attempt, Dispatch, Endpoint
from webhooks.outbox import wake, waking_of
from webhooks.posting import Outcome, post

# How much longer than a send's deadline its lease lasts.
LEASE_MARGIN = timedelta(seconds=5)


@dataclass(frozen=True)
class Claimed:
    dispatch: Dispatch
    endpoint: Endpoint


_TABLE = Dispatch._meta.db_table
# The claim: one statement that takes the dispatch for one try and answers what sending
# needs (UPDATE … RETURNING: SQLite 3.35+ and PostgreSQL).
_CLAIM = (
    f"UPDATE {_TABLE} SET lease_until = %s, tries = tries + 1 "
    "WHERE id = %s AND state = %s AND next_try_at <= %s "
    "AND (lease_until IS NULL OR lease_until <= %s) "
    "RETURNING endpoint_id, message_id, event_type, body, created_at, tries"
)


# A sending task works on one endpoint for at most this long, taking its due messages
# this many at a time, then hands over to a successor if any remain.
DRAIN_SECONDS = 30.0
DRAIN_BATCH = 50


def drain_endpoint(endpoint_id: int) -> int:
    """Send ``endpoint_id``'s due messages, oldest first; answers how many were tried.

    ``waking`` is cleared first, in its own commit: from then on, a change that queues
    a message for the endpoint wakes another task, and one that committed before is
    seen by the reads below (on PostgreSQL the clearing waits for the change's lock).
    """
    if not Endpoint.objects.filter(pk=endpoint_id).update(waking=False):
        return 0  # deleted, with its messages
    deadline = time.monotonic() + DRAIN_SECONDS
    endpoints: dict[int, Endpoint | None] = {}
    tried = 0
    while True:
        now = timezone.now()
        due = list(
            Dispatch.objects.filter(
                endpoint_id=endpoint_id, state=Dispatch.State.PENDING, next_try_at__lte=now
            )
            .filter(Q(lease_until__isnull=True) | Q(lease_until__lte=now))
            .order_by("id")
            .values_list("pk", flat=True)[:DRAIN_BATCH]
        )
        if not due:
            return tried
        tried += send_due(due, endpoints)
        if time.monotonic() >= deadline:
            with transaction.atomic():
                if not waking_of([endpoint_id]).get(endpoint_id, True):
                    wake([endpoint_id])
            return tried


def send_due(dispatch_ids: list[int], endpoints: dict[int, Endpoint | None] | None = None) -> int:
    """Send every due, unclaimed dispatch among ``dispatch_ids``; answers how many."""
    sent = 0
    endpoints = {} if endpoints is None else endpoints  # each read once per task
    for pk in dispatch_ids:
        claimed = claim(pk, timezone.now(), endpoints)
        if claimed is None:
            continue
        outcome = attempt(claimed)
        record(claimed, outcome, timezone.now(), random.uniform(-1, 1))  # noqa: S311
        sent += 1
    return sent


def lease() -> timedelta:
    return timedelta(seconds=settings.WEBHOOKS_TIMEOUT) + LEASE_MARGIN


def claim(pk: int, now: datetime, endpoints: dict[int, Endpoint | None]) -> Claimed | None:
    """Take dispatch ``pk`` for one try, or None when it is not due, done, or another
    worker holds it."""
    stamp = connection.ops.adapt_datetimefield_value(now)
    until = connection.ops.adapt_datetimefield_value(now + lease())
    with connection.cursor() as cursor:
        cursor.execute(_CLAIM, [until, pk, Dispatch.State.PENDING, stamp, stamp])
        row = cursor.fetchone()
    if row is None:
        return None
    endpoint_id, message_id, event_type, body, created_at, tries = row
    if endpoint_id not in endpoints:
        endpoints[endpoint_id] = Endpoint.objects.filter(pk=endpoint_id).first()
    endpoint = endpoints[endpoint_id]
    if endpoint is None:  # deleted while the message waited: its rows go with it
        return None
    dispatch = Dispatch(
        pk=pk,
        endpoint=endpoint,
        message_id=message_id,
        event_type=event_type,
        body=body,
        created_at=_datetime(created_at),
        tries=tries,
    )
    return Claimed(dispatch, endpoint)


def _datetime(value: datetime | str) -> datetime:
    """A timestamp as the driver answers it from raw SQL (SQLite answers text)."""
    if isinstance(value, datetime):
        return value if timezone.is_aware(value) else timezone.make_aware(value, UTC)
    return datetime.fromisoformat(value).replace(tzinfo=UTC)


def secrets_of(endpoint: Endpoint, now: datetime) -> list[str]:
    """The secrets a message is signed with now: the current one, and the one before a
    rotation while its grace period lasts."""
    keys = [endpoint.secret]
    if endpoint.previous_secret and endpoint.previous_until and endpoint.previous_until > now:
        keys.append(endpoint.previous_secret)
    return keys


def attempt(claimed: Claimed) -> Outcome:
    dispatch, endpoint = claimed.dispatch, claimed.endpoint
    now = timezone.now()
    signed = headers(dispatch.message_id, now, dispatch.body, secrets_of(endpoint, now))
    return post(
        endpoint.url,
        signed,
        dispatch.body.encode(),
        timeout=float(settings.WEBHOOKS_TIMEOUT),
        allow_http=settings.WEBHOOKS_ALLOW_HTTP,
        allow_private=settings.WEBHOOKS_ALLOW_PRIVATE,
    )


def record(claimed: Claimed, outcome: Outcome, now: datetime, spread: float) -> None:
    dispatch, endpoint = claimed.dispatch, claimed.endpoint
    this = Dispatch.objects.filter(pk=dispatch.pk)
    endpoints = Endpoint.objects.filter(pk=endpoint.pk)
    with transaction.atomic():
        Attempt.objects.create(
            dispatch_id=dispatch.pk,
            endpoint=endpoint,
            at=now - timedelta(milliseconds=outcome.duration_ms),
            status_code=outcome.status,
            duration_ms=outcome.duration_ms,
            error=outcome.error,
            ok=outcome.ok,
        )
        if outcome.ok:
            this.update(state=Dispatch.State.SUCCEEDED, lease_until=None, finished_at=now)
            # The endpoint's health is written when it changes, and its last success at
            # most once a minute: a busy endpoint is not rewritten for every message.
            stale = now - timedelta(minutes=1)
            endpoints.filter(
                Q(failures_in_a_row__gt=0)
                | Q(failing_since__isnull=False)
                | Q(last_success_at__isnull=True)
                | Q(last_success_at__lt=stale)
            ).update(failing_since=None, failures_in_a_row=0, last_success_at=now)
            return
        endpoints.update(failures_in_a_row=F("failures_in_a_row") + 1)
        when = next_try(dispatch.created_at, now, dispatch.tries, spread)
        if when is None:
            this.update(state=Dispatch.State.FAILED, lease_until=None, finished_at=now)
            endpoints.filter(failing_since__isnull=True).update(failing_since=now)
            return
        this.update(next_try_at=when, lease_until=None)
        tasks.send.using(run_after=when).enqueue([dispatch.pk])
