"""Bearer-token authentication: a token belongs to one team and is stored hashed."""

from __future__ import annotations

from typing import cast

from django.http import HttpRequest
from ninja.security import HttpBearer

from lens.models import ApiToken, Team, hash_token


class ApiRequest(HttpRequest):
    """An API request once ``TeamToken`` let it in; API operations annotate with this.

    ninja sets ``auth`` to what ``authenticate`` returned; ``api_token`` is set there too.
    """

    auth: Team
    api_token: ApiToken


def find_token(raw: str) -> ApiToken | None:
    """The live (not revoked) API token ``raw`` is, with its team, or None: a lookup of
    its digest. The API and the MCP server both check tokens with this."""
    if not raw:
        return None
    return (
        ApiToken.objects.select_related("team")
        .filter(digest=hash_token(raw), revoked_at__isnull=True)
        .first()
    )


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
