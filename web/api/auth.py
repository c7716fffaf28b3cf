"""Bearer-token authentication: a token belongs to one team and is stored hashed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, cast

from django.http import HttpRequest
from ninja.security import HttpBearer

from lens.api_tokens import find_token
from lens.core.config import is_agent_slug
from lens.models import ApiToken, Team


class ApiRequest(HttpRequest):
    """An API request once ``TeamToken`` let it in; API operations annotate with this.

    ninja sets ``auth`` to what ``authenticate`` returned; ``api_token`` is set there too.
    """

    auth: Team
    api_token: ApiToken


# How a route finds the token a request carries: ``find_token``, or a lookup that also
# does the route's own reading in the same statement (the key/value read).
TokenLookup = Callable[[HttpRequest, str], ApiToken | None]


class _WithToken(Protocol):
    @property
    def token(self) -> ApiToken: ...


def with_agent_reads(read: Callable[[str, str], _WithToken | None], attribute: str) -> TokenLookup:
    """A lookup that checks the token and reads the path's agent (with what the route
    needs of it) in one statement, ``read(raw, slug)``, and leaves what it read on the
    request as ``attribute`` for the operation. A path whose slug no agent can have has
    its token checked alone, and the operation refuses it, as for any other route."""

    def lookup(request: HttpRequest, raw: str) -> ApiToken | None:
        match = request.resolver_match
        slug = str(match.kwargs.get("slug", "")) if match is not None else ""
        if not is_agent_slug(slug):
            return find_token(raw)
        found = read(raw, slug)
        if found is None:
            return None
        setattr(request, attribute, found)
        return found.token

    return lookup


class TeamToken(HttpBearer):
    def __init__(self, lookup: TokenLookup | None = None) -> None:
        super().__init__()
        self.lookup = lookup

    def authenticate(self, request: HttpRequest, token: str) -> Team | None:
        found = find_token(token) if self.lookup is None else self.lookup(request, token)
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
