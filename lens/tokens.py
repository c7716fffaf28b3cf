"""An API token's lookup by its digest, as plain SQL that other statements can join:
the API's authentication and the MCP server run it alone (``find_token``), and the
key/value read and write (``kvstore.store.read_as``, ``write_as``) join it to their own
statement, one round trip for both. Nothing is cached, so a revoked token is refused
from the next request on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection

from lens.models import ApiToken, Team, hash_token
from lens.sql import statement_cursor

# Instances get the columns a request needs; the rest (times) are deferred and load if
# something reads them.
_TOKEN_COLUMNS = ("id", "team_id", "name", "prefix")
_TEAM_COLUMNS = ("id", "slug", "name")

# How many leading columns of a row ``TOKEN_SELECT`` starts are the token's.
TOKEN_WIDTH = len(_TOKEN_COLUMNS) + len(_TEAM_COLUMNS)
# A live token and its team, by digest (the one parameter of ``TOKEN_WHERE``); a
# statement adds its own columns after these and its own joins after ``TOKEN_FROM``.
TOKEN_SELECT = "SELECT " + ", ".join(
    [*(f"t.{c}" for c in _TOKEN_COLUMNS), *(f"m.{c}" for c in _TEAM_COLUMNS)]
)
TOKEN_FROM = f" FROM {ApiToken._meta.db_table} t JOIN {Team._meta.db_table} m ON m.id = t.team_id"
TOKEN_WHERE = " WHERE t.digest = %s AND t.revoked_at IS NULL"


def token_from_row(row: Sequence[Any]) -> ApiToken:
    """The token (with its team) that a row's first ``TOKEN_WIDTH`` columns hold."""
    split = len(_TOKEN_COLUMNS)
    token = ApiToken.from_db(connection.alias, _TOKEN_COLUMNS, row[:split])
    token.team = Team.from_db(connection.alias, _TEAM_COLUMNS, row[split:TOKEN_WIDTH])
    return token


# Every API call checks its token: one indexed lookup by digest, as plain SQL (building
# the same query through the ORM cost ten times the query itself).
_FIND_TOKEN = TOKEN_SELECT + TOKEN_FROM + TOKEN_WHERE


def find_token(raw: str) -> ApiToken | None:
    """The live (not revoked) API token ``raw`` is, with its team, or None: a lookup of
    its digest. The API and the MCP server both check tokens with this."""
    if not raw:
        return None
    with statement_cursor() as cursor:
        cursor.execute(_FIND_TOKEN, [hash_token(raw)])
        row = cursor.fetchone()
    return None if row is None else token_from_row(row)
