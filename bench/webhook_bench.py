"""Webhook targets (SPEC §16), in process and with the real worker:

- what queueing a message adds to a key/value write and a memory save: the same call
  for a team with one endpoint that wants every event, and for a team with none
  (goal: at most 1.10×), measured interleaved;
- one ``manage.py worker --batch`` process sending 1,000 messages to a receiver on
  loopback (goal: under 10 s, the process's start included).

``DEBUG=1 .venv/bin/python -m bench webhook_bench`` runs them alone; the outage figure
(a receiver down for two minutes) is ``python -m bench.webhook_outage``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread

from django.conf import settings

from bench.memory_bench import _agent
from kvstore import store
from lens.actors import Actor
from lens.models import ApiToken, Team
from memory.core.records import MemoryInput
from memory.saving import save_memory
from webhooks.endpoints import create_endpoint
from webhooks.models import Dispatch

_RUN = uuid.uuid4().hex[:8]
MESSAGES = 1000
ROOT = Path(__file__).resolve().parent.parent


@contextmanager
def receiver() -> Iterator[tuple[str, list[bytes]]]:
    got: list[bytes] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
            got.append(self.rfile.read(int(self.headers["content-length"])))
            self.send_response(204)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook", got
    finally:
        server.shutdown()
        server.server_close()


def _interleaved(calls: dict[str, Callable[[], object]], runs: int) -> dict[str, float]:
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for call in calls.values():
        call()  # warm
    for _ in range(runs):
        for name, call in calls.items():
            started = time.perf_counter()
            call()
            samples[name].append((time.perf_counter() - started) * 1e6)
    return {name: statistics.median(values) for name, values in samples.items()}


def run(median_ms: Callable[..., float], report: Callable[..., None]) -> None:
    print("\nWebhooks")
    settings.WEBHOOKS_ALLOW_HTTP = settings.WEBHOOKS_ALLOW_PRIVATE = True
    quiet = Team.objects.create(slug=f"bench-hooks-none-{_RUN}", name="No webhooks")
    loud = Team.objects.create(slug=f"bench-hooks-one-{_RUN}", name="One webhook")
    actors = {team.pk: Actor.for_token(ApiToken.objects.issue(team)[0]) for team in (quiet, loud)}
    agents = {team.pk: _agent(team, "hooks") for team in (quiet, loud)}
    create_endpoint(loud, actors[loud.pk], "http://127.0.0.1:9/hook", ["*"])
    counter = iter(range(10**9))

    def write(team: Team) -> Callable[[], object]:
        return lambda: store.write(team, "bench.hooks", "x" * 300, actor=actors[team.pk])

    def save(team: Team) -> Callable[[], object]:
        def call() -> object:
            n = next(counter)
            data = MemoryInput(kind="profile", content=f"Fact number {n}.", label=f"f{n}", tags=[])
            return save_memory(agents[team.pk], data, actors[team.pk])

        return call

    kv = _interleaved({"none": write(quiet), "one": write(loud)}, 400)
    report("key/value write, no endpoint, median", kv["none"], unit="µs")
    report("key/value write, one endpoint wanting it, median", kv["one"], unit="µs")
    _ratio("key/value write: queueing its message", kv["one"] / kv["none"], 1.10)
    saves = _interleaved({"none": save(quiet), "one": save(loud)}, 300)
    report("memory_save, no endpoint, median", saves["none"], unit="µs")
    report("memory_save, one endpoint wanting it, median", saves["one"], unit="µs")
    _ratio("memory_save: queueing its messages", saves["one"] / saves["none"], 1.10)
    Dispatch.objects.filter(team=loud).delete()
    _worker_figure(report)


def _ratio(name: str, value: float, goal: float) -> None:
    verdict = "ok" if value <= goal else "MISSED"
    print(f"  {name:<58} {value:9.2f} ×  (goal ≤ {goal:g}×)  {verdict}")


def _worker_figure(report: Callable[..., None]) -> None:
    team = Team.objects.create(slug=f"bench-hooks-send-{_RUN}", name="Sending")
    actor = Actor.for_token(ApiToken.objects.issue(team)[0])
    with receiver() as (url, got):
        create_endpoint(team, actor, url, ["kv.written"])
        for n in range(MESSAGES):
            store.write(team, f"k{n}", "payload", actor=actor)
        env = {
            **os.environ,
            "WEBHOOKS_ALLOW_HTTP": "1",
            "WEBHOOKS_ALLOW_PRIVATE": "1",
        }
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "manage.py", "worker", "--batch", "-v0"],
            cwd=ROOT,
            env=env,
            check=True,
        )
        seconds = time.perf_counter() - started
        sent = sum(1 for body in got if b'"kv.written"' in body)
    report(f"one worker sends {MESSAGES:,} messages (start included)", seconds, 10.0, unit="s")
    print(f"  {'messages the receiver got':<58} {sent:9,d}")
    assert sent >= MESSAGES, sent


def cleanup() -> None:
    Team.objects.filter(slug__startswith="bench-hooks-").filter(slug__endswith=_RUN).delete()
