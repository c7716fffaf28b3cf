"""Webhooks end to end in one process: a change queues its message in its transaction,
the worker (the real task engine) sends it signed, retries keep the message's id, and a
rolled-back change sends nothing (SPEC §16)."""

from __future__ import annotations

import json
import ssl
import subprocess
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import transaction
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from kvstore import store
from lens.actors import Actor
from lens.models import Agent, Team
from memory.decisions import decide
from tests.factories import composed, make_user, preference
from tests.webhooks.hooks import hook, time_passes, verified, work
from tests.webhooks.receiver import receiving
from webhooks.endpoints import MessageNotFound, resend
from webhooks.models import Attempt, Dispatch, Endpoint, PromptMark
from webhooks.watching import prompt_sha256

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _loopback(settings: Any) -> None:
    settings.WEBHOOKS_ALLOW_HTTP = True
    settings.WEBHOOKS_ALLOW_PRIVATE = True


def test_a_change_reaches_the_receiver_signed_and_without_its_content(team: Team) -> None:
    with receiving() as receiver:
        made = hook(team, receiver.url, "kv.written")
        store.write(team, "must.tone", "a payload that never leaves")
        work()
    [got] = receiver.received
    message = verified(made.secret, got)
    assert message["type"] == "kv.written"
    assert message["data"]["action"] == "kv.written"
    assert message["data"]["object"] == {"type": "kv", "id": "must.tone"}
    assert len(message["data"]["sha256"]) == 64
    assert b"never leaves" not in got.body
    assert got.headers["webhook-id"].startswith("msg_")
    assert Dispatch.objects.get().state == Dispatch.State.SUCCEEDED


def test_an_endpoint_gets_only_the_events_it_asked_for(team: Team) -> None:
    with receiving() as receiver:
        hook(team, receiver.url, "kv.deleted")
        store.write(team, "a", "x")
        work()
        assert receiver.received == []
        store.delete(team, "a")
        work()
    assert [r.headers["webhook-id"] for r in receiver.received] != []
    assert Dispatch.objects.get().event_type == "kv.deleted"


def test_a_failed_try_is_retried_with_the_same_id(team: Team) -> None:
    with receiving([500, 200]) as receiver:
        made = hook(team, receiver.url, "kv.written")
        store.write(team, "k", "v")
        work()
        assert len(receiver.received) == 1
        dispatch = Dispatch.objects.get()
        assert (dispatch.state, dispatch.tries) == (Dispatch.State.PENDING, 1)
        # The next try waits about 5 s (SPEC §16), jitter included: nothing is sent before.
        wait = (dispatch.next_try_at - Attempt.objects.get().at).total_seconds()
        assert 3.5 <= wait <= 6.5
        work()
        assert len(receiver.received) == 1
        time_passes(7)
        work()
    first, second = receiver.received
    assert first.headers["webhook-id"] == second.headers["webhook-id"]
    assert verified(made.secret, first) == verified(made.secret, second)
    assert Dispatch.objects.get().state == Dispatch.State.SUCCEEDED
    attempts = list(Attempt.objects.order_by("id").values_list("status_code", "ok", "error"))
    assert attempts == [(500, False, "HTTP 500"), (200, True, "")]
    endpoint = Endpoint.objects.get()
    assert endpoint.failures_in_a_row == 0
    assert endpoint.last_success_at is not None


def test_a_rolled_back_change_queues_and_sends_nothing(team: Team) -> None:
    with receiving() as receiver:
        hook(team, receiver.url, "*")
        work()  # the endpoint's own creation is its first message
        assert [r.headers["webhook-id"] for r in receiver.received] != []
        dispatches, tasks = Dispatch.objects.count(), DBTaskResult.objects.count()
        seen: list[tuple[int, int]] = []

        def change_that_fails() -> None:
            with transaction.atomic():
                store.write(team, "k", "v")
                seen.append((Dispatch.objects.count(), DBTaskResult.objects.count()))
                raise RuntimeError("the change fails after its write")

        with pytest.raises(RuntimeError):
            change_that_fails()
        # Queued in the change's transaction (its row and its task), and gone with it.
        assert seen == [(dispatches + 1, tasks + 1)]
        assert (Dispatch.objects.count(), DBTaskResult.objects.count()) == (dispatches, tasks)
        work()
    assert len(receiver.received) == 1


