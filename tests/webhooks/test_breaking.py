"""The circuit breaker and the endpoint's one try in flight (docs/webhooks.md): after
failed tries in a row an endpoint is paused (``failing`` from then, on the API), skipped
for the pause, then probed with one message; a probe that succeeds sends the rest. And
while one try of an endpoint is in flight no other starts."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from kvstore import store
from lens.models import Team
from tests.api_calls import ApiClient
from tests.pages import dom
from tests.webhooks.hooks import hook, time_passes, work
from tests.webhooks.receiver import receiving
from webhooks.models import Dispatch, Endpoint
from webhooks.sending import HELD, Claimed, claim, hand_over, send

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _loopback(settings: Any) -> None:
    settings.WEBHOOKS_ALLOW_HTTP = True
    settings.WEBHOOKS_ALLOW_PRIVATE = True
    settings.WEBHOOKS_BREAKER_FAILURES = 3
    settings.WEBHOOKS_BREAKER_PAUSE = 30


def failing_on_the_api(api: ApiClient) -> bool:
    [listed] = api.get("/api/webhooks").json()["webhooks"]
    return bool(listed["failing"])


def paused_for() -> float:
    until = Endpoint.objects.get().paused_until
    assert until is not None
    return (until - timezone.now()).total_seconds()


def health_on_the_page(client: Client) -> str:
    [card] = dom(client.get("/settings/webhooks/")).all("data-webhook-id")
    return str(card.get("data-webhook-health"))


def test_failures_in_a_row_pause_the_endpoint_then_one_probe_then_the_rest(
    team: Team, api: ApiClient, reviewer_client: Client
) -> None:
    # Four failures (three in a row open the breaker, the first probe fails), then back.
    with receiving([503, 503, 503, 503, 200]) as receiver:
        hook(team, receiver.url, "kv.written")
        for n in range(6):
            store.write(team, f"k{n}", "v")
        assert not failing_on_the_api(api)
        work()
        # Three tries failed in a row: the breaker opened, the other three wait untried.
        assert len(receiver.received) == 3
        assert 24 <= paused_for() <= 36
        assert failing_on_the_api(api)
        assert health_on_the_page(reviewer_client) == "failing"
        assert Dispatch.objects.filter(tries=0).count() == 3
        # A change while it is paused adds a message and no task: the probe's is waiting.
        drains = DBTaskResult.objects.filter(task_path="webhooks.tasks.drain")
        before = drains.count()
        assert drains.filter(status=TaskResultStatus.READY).count() == 1  # the probe's
        store.write(team, "k6", "v")
        work()
        assert drains.count() == before
        assert len(receiver.received) == 3
        # The failed messages' own retries (about 5 s on) fall inside the pause: skipped.
        time_passes(7)
        work()
        assert len(receiver.received) == 3
        # The pause ends: one message is tried (the oldest due), it fails, and the next
        # pause is twice as long.
        time_passes(30)
        work()
        assert len(receiver.received) == 4
        assert 48 <= paused_for() <= 72
        assert failing_on_the_api(api)
        # The next probe succeeds: the breaker closes and every waiting message goes.
        time_passes(75)
        work()
    ids = [got.headers["webhook-id"] for got in receiver.received]
    assert len(ids) == 4 + 7
    assert set(Dispatch.objects.values_list("state", flat=True)) == {Dispatch.State.SUCCEEDED}
    assert set(Dispatch.objects.values_list("message_id", flat=True)) == set(ids)
    endpoint = Endpoint.objects.get()
    assert (endpoint.failures_in_a_row, endpoint.paused_until, endpoint.failing) == (0, None, False)
    assert not failing_on_the_api(api)
    assert health_on_the_page(reviewer_client) == "ok"


def test_an_endpoint_has_one_try_in_flight(team: Team) -> None:
    with receiving() as receiver:
        made = hook(team, receiver.url, "kv.written")
        store.write(team, "a", "v")
        store.write(team, "b", "v")
        first, second = Dispatch.objects.order_by("id")
        endpoint = made.endpoint.pk
        held = claim(first.pk, endpoint, timezone.now(), {})
        assert isinstance(held, Claimed)
        # Another task, on another thread or worker, finds the endpoint busy.
        assert claim(second.pk, endpoint, timezone.now(), {}) is HELD
        work()  # the endpoint's sending task ends at once: the holder sends the rest
        assert receiver.received == []
        # The try in flight ends and gives the endpoint back; its sender, as a sending
        # task does after its last try, wakes the endpoint for what waits.
        send(held)
        hand_over(endpoint)
        assert len(receiver.received) == 1
        work()
    assert len(receiver.received) == 2
    assert set(Dispatch.objects.values_list("state", flat=True)) == {Dispatch.State.SUCCEEDED}


def test_messages_past_three_days_are_given_up_while_paused(team: Team) -> None:
    with receiving([503]) as receiver:
        hook(team, receiver.url, "kv.written")
        for n in range(5):
            store.write(team, f"k{n}", "v")
        work()  # three failures pause it; two messages wait untried
        assert len(receiver.received) == 3
        # Four days on, paused through them (each probe failing): the probe fails again,
        # and every message older than three days is given up with it, tried or not.
        time_passes(4 * 86400)
        work()
    assert len(receiver.received) == 4
    assert set(Dispatch.objects.values_list("state", flat=True)) == {Dispatch.State.FAILED}
    assert Dispatch.objects.filter(tries=0).count() >= 1
    assert Endpoint.objects.get().failing
