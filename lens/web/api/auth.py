"""Bearer-token authentication: a token belongs to one team and is stored hashed."""

from __future__ import annotations

from typing import cast

from django.db import connection
from django.http import HttpRequest
from ninja.security import HttpBearer

from lens.models import ApiToken, Team, hash_token


class ApiRequest(HttpRequest):
    """An API request once ``TeamToken`` let it in; API operations annotate with this.

    ninja sets ``auth`` to what ``authenticate`` returned; ``api_token`` is set there too.
    """

    auth: Team
    api_token: ApiToken


# Every API call checks its token: one indexed lookup by digest, as plain SQL. Building
# the same query through the ORM cost ten times the query itself. Nothing is cached, so a
# revoked token is refused from the next request on. Instances get the columns a request
# needs; the rest (times) are deferred and load if something reads them.
_TOKEN_COLUMNS = ("id", "team_id", "name", "prefix")
_TEAM_COLUMNS = ("id", "slug", "name")
_FIND_TOKEN = (
    "SELECT "
    + ", ".join([*(f"t.{c}" for c in _TOKEN_COLUMNS), *(f"m.{c}" for c in _TEAM_COLUMNS)])
    + f" FROM {ApiToken._meta.db_table} t JOIN {Team._meta.db_table} m ON m.id = t.team_id"
    " WHERE t.digest = %s AND t.revoked_at IS NULL"
)


def find_token(raw: str) -> ApiToken | None:
    """The live (not revoked) API token ``raw`` is, with its team, or None: a lookup of
    its digest. The API and the MCP server both check tokens with this."""
    if not raw:
        return None
    with connection.cursor() as cursor:
        cursor.execute(_FIND_TOKEN, [hash_token(raw)])
        row = cursor.fetchone()
    if row is None:
        return None
    split = len(_TOKEN_COLUMNS)
    token = ApiToken.from_db(connection.alias, _TOKEN_COLUMNS, row[:split])
    token.team = Team.from_db(connection.alias, _TEAM_COLUMNS, row[split:])
    return token


class TeamToken(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> Team | None:
        found = find_token(token)
        if found is None:
            return None
        # From here on the request is an ApiRequest: ninja sets ``auth`` to our answer.
        cast(ApiRequest, request).api_token = found  # for event actors
        return found.team


def team_of(request: ApiRequest) -> Team:
    """The team the request's token belongs to (set by ``TeamToken``)."""
    return request.auth


def token_of(request: ApiRequest) -> ApiToken:
    """The token that authenticated the request."""
    return request.api_token