def test_a_memory_that_waits_tells_approval_pending(team: Team, wren: Agent) -> None:
    with receiving() as receiver:
        made = hook(team, receiver.url, "approval.pending")
        record = preference(wren, "Prefers terse answers.", label="tone")
        work()
    [got] = receiver.received
    message = verified(made.secret, got)
    assert message["type"] == "approval.pending"
    assert message["data"]["action"] == "memory.saved"
    assert message["data"]["object"] == {"type": "memory", "id": record}
    assert b"terse" not in got.body


def test_an_approval_tells_prompt_changed_with_its_cause(team: Team, wren: Agent) -> None:
    reviewer = Actor.for_user(make_user("rhea", team))
    record = preference(wren, "Prefers terse answers.", label="tone")
    before = prompt_sha256(composed(wren).prompt.text)
    with receiving() as receiver:
        made = hook(team, receiver.url, "prompt.changed")
        decide(record, True, reviewer)
        work()
        # A change that leaves the prompt as it was tells nothing.
        store.write(team, "k", "v")
        work()
    [got] = receiver.received
    message = verified(made.secret, got)
    assert message["type"] == "prompt.changed"
    data = message["data"]
    assert data["agent"] == "wren"
    assert data["from_sha256"] == before
    assert data["to_sha256"] == prompt_sha256(composed(wren).prompt.text) != before
    assert [(c["kind"], c["memory_id"], c["event"]) for c in data["causes"]] == [
        ("memory", record, "approved")
    ]
    assert b"terse" not in got.body


def test_the_address_is_checked_again_at_send_time(team: Team, settings: Any) -> None:
    with receiving() as receiver:
        hook(team, receiver.url, "kv.written")
        # Allowed when made (development); no longer when sent.
        settings.WEBHOOKS_ALLOW_PRIVATE = False
        store.write(team, "k", "v")
        work()
    assert receiver.received == []
    attempt = Attempt.objects.get()
    assert attempt.status_code is None
    assert attempt.error == "refused: 127.0.0.1 resolves to 127.0.0.1, a loopback address."
    assert Dispatch.objects.get().state == Dispatch.State.PENDING  # tried again later


def test_a_url_with_port_zero_is_refused_at_send_time(team: Team) -> None:
    # An endpoint stored before port 0 was refused is not sent to (port 0 was read as
    # the scheme's default port, one its URL never named).
    with receiving() as receiver:
        made = hook(team, receiver.url, "kv.written")
        Endpoint.objects.filter(pk=made.endpoint.pk).update(url="http://127.0.0.1:0/hook")
        store.write(team, "k", "v")
        work()
    assert receiver.received == []
    attempt = Attempt.objects.get()
    assert attempt.error == "refused: A webhook URL's port must be a number from 1 to 65535."


def test_a_redirect_is_never_followed(team: Team) -> None:
    with receiving([307]) as receiver:
        hook(team, receiver.url, "kv.written")
        store.write(team, "k", "v")
        work()
    assert len(receiver.received) == 1
    attempt = Attempt.objects.get()
    assert (attempt.status_code, attempt.error) == (307, "redirect (307) not followed")
    assert not attempt.ok


def test_a_receiver_that_never_answers_is_cut_off_at_the_deadline(
    team: Team, settings: Any
) -> None:
    settings.WEBHOOKS_TIMEOUT = 1
    stuck = threading.Event()  # never set while the try waits
    with receiving(hold=stuck) as receiver:
        hook(team, receiver.url, "kv.written")
        store.write(team, "k", "v")
        started = time.monotonic()
        work()
        took = time.monotonic() - started
    assert len(receiver.received) == 1
    assert 0.9 <= took < 3
    attempt = Attempt.objects.get()
    assert attempt.error == "no answer within 1 s"
    assert 900 <= attempt.duration_ms < 3000


