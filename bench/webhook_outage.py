"""A receiver down for two minutes, then back: does it get every message? (SPEC §16)

A scratch database (SQLite, or PostgreSQL at ``BENCH_PG_URL`` when given) with one
endpoint on a loopback port where nothing listens; 100 key/value writes; one
``manage.py worker`` running. After two minutes a receiver starts on that port, and the
figure is how long after its return every message had arrived (each once, by
``webhook-id``). With the schedule's tries at about 5 s, 35 s and 2 min 35 s, the
receiver should have them all within about a minute of coming back.

``DEBUG=1 .venv/bin/python -m bench.webhook_outage`` (about three and a half minutes).
"""

from __future__ import annotations

import os
import socket
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
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "lens.settings",
        "DEBUG": "1",
        "DATABASE_URL": os.environ.get("BENCH_OUTAGE_DB", f"sqlite:///{scratch}/outage.sqlite3"),
        "WEBHOOKS_ALLOW_HTTP": "1",
        "WEBHOOKS_ALLOW_PRIVATE": "1",
    }
    port = free_port()
    python = [sys.executable]
    subprocess.run([*python, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
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
    return 0 if got == MESSAGES else 1


if __name__ == "__main__":
    sys.exit(main())
