"""An API token's lookup by its digest, as plain SQL that other statements can join:
the API's authentication and the MCP server run it alone (``find_token``), and the
key/value read and write (``kvstore.store.read_as``, ``write_as``) join it to their own
statement, one round trip for both. Nothing is cached, so a revoked token is refused
from the next request on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection

from lens.models import ApiToken, Team, hash_token
from lens.sql import fetch_one

# Instances get the columns a request needs; the rest (times) are deferred and load if
# something reads them. ``user_id``: the person a token belongs to (SPEC §14 "Whose
# token"), whose name comes in the same row, so that the actor a change is attributed
# to costs no second query. In the model's field order: ``Model.from_db`` reads the
# values in that order, whatever order the names are given in.
_TOKEN_COLUMNS = ("id", "team_id", "user_id", "name", "prefix")
_TEAM_COLUMNS = ("id", "slug", "name")
_USER_COLUMNS = ("username",)

# How many leading columns of a row ``TOKEN_SELECT`` starts are the token's.
TOKEN_WIDTH = len(_TOKEN_COLUMNS) + len(_TEAM_COLUMNS) + len(_USER_COLUMNS)
# A live token, its team and its person, by digest (the one parameter of
# ``TOKEN_WHERE``); a statement adds its own columns after these and its own joins after
# ``TOKEN_FROM``.
TOKEN_SELECT = "SELECT " + ", ".join(
    [
        *(f"t.{c}" for c in _TOKEN_COLUMNS),
        *(f"m.{c}" for c in _TEAM_COLUMNS),
        *(f"u.{c}" for c in _USER_COLUMNS),
    ]
)
_USER_TABLE = get_user_model()._meta.db_table
TOKEN_FROM = (
    f" FROM {ApiToken._meta.db_table} t JOIN {Team._meta.db_table} m ON m.id = t.team_id"
    f" LEFT JOIN {_USER_TABLE} u ON u.id = t.user_id"
)
# A person's token works while its person is active: deactivating someone stops every
# token they hold at once (a service token has no person to deactivate).
TOKEN_WHERE = " WHERE t.digest = %s AND t.revoked_at IS NULL AND (t.user_id IS NULL OR u.is_active)"


def token_from_row(row: Sequence[Any]) -> ApiToken:
    """The token (with its team, and its person if any) that a row's first
    ``TOKEN_WIDTH`` columns hold."""
    split = len(_TOKEN_COLUMNS)
    team_end = split + len(_TEAM_COLUMNS)
    token = ApiToken.from_db(connection.alias, _TOKEN_COLUMNS, row[:split])
    token.team = Team.from_db(connection.alias, _TEAM_COLUMNS, row[split:team_end])
    if token.user_id is not None:
        # Only its id and name: what an actor needs (``lens.actors.Actor.for_token``).
        token.user = get_user_model().from_db(
            connection.alias, ("id", *_USER_COLUMNS), (token.user_id, *row[team_end:TOKEN_WIDTH])
        )
    return token


# Every API call checks its token: one indexed lookup by digest, as plain SQL (building
# the same query through the ORM cost ten times the query itself).
_FIND_TOKEN = TOKEN_SELECT + TOKEN_FROM + TOKEN_WHERE


def find_token(raw: str) -> ApiToken | None:
    """The live (not revoked) API token ``raw`` is, with its team, or None: a lookup of
    its digest. The API and the MCP server both check tokens with this."""
    if not raw:
        return None
    row = fetch_one(_FIND_TOKEN, [hash_token(raw)])
    return None if row is None else token_from_row(row)
