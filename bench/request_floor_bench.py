"""What one API call costs the server around the store, in process and with DEBUG off.

A key/value read and write go through Django's WSGI handler exactly as the server hands
them over (no test client, no network), beside the same operation on the store alone:
the difference is the request floor (token check, middleware, routing, JSON). Both
are also timed through the key/value store's own route (``web.api.kv_front``), as
the production server serves them, against Django's handler alone.
"""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Callable
from typing import Any

from django.core.handlers.wsgi import WSGIHandler
from django.db import connection
from django.test.utils import override_settings

from kvstore import store
from lens.models import ApiToken, Team
from web.api.kv_front import KvFront

_RUN = uuid.uuid4().hex[:8]
PAYLOAD = "Remember the user's time zone and units. " * 8


def _environ(method: str, path: str, token: str, body: bytes = b"") -> dict[str, Any]:
    return {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": "testserver",
        "HTTP_AUTHORIZATION": f"Bearer {token}",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body),
        "wsgi.url_scheme": "http",
        "wsgi.errors": io.StringIO(),
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }


def _call(
    handler: Callable[..., Any], method: str, path: str, token: str, body: bytes = b""
) -> None:
    statuses: list[str] = []

    def start_response(status: str, _headers: Any, _exc_info: Any = None) -> Any:
        statuses.append(status)
        return None

    b"".join(handler(_environ(method, path, token, body), start_response))
    if not statuses[0].startswith(("200", "201")):
        raise AssertionError(f"{method} {path}: {statuses[0]}")


def run(median_ms: Callable[..., float], report: Callable[..., None]) -> None:
    team = Team.objects.create(slug=f"bench-floor-{_RUN}", name="Bench request floor")
    _token, raw = ApiToken.objects.issue(team, "bench")
    store.write(team, "must.read", PAYLOAD)
    handler = WSGIHandler()
    put = json.dumps({"payload": PAYLOAD}).encode()
    print("\nThe request floor: one API call through the WSGI handler, DEBUG off")
    # DEBUG on would record every query; a served request never does.
    with override_settings(DEBUG=False):
        service_read = median_ms(lambda: store.read(team, "must.read"), 500) * 1000
        wsgi_read = median_ms(lambda: _call(handler, "GET", "/api/kv/must.read", raw), 500) * 1000
        front = KvFront(handler)
        front_read = median_ms(lambda: _call(front, "GET", "/api/kv/must.read", raw), 500) * 1000
        service_write = median_ms(lambda: store.write(team, "bench.put", PAYLOAD), 300) * 1000
        wsgi_write = (
            median_ms(lambda: _call(handler, "PUT", "/api/kv/bench.put", raw, put), 300) * 1000
        )
        front_write = (
            median_ms(lambda: _call(front, "PUT", "/api/kv/bench.put", raw, put), 300) * 1000
        )
        normal_write = _normal_write(team, median_ms) if connection.vendor == "sqlite" else None
    report("key/value read: store.read", service_read, unit="µs")
    report("key/value read: GET /api/kv/{key} through WSGI", wsgi_read, 500, unit="µs")
    report("key/value read: GET /api/kv/{key} through the front", front_read, 250, unit="µs")
    print(f"  the front against Django: {front_read / wsgi_read:.2f}× the time")
    report("key/value write: store.write", service_write, unit="µs")
    report("key/value write: PUT /api/kv/{key} through WSGI", wsgi_write, 2000, unit="µs")
    report("key/value write: PUT /api/kv/{key} through the front", front_write, unit="µs")
    print(f"  the front against Django: {front_write / wsgi_write:.2f}× the time")
    print(
        f"  around the store: read {wsgi_read - service_read:.0f} µs, "
        f"write {wsgi_write - service_write:.0f} µs"
    )
    if normal_write is not None:
        report("key/value write: store.write with synchronous=NORMAL", normal_write, unit="µs")
        print(
            f"  synchronous=FULL costs {service_write - normal_write:.0f} µs a write "
            f"({service_write / normal_write:.2f}×)"
        )


def _normal_write(team: Team, median_ms: Callable[..., float]) -> float:
    """``store.write`` in µs with SQLite's ``synchronous=NORMAL``, against the default
    ``FULL`` measured beside it."""
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA synchronous")
        (mode,) = cursor.fetchone()
        cursor.execute("PRAGMA synchronous=NORMAL")
    try:
        return median_ms(lambda: store.write(team, "bench.put", PAYLOAD), 300) * 1000
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA synchronous={int(mode)}")


def cleanup() -> None:
    Team.objects.filter(slug=f"bench-floor-{_RUN}").delete()
