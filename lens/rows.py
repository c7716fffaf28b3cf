"""Rows as the database returns them, for the reads that take thousands at a time.

The ORM runs a converter per value (a JSON decode, a timestamp parse, a time zone):
for the few hundred thousand values a composition reads that was most of its loading
time. These helpers run a queryset's own SQL (its filters, joins and order stay the
ORM's) and leave the conversion to the caller, who does it in bulk.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db import connections
from django.db.models import QuerySet
from django.utils.dateparse import parse_datetime


def raw_rows(queryset: QuerySet[Any, Any]) -> list[tuple[Any, ...]]:
    """The rows of a ``values_list`` queryset, unconverted: JSON columns as their text
    (both backends), timestamps as SQLite's text or PostgreSQL's aware datetimes."""
    try:
        sql, params = queryset.query.get_compiler(using=queryset.db).as_sql()
    except EmptyResultSet:  # e.g. ``__in=[]``: the ORM runs no query for it either
        return []
    with connections[queryset.db].cursor() as cursor:
        cursor.execute(sql, params)
        # Both backends' default row factory makes each row a tuple.
        rows: list[tuple[Any, ...]] = cursor.fetchall()
        return rows


def aware(value: datetime | str) -> datetime:
    """A stored timestamp as an aware UTC datetime: SQLite hands back text, PostgreSQL
    an aware datetime; both hold UTC."""
    if isinstance(value, str):
        parsed = parse_datetime(value)
        if parsed is None:
            raise ValueError(f"unreadable timestamp: {value!r}")
        value = parsed
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def json_values(texts: Sequence[str | None]) -> list[Any]:
    """Stored JSON texts as values, decoded in one call as one JSON array (``None``, a
    SQL NULL, stays ``None``)."""
    present = [text for text in texts if text is not None]
    values = iter(decode_values(present))
    return [None if text is None else next(values) for text in texts]


def decode_values(texts: Sequence[str]) -> list[Any]:
    """Stored JSON texts as values, decoded in one call as one JSON array.

    Each text is one JSON value (SQLite's JSON_VALID check and PostgreSQL's jsonb see to
    it), so the joined array holds exactly one value per text; the count guards that.
    The standard library decodes: orjson would read an integer beyond 64 bits as a
    float, and a stored integer must come back as the same integer.
    """
    if not texts:
        return []
    try:
        values = json.loads("[" + ",".join(texts) + "]")
    except ValueError:
        values = None
    if isinstance(values, list) and len(values) == len(texts):
        return values
    return [_decode_one(text) for text in texts]


def _decode_one(text: str) -> Any:
    # JSONField.from_db_value's rule: text that is not JSON is read as itself.
    try:
        return json.loads(text)
    except ValueError:
        return text
