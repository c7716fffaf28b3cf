"""The production server before and after Granian, side by side in one run (``make
bench-http`` prints it first; ``python -m bench.servers`` alone).

For each database: ``make serve`` as it is now (Granian's ASGI interface in front of
Django's WSGI handler, ``lens/serving/server.py``), Granian's own WSGI mode in the same shape
(2 processes of 2 threads; it reads bodies on the request's thread, which is what the
ASGI front avoids), and the server ``make serve`` ran before, gunicorn's ``gthread`` in
its shape then (4 processes of 2 threads; its lingering worker is gone), each on the
same seeded scratch database.
Three figures for ``GET /api/kv/<key>``: one keep-alive client's p50, ``wrk`` with 8
connections, and a victim's p50 on fresh connections while 120 connections hold half a
request each (``GET /healthz HTTP/1.1\\r\\nHost: 127`` and then nothing).
"""

from __future__ import annotations

import http.client
import os
import shutil
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from bench.http import (
    calls,
    free_port,
    postgres_answers,
    running,
    scratch_database,
    seed,
    serve,
    server_env,
    wrk,
)
from bench.http_load import Call, load

STALLED = 120
VICTIM_SECONDS = float(os.environ.get("BENCH_VICTIM_SECONDS", "10"))
GUNICORN = [
    "-k",
    "gthread",
    "--workers",
    "4",
    "--threads",
    "2",
    "--keep-alive",
    "5",
    "lens.wsgi:application",
]


GRANIAN_WSGI = [
    "--interface",
    "wsgi",
    "--workers",
    "2",
    "--blocking-threads",
    "2",
    "--no-ws",
    "--http",
    "1",
    "lens.wsgi:application",
]


@contextmanager
def started(command: str, args: list[str], env: dict[str, str], scratch: Path) -> Iterator[int]:
    """``command`` from the virtualenv on a free port, on a database ``make serve``
    prepared (migrated, static files collected)."""
    port = free_port()
    binary = str(Path(sys.executable).with_name(command))
    bind = (
        ["--bind", f"127.0.0.1:{port}"]
        if command == "gunicorn"
        else ["--host", "127.0.0.1", "--port", str(port)]
    )
    with running([binary, *bind, *args], port, {**env, "DB_POOL": "1"}, scratch):
        yield port


def victim(port: int) -> tuple[float | None, int, int]:
    """p50 (ms), answered and failed health checks on fresh connections, each allowed
    5 s, while STALLED connections each hold half a request."""
    latencies: list[float] = []
    failed = 0
    with ExitStack() as stack:
        for _ in range(STALLED):
            sock = stack.enter_context(socket.create_connection(("127.0.0.1", port)))
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127")
        time.sleep(0.5)
        deadline = time.monotonic() + VICTIM_SECONDS
        while time.monotonic() < deadline:
            began = time.perf_counter()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            try:
                connection.request("GET", "/healthz", headers={"Host": "127.0.0.1"})
                response = connection.getresponse()
                response.read()
                if response.status != 200:
                    raise OSError(response.status)
                latencies.append((time.perf_counter() - began) * 1000)
            except (OSError, http.client.HTTPException):
                failed += 1
            finally:
                connection.close()
    p50 = statistics.median(latencies) if latencies else None
    return p50, len(latencies), failed


def figures(port: int, read: Call, scratch: Path) -> str:
    one = load(port, read, 1, 400)
    for _ in range(2):
        one.add(load(port, read, 1, 400))
    throughput = (wrk(port, read, scratch) + wrk(port, read, scratch)) / 2
    p50, answered, failed = victim(port)
    stalled = (
        f"{p50:8.1f} ms ({answered} answered, {failed} failed)"
        if p50 is not None
        else f"no answer ({failed} failed)"
    )
    return f"{one.p50:6.2f} ms   {throughput:7.0f}/s   {stalled}"


def compare(kind: str, scratch: Path) -> None:
    title = "SQLite" if kind == "sqlite" else "PostgreSQL"
    with scratch_database(kind, scratch) as url:
        env = server_env(url, scratch)
        info = seed(env)
        read = calls(info)[0].ours
        print(f"\n{title}: GET /api/kv/<key> — 1 client p50 · wrk 8 connections · victim p50")
        print(f"  beside {STALLED} stalled connections ({VICTIM_SECONDS:g} s)")
        with serve(env, scratch) as port:
            print(f"  Granian (make serve)        {figures(port, read, scratch)}")
        with started("granian", GRANIAN_WSGI, env, scratch) as port:
            print(f"  Granian WSGI 2 x 2          {figures(port, read, scratch)}")
        with started("gunicorn", GUNICORN, env, scratch) as port:
            print(f"  gunicorn gthread 4 x 2      {figures(port, read, scratch)}")


def main() -> int:
    scratch = Path(tempfile.mkdtemp(prefix="lens-bench-servers-"))
    print("The production server, before (gunicorn gthread) and after (Granian)")
    try:
        for kind in ["sqlite"] + (["postgresql"] if postgres_answers() else []):
            compare(kind, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
