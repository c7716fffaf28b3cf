"""Bearer-token authentication: a token belongs to one team and is stored hashed."""

from __future__ import annotations

from django.http import HttpRequest
from ninja.security import HttpBearer

from lens.models import ApiToken, Team, hash_token


class TeamToken(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> Team | None:
        if not token:
            return None
        found = (
            ApiToken.objects.select_related("team")
            .filter(digest=hash_token(token), revoked_at__isnull=True)
            .first()
        )
        if found is None:
            return None
        request.api_token = found  # type: ignore[attr-defined]  # for event actors
        return found.team


def team_of(request: HttpRequest) -> Team:
    """The team the request's token belongs to (set by ``TeamToken``)."""
    return request.auth  # type: ignore[attr-defined,no-any-return]


def token_of(request: HttpRequest) -> ApiToken:
    """The token that authenticated the request."""
    return request.api_token  # type: ignore[attr-defined,no-any-return]
