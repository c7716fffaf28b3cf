"""Sending dispatches: claim, post, record — the body of the ``drain`` task (an
endpoint's due messages, woken by the changes that queue them) and of the ``send`` task
(a retry at its time).

A try takes two leases in one transaction: its endpoint's (no other send to the endpoint
is in flight, and the endpoint is not paused by the circuit breaker) and its dispatch's
(pending, due, and not leased to a worker still within its lease). So of several workers
and threads holding tasks for the same endpoint, one sends at a time: an endpoint has one
request in flight, its messages leave oldest first, and one that hangs holds one worker
thread, never more. Each lease outlasts the send's deadline: a worker killed mid-send
leaves them, they run out, and the message is sent again (the same ``webhook-id``:
delivery is at least once).

The outcome is recorded in one transaction: the try, the dispatch's next state, the
endpoint's health (and pause, ``webhooks.core.breaker``), its lease given back and, when
it failed, the task of its next try (SPEC §16's schedule). A task that found the endpoint
busy leaves its messages to the sender that held it, which looks for more after giving
the lease back (``hand_over``).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Case, F, Q, When
from django.utils import timezone

from webhooks import tasks
from webhooks.core.breaker import pause
from webhooks.core.schedule import GIVE_UP_AFTER, next_try
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
    until: datetime  # the endpoint's lease, given back when the try is recorded


class Held:
    """The endpoint is not free for a try: another send to it is in flight, or the
    circuit breaker paused it."""


HELD = Held()

_TABLE = Dispatch._meta.db_table
_ENDPOINTS = Endpoint._meta.db_table
# The endpoint's lease: taken when no try of it is in flight (or the one in flight was
# left by a stopped worker, its lease run out) and the breaker does not pause it.
_TAKE = (
    f"UPDATE {_ENDPOINTS} SET sending_until = %s "
    "WHERE id = %s AND (sending_until IS NULL OR sending_until <= %s) "
    "AND (paused_until IS NULL OR paused_until <= %s)"
)
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

    The task ends early when the endpoint is busy (the sender holding it looks for more
    once its try is recorded) or paused by the breaker (a task is enqueued for the
    pause's end), so a receiver that hangs keeps no task waiting on it.
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
        for pk in due:
            claimed = claim(pk, endpoint_id, timezone.now(), endpoints)
            if claimed is HELD:
                _await_probe(endpoint_id)
                return tried
            if isinstance(claimed, Claimed):
                send(claimed)
                tried += 1
            # The deadline is looked at after every try: a task's time is bounded by
            # it and one try's deadline, however many messages wait.
            if time.monotonic() >= deadline:
                with transaction.atomic():
                    if not waking_of([endpoint_id]).get(endpoint_id, True):
                        wake([endpoint_id])
                return tried


def _await_probe(endpoint_id: int) -> None:
    """When the endpoint is paused: mark it waking again, since the task that probes it
    at the pause's end is waiting (``_pause`` enqueued it), so the changes meanwhile
    enqueue no task each only to find it paused. (A lost probe task is made up for by
    the sweep, which wakes an endpoint whose messages wait past their time.)"""
    Endpoint.objects.filter(pk=endpoint_id, paused_until__gt=timezone.now()).update(waking=True)


def send_due(dispatch_ids: list[int], endpoints: dict[int, Endpoint | None] | None = None) -> int:
    """Send every due, unclaimed dispatch among ``dispatch_ids`` whose endpoint is free;
    answers how many. A dispatch whose endpoint is busy or paused is left to the sender
    holding it, or to the task at the pause's end."""
    sent = 0
    endpoints = {} if endpoints is None else endpoints  # each read once per task
    owners = dict(Dispatch.objects.filter(pk__in=dispatch_ids).values_list("pk", "endpoint_id"))
    held: set[int] = set()
    tried: set[int] = set()
    for pk in dispatch_ids:
        endpoint_id = owners.get(pk)
        if endpoint_id is None or endpoint_id in held:
            continue
        claimed = claim(pk, endpoint_id, timezone.now(), endpoints)
        if claimed is HELD:
            held.add(endpoint_id)
            continue
        if isinstance(claimed, Claimed):
            send(claimed)
            tried.add(endpoint_id)
            sent += 1
    for endpoint_id in sorted(tried):
        hand_over(endpoint_id)
    return sent


def send(claimed: Claimed) -> None:
    """One try of a claimed dispatch, and its outcome recorded."""
    outcome = attempt(claimed)
    record(claimed, outcome, timezone.now(), random.uniform(-1, 1))  # noqa: S311


