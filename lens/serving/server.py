"""The production server: Granian, Django behind its ASGI interface (``python -m
lens.serving.server``, what ``make serve`` runs; ``--dev`` is ``make run``'s configuration).

Why Granian. Its connections live in Rust (tokio): reading a request's headers and body
and writing the answer hold no Python thread, so a client that stalls, trickles its
headers or body a byte at a time, or never reads the answer costs the server a socket
and a timer, never one of the few threads that run Django. gunicorn's ``gthread``
reads headers on a Python thread with no timeout: 120 connections that sent half a
request and then nothing took ``make serve`` offline. Granian's WSGI mode still reads a
body on the request's thread (with no timeout, by design), so Django is served through
Granian's ASGI interface with the body read first (``lens/serving/buffered.py``).

Measured on one 2-core machine in one run (``make bench-http``, ``bench/servers.py``;
``GET /api/kv/<key>``, access logs off, the clients on the same cores):

    server                        db      1 client p50   wrk 8 conns   victim beside
                                                                       120 stalled conns
    gunicorn gthread 4 x 2        SQLite  2.23 ms        853/s         no answer
    Granian WSGI 2 x 2            SQLite  1.45 ms        1,476/s       p50 1.7 ms
    Granian ASGI + body first     SQLite  2.78 ms        1,026/s       p50 2.5 ms
    gunicorn gthread 4 x 2        PG      3.41 ms        565/s         no answer
    Granian WSGI 2 x 2            PG      2.95 ms        725/s         p50 2.0 ms
    Granian ASGI + body first     PG      3.50 ms        580/s         p50 2.6 ms

Granian's WSGI mode is faster, but two clients trickling bodies take a process of two
threads offline; the body-first front costs one more hand-off between threads.

Every setting below can be changed from the environment; defaults are for a 2-core
machine. Python runs one thread at a time per process, so processes (``WEB_CONCURRENCY``)
use the cores and a second request thread per process (``SERVER_THREADS``) overlaps
waits on the database.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from granian.constants import HTTPModes, Interfaces
from granian.http import HTTP1Settings
from granian.log import LogLevels
from granian.server import MPServer

from lens.envconf import env_int, env_str

ROOT = Path(__file__).resolve().parents[2]  # lens/serving/ -> the project


# A client has this long to send a request's headers (and, on a kept-alive connection,
# to start the next one): a stalled or trickling client costs a socket for 10 s at most.
HEADER_READ_TIMEOUT_MS = 10_000


APPLICATION = "lens.serving.served:application"


def _server(target: str = APPLICATION, **settings: Any) -> MPServer:
    """What both configurations share: Django behind Granian's ASGI interface, HTTP/1.1
    on ``HOST:PORT``, the header deadline. ``target``: the application (benchmarks
    serve a variant of it). The access log (``ACCESS_LOG``, one line per request on
    stdout) is the application's own (``lens/serving/buffered.py``): Granian's is off."""
    return MPServer(
        target,
        address=env_str("HOST", "127.0.0.1"),
        port=env_int("PORT", 8000, minimum=1),
        interface=Interfaces.ASGINL,
        http=HTTPModes.http1,
        websockets=False,
        http1_settings=HTTP1Settings(header_read_timeout=HEADER_READ_TIMEOUT_MS),
        log_level=LogLevels.info,
        log_access=False,
        working_dir=ROOT,
        **settings,
    )


def production(target: str = APPLICATION) -> MPServer:
    return _server(
        target,
        workers=env_int("WEB_CONCURRENCY", 2, minimum=1),
        backlog=env_int("SERVER_BACKLOG", 1024, minimum=128),
        # A worker that dies is replaced; each is recycled after WORKERS_LIFETIME seconds
        # (a new one starts first, the old one finishes its requests) or once it holds
        # more than WORKERS_MAX_RSS MiB, which bounds what any slow leak can take.
        respawn_failed_workers=True,
        respawn_interval=1.0,
        workers_lifetime=env_int("WORKERS_LIFETIME", 6 * 3600, minimum=60),
        workers_max_rss=env_int("WORKERS_MAX_RSS", 1024, minimum=1),
        # SIGTERM: stop accepting, finish what is running, then exit; a worker that has
        # not finished after 30 s is killed.
        workers_kill_timeout=30,
    )


def development() -> MPServer:
    """``make run``: DEBUG on, one process whose code reloads when a file changes."""
    # htmx sends a page's requests in parallel.
    os.environ.setdefault("SERVER_THREADS", "4")
    return _server(
        workers=1,
        reload=True,
        reload_paths=[ROOT / name for name in ("lens", "memory", "kvstore", "templates")],
        reload_ignore_dirs=["__pycache__", "migrations"],
    )


def main(argv: list[str]) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lens.settings")
    server = development() if "--dev" in argv else production()
    server.serve()


if __name__ == "__main__":
    main(sys.argv[1:])
