"""One receiver that hangs delays no other (SPEC §16, docs/webhooks.md): with a real
``manage.py worker`` and a receiver that accepts connections and never answers, a healthy
endpoint of the same team gets each message within 5 s of its change, and the hanging
endpoint's messages all arrive once it recovers (its first try timed out, the breaker
paused it, a probe found it back)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.serving import ROOT, clean_env, manage, run_python, scratch_database
from tests.webhooks.hanging import hanging
from tests.webhooks.receiver import receiving

pytestmark = pytest.mark.slow

# The deadline is the default's (10 s): the hanging endpoint holds a try that long. The
# breaker opens at the first failure and pauses for about 2 s, so the test sees a probe.
ENV = {
    "DEBUG": "1",
    "WEBHOOKS_ALLOW_HTTP": "1",
    "WEBHOOKS_ALLOW_PRIVATE": "1",
    "WEBHOOKS_TIMEOUT": "10",
    "WEBHOOKS_BREAKER_FAILURES": "1",
    "WEBHOOKS_BREAKER_PAUSE": "2",
}
WRITES = 8
APART = 1.5  # seconds between the writes: they span the hanging try's deadline
WITHIN = 5.0

SETUP = """
import django; django.setup()
from lens.actors import SYSTEM
from lens.models import Team
from webhooks.endpoints import create_endpoint
team = Team.objects.create(slug="acme", name="Acme")
# The hanging endpoint first: its sending task is enqueued first.
for url in ({hanging!r}, {healthy!r}):
    create_endpoint(team, SYSTEM, url, ["kv.written"])
"""

WRITER = """
import time
import django; django.setup()
from kvstore import store
from lens.models import Team
team = Team.objects.get(slug="acme")
for i in range({writes}):
    store.write(team, f"k{{i}}", "payload")
    print(f"k{{i}} {{time.time()}}", flush=True)  # committed
    time.sleep({apart})
"""

STATES = """
import django; django.setup()
from webhooks.models import Attempt, Dispatch
print(sorted(set(Dispatch.objects.values_list("state", flat=True))))
print(sorted(set(Attempt.objects.exclude(error="").values_list("error", flat=True))))
"""


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    with scratch_database(tmp_path, "lens_isolation") as url:
        environment = clean_env(DATABASE_URL=url, **ENV)
        manage(environment, "migrate", "--no-input", "-v0")
        yield environment


def python(env: dict[str, str], code: str) -> str:
    done = run_python(code, **{k: env[k] for k in ("DATABASE_URL", *ENV)})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_hanging_receiver_delays_no_other_and_gets_its_messages_once_back(
    env: dict[str, str],
) -> None:
    with hanging() as stuck, receiving() as healthy:
        python(env, SETUP.format(hanging=stuck.url, healthy=healthy.url))
        worker = subprocess.Popen(
            [sys.executable, "manage.py", "worker", "--interval", "0.2", "-v0"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            committed = {
                key: float(at)
                for key, at in (
                    line.split()
                    for line in python(env, WRITER.format(writes=WRITES, apart=APART)).splitlines()
                )
            }
            deadline = time.monotonic() + WITHIN + 1
            while len(healthy.received) < WRITES and time.monotonic() < deadline:
                time.sleep(0.1)
            arrived = {
                json.loads(got.body)["data"]["object"]["id"]: got.at for got in healthy.received
            }
            # The healthy endpoint's messages came while the other hung: its first try
            # held a connection for the whole deadline (10 s), and most of them arrived
            # within it; it answered nothing.
            hung = stuck.first_accepted_at
            assert hung is not None, "the hanging endpoint was never tried"
            meanwhile = [at for at in arrived.values() if hung <= at <= hung + 10]
            assert len(meanwhile) >= 4, (hung, arrived)
            assert stuck.ids == []
            late = {
                key: round(arrived[key] - at, 1) for key, at in committed.items() if key in arrived
            }
            assert sorted(arrived) == sorted(committed), late
            assert all(delay <= WITHIN for delay in late.values()), late
            # The hanging endpoint comes back: nothing it was sent is lost.
            stuck.recovered.set()
            deadline = time.monotonic() + 60
            while len(set(stuck.ids)) < WRITES and time.monotonic() < deadline:
                time.sleep(0.2)
        finally:
            worker.terminate()
            try:
                out, _ = worker.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                worker.kill()
                out, _ = worker.communicate(timeout=10)
    assert len(set(stuck.ids)) == WRITES, (stuck.ids, out)
    assert len(healthy.received) == WRITES  # each once: nothing failed there
    states, errors = python(env, STATES).splitlines()
    assert states == "['succeeded']"
    assert "no answer within 10 s" in errors
