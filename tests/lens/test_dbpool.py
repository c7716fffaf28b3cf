"""The PostgreSQL pool's check of a connection it hands out (``lens.dbpool``): an empty
query only after a quiet spell or when the server has closed the connection; otherwise
nothing is sent."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from django.db import connection
from psycopg_pool import ConnectionPool

from lens import dbpool

pytestmark = pytest.mark.skipif(
    "connection.vendor != 'postgresql'", reason="PostgreSQL's connection pool"
)


@pytest.fixture
def conn(db: None) -> Iterator[psycopg.Connection[Any]]:
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    with psycopg.connect(**params, autocommit=True) as opened:
        yield opened


def sent(conn: psycopg.Connection[Any]) -> list[str]:
    """The statements the check sends to ``conn``."""
    queries: list[str] = []
    original = conn.execute

    def execute(query: Any, *args: Any, **kwargs: Any) -> Any:
        queries.append(str(query))
        return original(query, *args, **kwargs)

    conn.execute = execute  # type: ignore[method-assign]  # count the statements it sends
    dbpool.check_after_quiet(conn)
    conn.execute = original  # type: ignore[method-assign]  # and put it back
    return queries


def test_a_connection_in_use_is_handed_out_without_a_round_trip(
    conn: psycopg.Connection[Any],
) -> None:
    assert sent(conn) == [""]  # never checked before: checked
    assert sent(conn) == []  # a moment later: the socket is polled, nothing sent


def test_after_a_quiet_spell_it_is_checked_again(
    conn: psycopg.Connection[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    sent(conn)
    later = time.monotonic() + dbpool.QUIET_SECONDS + 1
    monkeypatch.setattr(time, "monotonic", lambda: later)
    assert sent(conn) == [""]


def test_a_connection_the_server_closed_fails_the_check(conn: psycopg.Connection[Any]) -> None:
    sent(conn)
    pid = conn.info.backend_pid
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    deadline = time.monotonic() + 5
    while not dbpool._has_input(conn) and time.monotonic() < deadline:
        time.sleep(0.01)
    # Within the quiet spell, yet the server's goodbye on the socket makes it check.
    with pytest.raises(psycopg.OperationalError):
        dbpool.check_after_quiet(conn)
    with pytest.raises(psycopg.OperationalError):
        dbpool.check_after_quiet(conn)  # now broken: refused without a word sent


def test_the_pool_django_builds_uses_it() -> None:
    pool = ConnectionPool(open=False, check=ConnectionPool.check_connection)
    dbpool.install(pool)
    assert pool._check is dbpool.check_after_quiet
    unchecked = ConnectionPool(open=False)
    dbpool.install(unchecked)  # Django asked for no checks (CONN_HEALTH_CHECKS off)
    assert unchecked._check is None


def test_the_pool_hands_out_the_connection_used_last_first() -> None:
    pool = ConnectionPool(open=False, check=ConnectionPool.check_connection)
    dbpool.install(pool)
    idle: deque[Any] = pool._pool  # what the pool keeps; plain objects stand in here
    first, second, third = object(), object(), object()
    for conn in (first, second, third):
        idle.append(conn)  # as the pool puts each one back, in turn
    assert idle.popleft() is third  # as the pool takes one out
    assert list(idle) == [second, first]
    dbpool.install(pool)  # installed again (another connection of the same pool)
    assert pool._pool is idle


def test_a_pooled_request_reuses_the_connection_it_returned(db: None) -> None:
    """Through Django's own pool: three connections open, one request after another
    gets the same one back."""
    pool = getattr(connection, "pool", None)  # PostgreSQL's wrapper has one
    if pool is None:
        pytest.skip("DB_POOL is off")
    held = [pool.getconn() for _ in range(3)]
    for conn in held:
        pool.putconn(conn)
    used = []
    for _ in range(3):
        conn = pool.getconn()
        used.append(conn)
        pool.putconn(conn)
    assert used == [held[-1]] * 3
