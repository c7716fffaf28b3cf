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

``fetch_one`` runs one such statement for its one row: the token check, the key/value
read. Where nothing watches the statements (no query log, no execute wrapper) it runs
it on the driver's own cursor, without Django's cursor wrapper around it: about 20 µs
of a key/value read's 75 on PostgreSQL, 15 of 23 on SQLite (``docs/performance.md``).
Errors are still Django's, and the rows the same: Django's cursors are the driver's,
with the same connection's adapters (on SQLite, Django's cursor only rewrites ``%s``
as ``?``, done here once per statement).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections
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


def fetch_one(sql: str, params: Sequence[Any]) -> tuple[Any, ...] | None:
    """The first row of ``sql`` (``%s`` parameters) on the default connection, or None;
    a statement the server may keep prepared, as with ``statement_cursor``."""
    db: Any = connections[DEFAULT_DB_ALIAS]  # this thread's: looked up once
    if db.queries_logged or db.execute_wrappers:
        with statement_cursor() as cursor:
            cursor.execute(sql, params)
            row = cursor.fetchone()
        return None if row is None else tuple(row)
    # What ``statement_cursor`` and the wrapper's ``execute`` check first.
    db.close_if_health_check_failed()
    db.ensure_connection()
    db.validate_thread_sharing()
    db.validate_no_broken_transaction()
    found: tuple[Any, ...] | None
    if db.vendor == "postgresql":
        from psycopg import Cursor

        with db.wrap_database_errors, Cursor(db.connection) as cursor:
            cursor.execute(sql, params)
            found = cursor.fetchone()
        return found
    with db.wrap_database_errors:
        found = db.connection.execute(_qmarks(sql), params).fetchone()
    return found


_QMARKS: dict[str, str] = {}


def _qmarks(sql: str) -> str:
    """``sql`` with SQLite's ``?`` for ``%s``, as Django's SQLite cursor rewrites it."""
    found = _QMARKS.get(sql)
    if found is None:
        from django.db.backends.sqlite3.base import FORMAT_QMARK_REGEX

        found = _QMARKS[sql] = FORMAT_QMARK_REGEX.sub("?", sql).replace("%%", "%")
    return found


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
