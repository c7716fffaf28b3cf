"""A cursor for the few statements every request runs (the token check, the key/value
read and write, the audit append and the webhook endpoints' lookup that ride on every
change), which PostgreSQL may keep prepared.

Django's PostgreSQL cursors bind parameters on the client: each statement reaches the
server as new text, to be parsed and planned again. On PostgreSQL this cursor binds on
the server, so psycopg prepares a statement once it has run ``prepare_threshold`` times
on a connection (``DB_PREPARE_THRESHOLD``, ``lens/settings.py``) and from then on sends
only its parameters. It is still Django's cursor wrapper: errors are Django's, queries
are logged and counted as any other. On SQLite it is Django's ordinary cursor (Python's
sqlite3 already keeps a cache of prepared statements per connection).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection
from django.db.backends.utils import CursorDebugWrapper, CursorWrapper


@contextmanager
def statement_cursor() -> Iterator[CursorWrapper]:
    """A cursor of the default connection whose ``%s`` statements the server may prepare."""
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            yield cursor
        return
    from django.db.backends.postgresql.base import ServerBindingCursor

    # What ``connection.cursor()`` does before it makes a cursor, with a server-binding one.
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    connection.validate_thread_sharing()
    # Typed loosely: the stubs describe neither this class nor a raw cursor being wrapped.
    binding: Any = ServerBindingCursor
    with connection.wrap_database_errors:
        raw = binding(connection.connection)
    cursor = (
        _LoggedStatements(raw, connection)
        if connection.queries_logged
        else connection.make_cursor(raw)
    )
    with cursor:
        yield cursor


class _LoggedStatements(CursorDebugWrapper):
    """Django's debug cursor, logging a statement's own text with its parameters: for a
    statement bound on the server psycopg keeps no client-side text, so Django's would
    log None."""

    def execute(self, sql: Any, params: Any = None) -> Any:
        with self.debug_sql(_composed(sql, params), params):
            return super(CursorDebugWrapper, self).execute(sql, params)


def _composed(sql: str, params: Any) -> str:
    ops: Any = connection.ops  # PostgreSQL's: compose_sql is not on the base class
    try:
        return str(ops.compose_sql(sql, params))
    except Exception:
        return sql  # a value the client-side composer cannot write: the text as sent
