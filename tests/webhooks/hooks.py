"""What the webhook tests share: an endpoint made the way a person makes one, the
worker run to the end of what is due, and the messages a receiver got, verified."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone
from django_tasks import TaskResultStatus
from django_tasks_db.management.commands.db_worker import Worker
from django_tasks_db.models import DBTaskResult
from standardwebhooks.webhooks import Webhook

from lens.actors import SYSTEM
from lens.models import Team
from tests.webhooks.receiver import Received
from webhooks.endpoints import Created, create_endpoint
from webhooks.models import Dispatch, Endpoint
from webhooks.sweeping import start_sweeping


def hook(team: Team, url: str, *events: str) -> Created:
    return create_endpoint(team, SYSTEM, url, list(events) or ["*"])


def engine_worker() -> Worker:
    """The task engine's worker as ``manage.py worker --batch`` builds it, to claim and
    run tasks in this process."""
    return Worker(
        queue_names=["default"],
        interval=0,
        batch=True,
        backend_name="default",
        startup_delay=False,
        max_tasks=None,
        worker_id="test-worker",
        excluded_queue_names=[],
    )


def work() -> int:
    """What ``manage.py worker --batch`` does, in this process: queue what is stranded,
    then take each due task as the engine's worker takes it and run it with the engine's
    own ``run_task``, until nothing is due. (The command itself closes the database
    connection between tasks, which would end the test's transaction; the process tests
    run it for real.) Answers how many tasks ran."""
    start_sweeping()
    return run_due()


def run_due() -> int:
    """A running worker's loop, without its start: take each due task and run it, until
    nothing is due. Answers how many tasks ran."""
    worker = engine_worker()
    ran = 0
    while True:
        with transaction.atomic():
            found = DBTaskResult.objects.ready().get_locked()
            if found is not None:
                found.claim(worker.worker_id)
        if found is None:
            return ran
        worker.run_task(found)
        assert DBTaskResult.objects.get(pk=found.pk).status == TaskResultStatus.SUCCESSFUL
        ran += 1


def time_passes(seconds: float) -> None:
    """Bring every waiting try, pause and task ``seconds`` nearer, as if that long had passed."""
    shift = timedelta(seconds=seconds)
    for row in Dispatch.objects.filter(state=Dispatch.State.PENDING):
        row.next_try_at -= shift
        row.created_at -= shift
        row.save(update_fields=["next_try_at", "created_at"])
    for endpoint in Endpoint.objects.filter(paused_until__isnull=False):
        assert endpoint.paused_until is not None
        endpoint.paused_until -= shift
        endpoint.save(update_fields=["paused_until"])
    for task in DBTaskResult.objects.filter(status=TaskResultStatus.READY):
        task.run_after -= shift
        task.save(update_fields=["run_after"])


def verified(secret: str, received: Received) -> dict[str, Any]:
    """The message, once Standard Webhooks' own verifier accepts its signature."""
    data = Webhook(secret).verify(received.body, received.headers)
    assert isinstance(data, dict)
    assert data == json.loads(received.body)
    return data


def due_sends() -> int:
    return DBTaskResult.objects.filter(
        task_path="webhooks.tasks.send",
        status=TaskResultStatus.READY,
        run_after__lte=timezone.now(),
    ).count()
