"""The webhook sender's tasks on the task engine (django-tasks, database backend):
``python manage.py worker`` runs them. Each body imports its work when it runs, so this
module stays importable from the outbox that enqueues them."""

from __future__ import annotations

from django_tasks import task


@task()
def send(dispatch_ids: list[int]) -> int:
    """Send the due dispatches among ``dispatch_ids``; answers how many were tried."""
    from webhooks.sending import send_due

    return send_due(dispatch_ids)


@task()
def drain(endpoint_id: int) -> int:
    """Send the endpoint's due messages, oldest first, for a bounded time (then wake a
    successor if any remain); answers how many were tried."""
    from webhooks.sending import drain_endpoint

    return drain_endpoint(endpoint_id)


@task()
def check_prompt(team_id: int, agent: str) -> bool:
    """Compose ``agent`` and queue ``prompt.changed`` if it differs from the last
    composition seen; answers whether it did."""
    from webhooks.watching import check

    return check(team_id, agent)


@task()
def sweep() -> int:
    """Queue again what no task will send (its worker was killed mid-send, or its task
    row was lost), then come back in a minute; answers how many were queued."""
    from webhooks.sweeping import sweep_and_return

    return sweep_and_return()
