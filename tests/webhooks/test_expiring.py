"""``prompt.changed`` when a memory's validity window closes (SPEC §19.2): the sweep, which
runs every minute while a worker runs, wakes a check of each agent with a memory whose
window closed since its last check; once checked, the expiry wakes nothing again."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from lens.actors import SYSTEM
from lens.models import Agent, Team
from memory.core.records import MemoryInput
from memory.models import MemoryRecord
from memory.saving import Saved, save_memory
from tests.factories import composed
from tests.webhooks.hooks import hook, run_due, time_passes, verified, work
from tests.webhooks.receiver import receiving
from webhooks import tasks
from webhooks.expiring import wake_expired
from webhooks.watching import prompt_sha256

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _loopback(settings: Any) -> None:
    settings.WEBHOOKS_ALLOW_HTTP = True
    settings.WEBHOOKS_ALLOW_PRIVATE = True


def saved_until(agent: Agent, content: str, days: float) -> str:
    moment = (timezone.now() + timedelta(days=days)).isoformat()
    result = save_memory(
        agent, MemoryInput(kind="profile", content=content, valid_until=moment), SYSTEM
    )
    assert isinstance(result, Saved)
    return result.id


def checks_queued() -> int:
    return DBTaskResult.objects.filter(task_path="webhooks.tasks.check_prompt").count()


def test_an_expiry_tells_prompt_changed_with_its_cause(team: Team, wren: Agent) -> None:
    record = saved_until(wren, "Staying in Lisbon.", days=1)
    with receiving() as receiver:
        made = hook(team, receiver.url, "prompt.changed")
        before = prompt_sha256(composed(wren).prompt.text)
        # The clock reaches the window's end.
        MemoryRecord.objects.filter(pk=record).update(valid_until=timezone.now())
        work()
    [got] = receiver.received
    data = verified(made.secret, got)["data"]
    assert data["agent"] == "wren"
    assert data["from_sha256"] == before
    assert data["to_sha256"] == prompt_sha256(composed(wren).prompt.text) != before
    assert [(c["type"], c["memory_id"]) for c in data["causes"] if "type" in c] == [
        ("memory.expired", record)
    ]
    assert b"Lisbon" not in got.body


def test_a_checked_expiry_wakes_nothing_again(team: Team, wren: Agent) -> None:
    record = saved_until(wren, "Staying in Lisbon.", days=1)
    with receiving() as receiver:
        hook(team, receiver.url, "prompt.changed")
        MemoryRecord.objects.filter(pk=record).update(valid_until=timezone.now())
        work()
        DBTaskResult.objects.filter(task_path="webhooks.tasks.check_prompt").delete()
        assert wake_expired(timezone.now()) == 0
        assert checks_queued() == 0
    assert len(receiver.received) == 1


def test_no_check_is_woken_without_an_endpoint_that_wants_prompt_changed(
    team: Team, wren: Agent
) -> None:
    record = saved_until(wren, "Staying in Lisbon.", days=1)
    hook(team, "http://127.0.0.1:9/", "kv.written")
    MemoryRecord.objects.filter(pk=record).update(valid_until=timezone.now())
    assert wake_expired(timezone.now()) == 0
    assert checks_queued() == 0


def test_finding_expiries_is_one_query(
    team: Team, wren: Agent, django_assert_max_num_queries: Any
) -> None:
    for n in range(5):
        saved_until(wren, f"Trip {n}.", days=1)
    with django_assert_max_num_queries(1):
        assert wake_expired(timezone.now()) == 0


def waiting_sweep() -> DBTaskResult[[], int]:
    [sweep] = DBTaskResult.objects.filter(
        task_path=tasks.sweep.module_path, status=TaskResultStatus.READY
    )
    return sweep


def test_an_expiry_while_the_worker_runs_is_told_by_the_next_sweep_within_a_minute(
    team: Team, wren: Agent
) -> None:
    """Within a minute (SPEC §19.2): the worker is already running when the window
    closes, so no start of it sees the expiry; the periodic sweep, due at most a minute
    after the last, tells it, and then waits a minute for its own successor."""
    record = saved_until(wren, "Staying in Lisbon.", days=1)
    with receiving() as receiver:
        made = hook(team, receiver.url, "prompt.changed")
        work()  # the worker starts: its first sweep ran and the next one waits
        assert receiver.received == []
        first = waiting_sweep()
        assert first.run_after is not None
        assert first.run_after - first.enqueued_at <= timedelta(minutes=1)
        # The clock reaches the window's end while the worker runs.
        MemoryRecord.objects.filter(pk=record).update(valid_until=timezone.now())
        assert run_due() == 0  # nothing is due before the sweep's minute is up
        assert receiver.received == []
        time_passes(60)
        assert run_due() >= 2  # the sweep, then the check it woke (and the send)
        [got] = receiver.received
        data = verified(made.secret, got)["data"]
        assert [(c["type"], c["memory_id"]) for c in data["causes"] if "type" in c] == [
            ("memory.expired", record)
        ]
        # The sweep's successor waits, again at most a minute after it.
        second = waiting_sweep()
        assert second.pk != first.pk
        assert second.run_after is not None
        assert timedelta(0) < second.run_after - second.enqueued_at <= timedelta(minutes=1)
