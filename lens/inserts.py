"""New rows written as plain INSERTs, several in one statement on PostgreSQL.

A change that writes a few rows of different tables (a memory save writes its record,
search document, promotion row and events) paid a round trip per row, and the ORM's
insert machinery cost more than the statements. Here the columns come from the models
(every concrete field but an auto-incremented key, each value prepared by its own
field as the ORM prepares it), so a field added to a model is written here too. On
PostgreSQL the inserts go as one statement, each but the last a data-modifying ``WITH``
query: constraints, unique indexes and triggers apply to them exactly as to separate
statements (foreign keys are checked at the commit, as Django declares them).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

from django.db import connection, models
from django.db.models.fields import Field

from lens.sql import statement_cursor


@cache
def _fields(model: type[models.Model]) -> tuple[Field[Any, Any], ...]:
    return tuple(
        field
        for field in model._meta.concrete_fields
        if not getattr(field, "db_returning", False)  # an auto-incremented key
    )


@cache
def _columns(model: type[models.Model]) -> str:
    # A concrete field always has its column.
    return ", ".join(connection.ops.quote_name(str(field.column)) for field in _fields(model))


def _insert(objs: Sequence[models.Model]) -> tuple[str, list[Any]]:
    model = type(objs[0])
    fields = _fields(model)
    columns = _columns(model)
    row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    params: list[Any] = []
    for obj in objs:
        params += [
            field.get_db_prep_save(field.pre_save(obj, True), connection) for field in fields
        ]
    values = ", ".join([row] * len(objs))
    return f"INSERT INTO {model._meta.db_table} ({columns}) VALUES {values}", params


def insert_rows(groups: Sequence[Sequence[models.Model]]) -> None:
    """Insert each group's instances (one model per group, in the order given), in the
    caller's transaction: one statement on PostgreSQL, one per group elsewhere. Keys the
    database generates are not read back."""
    statements = [_insert(objs) for objs in groups if objs]
    if not statements:
        return
    with statement_cursor() as cursor:
        if connection.vendor != "postgresql":
            for sql, params in statements:
                cursor.execute(sql, params)
            return
        *leading, (last, last_params) = statements
        ctes = ", ".join(f"w{n} AS ({sql})" for n, (sql, _params) in enumerate(leading))
        params = [param for _sql, ps in leading for param in ps]
        cursor.execute(f"WITH {ctes} {last}" if leading else last, [*params, *last_params])


def insert_statement(obj: models.Model) -> tuple[str, list[Any]]:
    """``obj``'s ``INSERT`` and its parameters, to send with another statement
    (``lens.audit.append``'s ``first``)."""
    return _insert([obj])


def insert_unless_taken(statement: tuple[str, Sequence[Any]]) -> bool:
    """Run ``statement`` (an ``insert_statement``) unless a row already has one of its
    unique values: whether its row was written."""
    sql, params = statement
    with statement_cursor() as cursor:
        cursor.execute(sql + " ON CONFLICT DO NOTHING", params)
        return bool(cursor.rowcount == 1)
