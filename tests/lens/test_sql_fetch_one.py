"""``lens.sql.fetch_one`` answers as a statement through Django's cursor answers, on
psycopg's own cursor where nothing watches the statements (PostgreSQL, no query log),
and through Django's cursor where something does; its errors are Django's."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import DatabaseError, connection, transaction
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext

from kvstore import store
from kvstore.store import _LATEST_AS
from lens.api_tokens import find_token
from lens.models import ApiToken, Team, hash_token
from lens.sql import fetch_one, statement_cursor

pytestmark = pytest.mark.django_db


def through_django(sql: str, params: list[Any]) -> tuple[Any, ...] | None:
    with statement_cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return None if row is None else tuple(row)


@pytest.fixture
def unlogged(settings: Any) -> None:
    """Statements not logged, as in a served process (DEBUG off)."""
    settings.DEBUG = False
    assert not connection.queries_logged


def test_a_row_and_no_row_are_what_django_reads(team: Team, unlogged: None) -> None:
    _token, raw = ApiToken.objects.issue(team)
    store.write(team, "must.a", "one ☃")
    for params in (["must.a", hash_token(raw)], ["must.b", hash_token(raw)]):
        for _ in range(7):  # past the threshold at which the statement is prepared
            row = fetch_one(_LATEST_AS, params)
            assert row == through_django(_LATEST_AS, params)
        assert isinstance(row, tuple)
    assert fetch_one(_LATEST_AS, ["must.a", hash_token("cl_nobody")]) is None
    read = store.read_as(raw, "must.a")
    assert read is not None
    assert read.value().payload == "one ☃"
    found = find_token(raw)
    assert found is not None
    assert found.team == team


def test_a_logged_statement_is_logged(team: Team) -> None:
    _token, raw = ApiToken.objects.issue(team)
    with CaptureQueriesContext(connection) as queries:
        assert find_token(raw) is not None
    assert len(queries.captured_queries) == 1
    assert queries.captured_queries[0]["sql"]


def test_an_error_is_djangos(unlogged: None) -> None:
    with pytest.raises(DatabaseError), transaction.atomic():
        fetch_one("SELECT * FROM no_such_table WHERE id = %s", [1])


def test_a_broken_transaction_is_refused_as_django_refuses_it(unlogged: None) -> None:
    with transaction.atomic():
        transaction.set_rollback(True)
        with pytest.raises(TransactionManagementError):
            fetch_one("SELECT 1 WHERE 1 = %s", [1])
        with pytest.raises(TransactionManagementError), statement_cursor() as cursor:
            cursor.execute("SELECT 1 WHERE 1 = %s", [1])
