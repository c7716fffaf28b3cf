"""The minute sweep stays one chain however many workers start at once (on one machine
or many): each worker's start enqueues a sweep only when none is waiting, and a sweep
that finishes beside a waiting one enqueues no successor."""

from __future__ import annotations

import pytest
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from tests.factories import race
from webhooks import tasks
from webhooks.sweeping import start_sweeping, sweep_and_return

pytestmark = pytest.mark.django_db(transaction=True)


def waiting_sweeps() -> int:
    return DBTaskResult.objects.filter(
        task_path=tasks.sweep.module_path, status=TaskResultStatus.READY
    ).count()


@pytest.mark.parametrize("round_", range(3))
def test_workers_starting_at_once_leave_one_sweep_waiting(round_: int) -> None:
    # Without the lock, four starts at once left two or three sweeps waiting.
    race(4, lambda _i: start_sweeping())
    assert waiting_sweeps() == 1


def test_a_sweep_finishing_beside_a_waiting_one_ends_its_chain() -> None:
    # A worker started while this sweep ran: its sweep waits already.
    running = tasks.sweep.enqueue()
    DBTaskResult.objects.filter(pk=running.id).update(status=TaskResultStatus.RUNNING)
    tasks.sweep.enqueue()
    sweep_and_return()
    assert waiting_sweeps() == 1


def test_a_sweep_enqueues_its_successor() -> None:
    start_sweeping()
    DBTaskResult.objects.filter(task_path=tasks.sweep.module_path).update(
        status=TaskResultStatus.RUNNING
    )
    sweep_and_return()
    [successor] = DBTaskResult.objects.filter(
        task_path=tasks.sweep.module_path, status=TaskResultStatus.READY
    )
    assert successor.run_after > successor.enqueued_at
