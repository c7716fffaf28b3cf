"""The PostgreSQL pool's check of a connection before a request uses it, without a round
trip while the connection is busy.

Django's pool (``DB_POOL=1``) checks every connection it hands out with an empty query
(``ConnectionPool.check_connection``, installed when ``CONN_HEALTH_CHECKS`` is on): one
of the three round trips of a key/value read. A connection that went back to the pool
a moment ago was working a moment ago; what can have happened since is that the server
closed it (a restart, ``pg_terminate_backend``, a pooler going away). The server then
says so on the socket (an error message and the end of the stream), so the socket has
something to read while the connection is idle, which a non-blocking ``poll`` sees in
microseconds. Here a connection is sent the empty query only when its socket has
something to read, or when it has not been handed out for ``QUIET_SECONDS`` (a silent
network failure, where the check is the only way to tell); otherwise it is handed out
as it is. A connection that fails anyway during a request is marked broken by psycopg
and discarded when it goes back to the pool.

The pool also hands out the connection that came back last (``_HotFirst``).
psycopg_pool hands them out in turn, oldest first, so with two or three idle in a
process each request reached a different server process, one that had been waiting
longest: a key/value read's statement took 70-85 µs that way against 40-55 µs on the
connection used a moment earlier (``docs/performance.md``). The ones not needed stay
idle at the far end, where the pool's shrinking finds them unused.
"""

from __future__ import annotations

import select
import time
from collections import deque
from typing import Any

from django.db.backends.signals import connection_created
from psycopg import Connection, OperationalError
from psycopg_pool import ConnectionPool

# A connection handed out again within this many seconds skips the empty query (the
# socket is still polled). Under load each one comes back within milliseconds.
QUIET_SECONDS = 5.0

_LAST_USE = "_lens_last_checked_out"


def check_after_quiet(conn: Connection[Any]) -> None:
    """The pool's ``check``: raises if ``conn`` should not be handed out."""
    if conn.closed or conn.broken:
        raise OperationalError("the connection is closed")
    now = time.monotonic()
    last = getattr(conn, _LAST_USE, None)
    if last is None or now - last >= QUIET_SECONDS or _has_input(conn):
        ConnectionPool.check_connection(conn)
    setattr(conn, _LAST_USE, now)


def _has_input(conn: Connection[Any]) -> bool:
    """Whether the server sent something to an idle connection (a closed stream too)."""
    poller = select.poll()
    poller.register(conn.pgconn.socket, select.POLLIN | select.POLLERR | select.POLLHUP)
    return bool(poller.poll(0))


class _HotFirst(deque[Any]):
    """The pool's idle connections with the one that came back last first: psycopg_pool
    takes from the left (``popleft``) and puts back on the right (``append``), so here
    ``append`` puts back on the left."""

    def append(self, conn: Any) -> None:
        self.appendleft(conn)


def install(pool: ConnectionPool[Any]) -> None:
    """Use ``check_after_quiet`` in place of the empty query on every checkout, where
    Django asked for checks, and hand out the connection used last first. psycopg_pool
    takes ``check`` only at construction, which Django does itself, so both are
    replaced on the pool."""
    if getattr(pool, "_check", None) is ConnectionPool.check_connection:
        pool._check = check_after_quiet
    idle = getattr(pool, "_pool", None)
    if isinstance(idle, deque) and not isinstance(idle, _HotFirst):
        with pool._lock:
            pool._pool = _HotFirst(pool._pool)


def _on_connection(sender: object, connection: Any, **kwargs: object) -> None:
    # Django builds its pool lazily and again after settings change (tests): each
    # connection taken from a pool makes sure that pool checks this way.
    if connection.vendor == "postgresql" and connection.pool is not None:
        install(connection.pool)


connection_created.connect(_on_connection, dispatch_uid="lens.dbpool")