def hand_over(endpoint_id: int) -> None:
    """After this task's last try of ``endpoint_id``: wake it if messages are due that
    no task will send. A sending task that found the endpoint busy while this one held
    it ended without them; it ran after their change committed, so this read, made after
    the lease was given back, sees them."""
    now = timezone.now()
    waiting = Dispatch.objects.filter(
        endpoint_id=endpoint_id, state=Dispatch.State.PENDING, next_try_at__lte=now
    ).filter(Q(lease_until__isnull=True) | Q(lease_until__lte=now))
    if not waiting.exists():
        return
    with transaction.atomic():
        if not waking_of([endpoint_id]).get(endpoint_id, True):
            wake([endpoint_id])


def lease() -> timedelta:
    return timedelta(seconds=settings.WEBHOOKS_TIMEOUT) + LEASE_MARGIN


def claim(
    pk: int, endpoint_id: int, now: datetime, endpoints: dict[int, Endpoint | None]
) -> Claimed | Held | None:
    """Take dispatch ``pk`` of ``endpoint_id`` for one try, with its endpoint's lease;
    ``HELD`` when the endpoint is busy or paused, None when the dispatch is not due,
    done, or another worker holds it."""
    stamp = connection.ops.adapt_datetimefield_value(now)
    until = now + lease()
    adapted = connection.ops.adapt_datetimefield_value(until)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(_TAKE, [adapted, endpoint_id, stamp, stamp])
        if cursor.rowcount == 0:
            # Deleted, busy or paused; a deleted endpoint's messages went with it.
            return HELD
        cursor.execute(_CLAIM, [adapted, pk, Dispatch.State.PENDING, stamp, stamp])
        row = cursor.fetchone()
        if row is None:
            transaction.set_rollback(True)  # the endpoint's lease too
            return None
    _endpoint_id, message_id, event_type, body, created_at, tries = row
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
    return Claimed(dispatch, endpoint, until)


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
    # The endpoint's lease given back, unless it ran out and another sender holds it now.
    released = Case(When(sending_until=claimed.until, then=None), default=F("sending_until"))
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
            # One write of the endpoint's row per try (its lease), which also brings its
            # health up to date: a success ends a pause and any failing.
            endpoints.update(
                sending_until=released,
                failing_since=None,
                failures_in_a_row=0,
                paused_until=None,
                last_success_at=now,
            )
            return
        endpoints.update(failures_in_a_row=F("failures_in_a_row") + 1, sending_until=released)
        _pause(endpoint.pk, now, spread)
        when = next_try(dispatch.created_at, now, dispatch.tries, spread)
        if when is None:
            this.update(state=Dispatch.State.FAILED, lease_until=None, finished_at=now)
            endpoints.filter(failing_since__isnull=True).update(failing_since=now)
            return
        this.update(next_try_at=when, lease_until=None)
        tasks.send.using(run_after=when).enqueue([dispatch.pk])


def _pause(endpoint_id: int, now: datetime, spread: float) -> None:
    """After a failed try: pause the endpoint when it has failed often enough in a row
    (the breaker opens; its ``failing`` shows from then), and enqueue the task that
    probes it when the pause ends. Tasks that find it paused meanwhile end at once."""
    endpoints = Endpoint.objects.filter(pk=endpoint_id)
    failures = endpoints.values_list("failures_in_a_row", flat=True).first()
    if failures is None:
        return
    seconds = pause(
        failures,
        settings.WEBHOOKS_BREAKER_FAILURES,
        float(settings.WEBHOOKS_BREAKER_PAUSE),
        spread,
    )
    if seconds is None:
        return
    until = now + timedelta(seconds=seconds)
    endpoints.update(paused_until=until)
    endpoints.filter(failing_since__isnull=True).update(failing_since=now)
    tasks.drain.using(run_after=until).enqueue(endpoint_id)
    _give_up_expired(endpoint_id, now)


# Messages given up together per failed probe, at most.
EXPIRE_BATCH = 2000


def _give_up_expired(endpoint_id: int, now: datetime) -> None:
    """Give up the paused endpoint's messages that have waited past the schedule's three
    days. While paused, only the probe is tried, so a message that waits is never tried
    into giving itself up: without this, an endpoint down for weeks would keep every
    message and give up one per probe."""
    expired = (
        Dispatch.objects.filter(
            endpoint_id=endpoint_id,
            state=Dispatch.State.PENDING,
            created_at__lt=now - GIVE_UP_AFTER,
        )
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lte=now))
        .order_by("id")
        .values_list("pk", flat=True)[:EXPIRE_BATCH]
    )
    Dispatch.objects.filter(pk__in=list(expired)).update(
        state=Dispatch.State.FAILED, lease_until=None, finished_at=now
    )
