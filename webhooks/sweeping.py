"""What no task will send, queued again; and what is done, cleared away.

A dispatch's task can be lost to a worker killed mid-send (the engine leaves that task
running for ever, and the dispatch keeps a lease that lapses) or, in principle, to a task
row removed by hand. The sweep gives new tasks to pending dispatches whose lease lapsed,
and to those due more than a minute ago that no worker took; a worker starting sweeps at
once, with no minute's grace. Sending twice is harmless: of two tasks for one dispatch, one claims each try.

It also wakes the ``prompt.changed`` checks of agents whose memories' validity windows
closed since their last check (``webhooks.expiring``): an expiry is told within a minute.

The sweep is itself a task that enqueues its successor a minute on, so it runs while
any worker runs, with no loop of our own. Each run does bounded work. There is one
sweep waiting at a time, however many workers start at once on however many machines:
a starting worker and a finishing sweep each enqueue one only when none is waiting,
deciding under one lock (``_enqueue_sweep``).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from webhooks import tasks
from webhooks.expiring import wake_expired
from webhooks.models import Attempt, Dispatch, PromptMark
from webhooks.outbox import wake

EVERY = timedelta(minutes=1)
GRACE = timedelta(minutes=1)
# At most this many dispatches are queued again, and rows cleared, per sweep.
BATCH = 2000
# Finished task rows and dispatches are kept this long (the attempts page shows the
# recent ones; the audit log keeps the events themselves).
KEEP_TASKS = timedelta(days=1)
KEEP_DISPATCHES = timedelta(days=30)
_TASK_PATHS = [
    tasks.send.module_path,
    tasks.drain.module_path,
    tasks.check_prompt.module_path,
    tasks.sweep.module_path,
]
# A prompt check woken this long ago that has not started is enqueued again.
RECHECK_AFTER = timedelta(minutes=5)
# The advisory lock that decides whether a sweep is waiting (PostgreSQL): "SWEP".
_SWEEP_LOCK = 0x53574550 << 32


def requeue(now: datetime, grace: timedelta) -> int:
    """Wake again every endpoint with a message whose sender stopped mid-send, or due
    before ``now - grace`` that no worker took (its endpoint's task died before it
    could hand over, or a sweep's or retry's task row was lost); answers how many such
    messages there were (counted up to ``BATCH``)."""
    stranded = list(
        Dispatch.objects.filter(state=Dispatch.State.PENDING)
        .filter(
            # A lapsed lease: its worker stopped mid-send (a finished try clears it).
            Q(lease_until__lte=now)
            # Never taken, long after its time.
            | Q(lease_until__isnull=True, next_try_at__lte=now - grace)
        )
        .values_list("endpoint_id", flat=True)[:BATCH]
    )
    with transaction.atomic():
        wake(sorted(set(stranded)))
    _recheck(now)
    return len(stranded)


def _recheck(now: datetime) -> None:
    """Enqueue again the prompt checks that were woken long ago and never started."""
    late = PromptMark.objects.filter(waking=True, woken_at__lt=now - RECHECK_AFTER)
    for team_id, slug, pk in late.values_list("agent__team_id", "agent__slug", "pk")[:BATCH]:
        PromptMark.objects.filter(pk=pk).update(woken_at=now)
        tasks.check_prompt.enqueue(team_id, slug)


def clear(now: datetime) -> None:
    """Remove finished task rows after a day, and finished dispatches (with their
    attempts) after thirty days: bounded deletes, so the tables stay small."""
    done = DBTaskResult.objects.filter(task_path__in=_TASK_PATHS).filter(
        Q(finished_at__lt=now - KEEP_TASKS)
        # A task its worker was killed in never finishes: its dispatch was queued again.
        | Q(status=TaskResultStatus.RUNNING, started_at__lt=now - KEEP_TASKS)
    )
    DBTaskResult.objects.filter(pk__in=list(done.values_list("pk", flat=True)[:BATCH])).delete()
    old = Dispatch.objects.exclude(state=Dispatch.State.PENDING).filter(
        finished_at__lt=now - KEEP_DISPATCHES
    )
    ids = list(old.values_list("pk", flat=True)[:BATCH])
    Attempt.objects.filter(dispatch_id__in=ids).delete()
    Dispatch.objects.filter(pk__in=ids).delete()


def sweep_and_return() -> int:
    now = timezone.now()
    queued = requeue(now, GRACE)
    wake_expired(now)
    clear(now)
    _enqueue_sweep(run_after=now + EVERY)
    return queued


def start_sweeping() -> int:
    """At a worker's start: queue again what a stopped worker left half-sent, at once,
    and start the sweep unless one is already waiting."""
    now = timezone.now()
    queued = requeue(now, GRACE)
    wake_expired(now)
    _enqueue_sweep(run_after=None)
    return queued


def _enqueue_sweep(run_after: datetime | None) -> None:
    """Enqueue a sweep (at ``run_after``, or now) unless one is waiting already.

    Workers that start together, or start while a sweep runs, would each see none
    waiting and each enqueue one: chains that then go on side by side for ever (four
    workers started at once left two or three). So the look and the enqueue are one
    transaction that holds a lock: an advisory lock on PostgreSQL, the database's write
    lock on SQLite (taken at BEGIN, ``transaction_mode`` IMMEDIATE). A sweep finishing
    after a worker started one enqueues none, so any extra chain ends at its next run.
    """
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_SWEEP_LOCK])
        waiting = DBTaskResult.objects.filter(
            task_path=tasks.sweep.module_path, status=TaskResultStatus.READY
        )
        if not waiting.exists():
            (tasks.sweep if run_after is None else tasks.sweep.using(run_after=run_after)).enqueue()
