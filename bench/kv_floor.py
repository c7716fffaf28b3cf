"""The floor under a key/value read (``make bench-http`` runs it beside ``bench.http``'s
get, on the same scratch database, in a process of its own).

The statement a ``GET /api/kv/{key}`` runs (``kvstore.store.read_as``: the token's check
and the read in one) is timed in layers, one client, p50 over ``FLOOR_CALLS`` calls
each, all in this process:

- the driver alone: psycopg (or sqlite3) on one connection of its own, the statement
  prepared, as tight as Python issues it;
- the store's read: ``store.read_as`` on Django's connection, held between calls;
- the served application in process: the production WSGI application (the key/value
  route in front of Django) called with a request's environ, the connection checked
  out of the pool and back around it as in a served request.

``bench.http`` prints them beside the same get over HTTP: what is left above the
served application is the way in and out of the server (Granian, the event loop, the
hand-off to a request thread and back).
"""

from __future__ import annotations

import io
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lens.settings")

FLOOR_CALLS = int(os.environ.get("BENCH_FLOOR_CALLS", "2000"))


def p50_us(call: Callable[[], object], calls: int = FLOOR_CALLS) -> float:
    for _ in range(min(200, calls)):
        call()  # warm: prepared statements, caches
    samples = []
    for _ in range(calls):
        began = time.perf_counter()
        call()
        samples.append(time.perf_counter() - began)
    return statistics.median(samples) * 1e6


def driver_read(url: str, sql: str, params: list[Any]) -> Callable[[], object]:
    """One call of the statement on a connection of the driver's own."""
    if url.startswith("sqlite"):
        import sqlite3

        connection = sqlite3.connect(url.split("sqlite:///", 1)[1], isolation_level=None)
        text = sql.replace("%s", "?")

        def sqlite_read() -> object:
            return connection.execute(text, params).fetchone()

        return sqlite_read
    import psycopg

    pg = psycopg.connect(url.replace("postgres://", "postgresql://", 1), autocommit=True)

    def pg_read() -> object:
        return pg.execute(sql, params, prepare=True).fetchone()

    return pg_read


def environ(path: str, token: str) -> dict[str, Any]:
    """A served request's environ (``lens.serving.buffered.wsgi_environ``'s keys)."""
    return {
        "REQUEST_METHOD": "GET",
        "SCRIPT_NAME": "",
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "CONTENT_LENGTH": "0",
        "HTTP_HOST": "127.0.0.1:8000",
        "HTTP_AUTHORIZATION": f"Bearer {token}",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(b""),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }


def measure(token: str, key: str) -> dict[str, float]:
    import django

    django.setup()
    from django.conf import settings
    from django.utils.module_loading import import_string

    from kvstore import store
    from kvstore.store import _LATEST_AS
    from lens.models import hash_token

    url = os.environ["DATABASE_URL"]
    read = driver_read(url, _LATEST_AS, [key, hash_token(token)])
    assert read() is not None, "the key or token is missing"
    figures = {"driver": p50_us(read)}

    def store_read() -> object:
        found = store.read_as(token, key)
        assert found is not None
        return found.value()

    figures["store"] = p50_us(store_read)
    from django.core.wsgi import get_wsgi_application
    from django.db import connections

    connections.close_all()  # from here on, each request checks a connection out and in
    application = import_string(settings.API_FRONT)(get_wsgi_application())
    statuses: list[str] = []

    def served() -> object:
        del statuses[:]
        answer = b"".join(
            application(environ(f"/api/kv/{key}", token), lambda s, h, e=None: statuses.append(s))
        )
        assert statuses[0].startswith("200"), answer
        return answer

    figures["served"] = p50_us(served)
    return figures


if __name__ == "__main__":
    print(json.dumps(measure(sys.argv[1], sys.argv[2])))