def test_an_endpoint_that_fails_for_three_days_is_marked_failing(team: Team) -> None:
    with receiving([503]) as receiver:
        hook(team, receiver.url, "kv.written")
        store.write(team, "k", "v")
        work()
        while (dispatch := Dispatch.objects.get()).state == Dispatch.State.PENDING:
            assert len(receiver.received) < 40
            time_passes((dispatch.next_try_at - timezone.now()).total_seconds() + 1)
            work()
        tries = len(receiver.received)
    dispatch = Dispatch.objects.get()
    assert dispatch.state == Dispatch.State.FAILED
    assert 14 <= tries == dispatch.tries <= 20
    endpoint = Endpoint.objects.get()
    assert endpoint.failing
    assert endpoint.failures_in_a_row == tries


def test_a_resent_message_keeps_its_id_and_body(team: Team) -> None:
    with receiving() as receiver:
        made = hook(team, receiver.url, "kv.written")
        store.write(team, "k", "v")
        work()
        first = Dispatch.objects.get()
        again = resend(team, made.endpoint.pk, first.pk)
        assert (again.message_id, again.body) == (first.message_id, first.body)
        assert again.pk != first.pk
        work()
    one, two = receiver.received
    assert one.headers["webhook-id"] == two.headers["webhook-id"]
    assert one.body == two.body
    with pytest.raises(MessageNotFound):
        resend(team, made.endpoint.pk, 10**9)


def test_a_lost_sending_task_is_replaced_by_the_sweep(team: Team) -> None:
    with receiving() as receiver:
        hook(team, receiver.url, "kv.written")
        store.write(team, "k", "v")
        # The endpoint's task is lost (its worker died before it started): the endpoint
        # still says a task is waiting, so later changes would add none.
        DBTaskResult.objects.filter(task_path="webhooks.tasks.drain").delete()
        assert Endpoint.objects.get().waking
        work()
        assert receiver.received == []
        time_passes(61)  # a minute overdue: the sweep wakes the endpoint again
        work()
    assert len(receiver.received) == 1
    assert not Endpoint.objects.get().waking


def test_a_lost_prompt_check_is_enqueued_again(team: Team, wren: Agent) -> None:
    reviewer = Actor.for_user(make_user("rhea", team))
    record = preference(wren, "Prefers terse answers.", label="tone")
    with receiving() as receiver:
        hook(team, receiver.url, "prompt.changed")
        decide(record, True, reviewer)
        DBTaskResult.objects.filter(task_path="webhooks.tasks.check_prompt").delete()
        work()
        assert receiver.received == []
        PromptMark.objects.update(woken_at=timezone.now() - timedelta(minutes=6))
        work()
    [got] = receiver.received
    assert json.loads(got.body)["type"] == "prompt.changed"
    assert not PromptMark.objects.get().waking


def certificate(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key (openssl, as an operator's
    internal CA would issue one)."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
        + ["-subj", "/CN=receiver", "-addext", "subjectAltName=IP:127.0.0.1"]
        + ["-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    return cert, key


def test_https_is_verified_against_the_trusted_certificates(
    team: Team, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = certificate(tmp_path)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    with receiving(tls=tls) as receiver:
        made = hook(team, receiver.url, "kv.written")
        store.write(team, "k", "v")
        work()  # the receiver's certificate is trusted by no one: refused
        assert receiver.received == []
        refused = Attempt.objects.get()
        assert "CERTIFICATE_VERIFY_FAILED" in refused.error
        # Trusted as an operator trusts an internal CA (OpenSSL's SSL_CERT_FILE).
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))
        time_passes(7)
        work()
    [got] = receiver.received
    assert verified(made.secret, got)["type"] == "kv.written"
    assert Dispatch.objects.get().state == Dispatch.State.SUCCEEDED
