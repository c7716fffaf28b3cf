"""Webhook receivers that fail: does the sender lose anything, or let one delay another?
(SPEC §16, docs/webhooks.md)

1. A receiver down for two minutes, then back. A scratch database (SQLite, or the
   PostgreSQL at ``BENCH_OUTAGE_DB`` when given) with one endpoint on a loopback port
   where nothing listens; 100 key/value writes; one ``manage.py worker`` running. After
   two minutes a receiver starts on that port, and the figure is how long after its
   return every message had arrived (each once, by ``webhook-id``). Its tries fail at
   once (connection refused), so the circuit breaker pauses the endpoint after five
   (30 s, then 60 s, 120 s…): the receiver hears again at the first probe after its
   return, within about one pause.
2. A receiver that hangs beside one that answers. Two endpoints of one team, the first
   on a socket that accepts connections and never answers, the second on a receiver
   that answers at once; 60 writes a second apart while a worker runs with the default
   settings (10 s deadline). The figures are the healthy endpoint's delay from each
   change's commit to its message's arrival (goal: within 5 s), and how many tries the
   hanging one took in that minute (five deadlines, then the breaker's probes).

``DEBUG=1 .venv/bin/python -m bench.webhook_outage`` (about five minutes).
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MESSAGES = 100
DOWN_SECONDS = 120.0
WAIT_AFTER = 180.0
HANGING_WRITES = 60
HANGING_APART = 1.0
WITHIN = 5.0

SETUP = """
import django; django.setup()
from kvstore import store
from lens.actors import SYSTEM
from lens.models import Team
from webhooks.endpoints import create_endpoint
team = Team.objects.create(slug="outage", name="Outage")
create_endpoint(team, SYSTEM, "http://127.0.0.1:{port}/hook", ["kv.written"])
for i in range({messages}):
    store.write(team, f"k{{i}}", "payload")
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> int:
    scratch = tempfile.mkdtemp(prefix="lens-outage-")
    env = _env(scratch)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    outage = _outage(env)
    hanging = _hanging(env)
    return 0 if outage and hanging else 1


def _env(scratch: str) -> dict[str, str]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "lens.settings",
        "DEBUG": "1",
        "DATABASE_URL": os.environ.get("BENCH_OUTAGE_DB", f"sqlite:///{scratch}/outage.sqlite3"),
        "WEBHOOKS_ALLOW_HTTP": "1",
        "WEBHOOKS_ALLOW_PRIVATE": "1",
    }
    return env


def _outage(env: dict[str, str]) -> bool:
    port = free_port()
    python = [sys.executable]
    setup = SETUP.format(port=port, messages=MESSAGES)
    subprocess.run([*python, "-c", setup], cwd=ROOT, env=env, check=True)
    worker = subprocess.Popen(
        [*python, "manage.py", "worker", "-v0"], cwd=ROOT, env=env, start_new_session=True
    )
    ids: dict[str, int] = {}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
            self.rfile.read(int(self.headers["content-length"]))
            with lock:
                key = self.headers["webhook-id"]
                ids[key] = ids.get(key, 0) + 1
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    try:
        print(f"Webhooks: a receiver down for {DOWN_SECONDS:.0f} s, then back")
        time.sleep(DOWN_SECONDS)
        server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        back = time.monotonic()
        while time.monotonic() - back < WAIT_AFTER:
            with lock:
                if len(ids) >= MESSAGES:
                    break
            time.sleep(0.25)
        took = time.monotonic() - back
        server.shutdown()
    finally:
        worker.terminate()
        worker.wait(30)
    got, repeats = len(ids), sum(n - 1 for n in ids.values())
    verdict = "ok" if got == MESSAGES else "MISSED"
    print(
        f"  {'messages received after the receiver came back':<58} {got:5d} of {MESSAGES}  {verdict}"
    )
    print(f"  {'…all of them within':<58} {took:8.1f} s of its return")
    print(f"  {'repeats (at least once: the same webhook-id again)':<58} {repeats:5d}")
    return got == MESSAGES


HANGING_SETUP = """
import django; django.setup()
from lens.actors import SYSTEM
from lens.models import Team
from webhooks.endpoints import create_endpoint
team = Team.objects.create(slug="hanging", name="Hanging")
for url in ({hanging!r}, {healthy!r}):
    create_endpoint(team, SYSTEM, url, ["kv.written"])
"""

HANGING_WRITER = """
import time
import django; django.setup()
from kvstore import store
from lens.models import Team
team = Team.objects.get(slug="hanging")
for i in range({writes}):
    store.write(team, f"k{{i}}", "payload")
    print(f"k{{i}} {{time.time()}}", flush=True)
    time.sleep({apart})
"""


def _hanging(env: dict[str, str]) -> bool:
    """Scenario 2: the healthy endpoint's delays while the other hangs."""
    held: list[socket.socket] = []
    stuck = socket.create_server(("127.0.0.1", 0))
    stuck.settimeout(0.2)
    done = threading.Event()

    def hold() -> None:  # accepts, reads nothing, answers nothing
        while not done.is_set():
            try:
                held.append(stuck.accept()[0])
            except TimeoutError:
                continue

    arrived: dict[str, float] = {}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
            body = self.rfile.read(int(self.headers["content-length"]))
            with lock:
                arrived.setdefault(json.loads(body)["data"]["object"]["id"], time.time())
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    healthy = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=healthy.serve_forever, daemon=True).start()
    threading.Thread(target=hold, daemon=True).start()
    urls = {
        "hanging": f"http://127.0.0.1:{stuck.getsockname()[1]}/hook",
        "healthy": f"http://127.0.0.1:{healthy.server_address[1]}/hook",
    }
    subprocess.run(
        [sys.executable, "-c", HANGING_SETUP.format(**urls)], cwd=ROOT, env=env, check=True
    )
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "worker", "-v0"], cwd=ROOT, env=env, start_new_session=True
    )
    try:
        print(f"Webhooks: a receiver that hangs beside one that answers, {HANGING_WRITES} writes")
        writer = HANGING_WRITER.format(writes=HANGING_WRITES, apart=HANGING_APART)
        out = subprocess.run(
            [sys.executable, "-c", writer], cwd=ROOT, env=env, check=True, capture_output=True
        ).stdout.decode()
        time.sleep(WITHIN)
    finally:
        worker.terminate()
        try:
            worker.wait(30)
        except subprocess.TimeoutExpired:  # a task waits on the hanging receiver
            worker.kill()
            worker.wait(10)
        done.set()
        healthy.shutdown()
        for sock in held:
            sock.close()
        stuck.close()
    committed = {key: float(at) for key, at in (line.split() for line in out.splitlines())}
    delays = [arrived[key] - at for key, at in committed.items() if key in arrived]
    got = len(delays)
    worst = max(delays, default=float("inf"))
    verdict = "ok" if got == HANGING_WRITES and worst <= WITHIN else "MISSED"
    print(f"  {'messages the healthy endpoint got':<58} {got:5d} of {HANGING_WRITES}")
    if delays:
        p50 = statistics.median(delays)
        print(f"  {'…from commit to arrival, p50':<58} {p50:8.2f} s")
        print(
            f"  {'…from commit to arrival, worst':<58} {worst:8.2f} s  (goal ≤ {WITHIN:g} s)  {verdict}"
        )
    print(f"  {'tries the hanging endpoint took meanwhile':<58} {len(held):5d}")
    return verdict == "ok"


if __name__ == "__main__":
    sys.exit(main())
