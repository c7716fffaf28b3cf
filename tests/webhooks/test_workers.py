"""``python manage.py worker`` as a deployment runs it, in processes of its own against
a scratch database of the session's backend: killed with SIGKILL mid-send it loses
nothing, and two at once never send one message twice in a try (SPEC §16)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from standardwebhooks.webhooks import Webhook

from tests.serving import ROOT, clean_env, manage, run_python, scratch_database
from tests.webhooks.receiver import receiving

pytestmark = pytest.mark.slow

# A try has one second; its claim lapses five seconds after that.
ENV = {
    "DEBUG": "1",
    "WEBHOOKS_ALLOW_HTTP": "1",
    "WEBHOOKS_ALLOW_PRIVATE": "1",
    "WEBHOOKS_TIMEOUT": "1",
}
LEASE = 1 + 5

SETUP = """
import django; django.setup()
from kvstore import store
from lens.actors import SYSTEM
from lens.models import Team
from webhooks import tasks
from webhooks.endpoints import create_endpoint
from webhooks.models import Dispatch
team = Team.objects.create(slug="acme", name="Acme")
secrets = [
    create_endpoint(team, SYSTEM, {url!r} + f"/{{n}}", ["kv.written"]).secret
    for n in range({endpoints})
]
for i in range({writes}):
    store.write(team, f"k{{i}}", f"payload {{i}}")
if {overlap}:
    # Tasks that overlap the endpoints' own sending tasks, as a sweep's may.
    ids = list(Dispatch.objects.values_list("pk", flat=True))
    for start in range(0, len(ids), 25):
        tasks.send.enqueue(ids[start : start + 25])
print(" ".join(secrets))
"""


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    with scratch_database(tmp_path, "lens_worker") as url:
        environment = clean_env(DATABASE_URL=url, **ENV)
        manage(environment, "migrate", "--no-input", "-v0")
        yield environment


def set_up(
    env: dict[str, str], url: str, writes: int, endpoints: int = 1, overlap: bool = False
) -> list[str]:
    """A team with ``endpoints`` endpoints (``url``/0, /1, …) and ``writes`` key/value
    writes; the endpoints' secrets."""
    code = SETUP.format(url=url, writes=writes, endpoints=endpoints, overlap=overlap)
    done = run_python(code, **{k: env[k] for k in ("DATABASE_URL", *ENV)})
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1].split()


def worker(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "manage.py", "worker", "--interval", "0.2", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def test_a_worker_killed_mid_send_loses_nothing(env: dict[str, str]) -> None:
    release = threading.Event()
    with receiving(hold=release) as receiver:
        [secret] = set_up(env, receiver.url, 1)
        first = worker(env)
        assert receiver.arrived.wait(30), "the worker never sent"
        # Mid-send: the receiver holds the request; the worker dies without a word.
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(10)
        release.set()
        time.sleep(LEASE + 0.5)  # the dead worker's claim lapses
        receiver.hold = None
        second = worker(env, "--batch")
        out, _ = second.communicate(timeout=60)
        assert second.returncode == 0, out
    assert "1 messages queued again after an earlier stop." in out
    assert len(receiver.received) == 2
    ids = {got.headers["webhook-id"] for got in receiver.received}
    assert len(ids) == 1  # the same message, at least once
    for got in receiver.received:
        assert Webhook(secret).verify(got.body, got.headers)["type"] == "kv.written"
    states = run_python(
        "import django; django.setup()\n"
        "from webhooks.models import Dispatch\n"
        "print(list(Dispatch.objects.values_list('state', flat=True)))",
        **{k: env[k] for k in ("DATABASE_URL", *ENV)},
    )
    assert states.stdout.strip() == "['succeeded']", states.stderr


def test_two_workers_never_send_a_message_twice(env: dict[str, str]) -> None:
    writes, endpoints = 60, 4
    with receiving() as receiver:
        secrets = set_up(env, receiver.url, writes, endpoints, overlap=True)
        workers = [worker(env, "--batch", "-v2") for _ in range(2)]
        outputs = [w.communicate(timeout=120)[0] for w in workers]
        assert [w.returncode for w in workers] == [0, 0], outputs
    # Every message reached every endpoint exactly once, though the endpoints' own tasks
    # and the overlapping ones raced for them on two workers.
    counts = Counter((got.path, got.headers["webhook-id"]) for got in receiver.received)
    assert len(counts) == writes * endpoints
    assert set(counts.values()) == {1}
    for got in receiver.received:
        n = int(got.path.rsplit("/", 1)[1])
        message = Webhook(secrets[n]).verify(got.body, got.headers)
        assert message["type"] == "kv.written"
    keys = Counter(json.loads(got.body)["data"]["object"]["id"] for got in receiver.received)
    assert keys == {f"k{i}": endpoints for i in range(writes)}
    # Both workers sent: the tasks were shared, not run by one while the other waited.
    ran = [out.count("path=webhooks.tasks") for out in outputs]
    assert all(n > 2 for n in ran), ran
