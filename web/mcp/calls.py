"""What every MCP call shares, tool, resource or prompt: who calls (the API token of the
call), the two error envelopes no operation raises (an unknown or revoked token, a
crash), and the arguments refused before anything runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lens.api_tokens import find_token
from lens.core.errors import DomainError, error_body, invalid_input
from lens.core.text import unstorable_path
from lens.models import ApiToken


class Unauthorized(DomainError):
    """The call's token is unknown or was revoked (over stdio, where it is checked on
    every call; over HTTP such a request never gets this far: 401)."""

    code = "unauthorized"


UNAUTHORIZED = Unauthorized("The API token is unknown or was revoked.").envelope()
INTERNAL_ERROR = error_body("internal_error", "An unexpected error occurred.")  # as the API


# Who calls: over stdio the raw ``LENS_TOKEN``, looked up again on every call (so a
# revoked token stops at once); over HTTP the token the request's bearer check found, a
# moment earlier in the same request (one lookup per request, as the API does).
Caller = ApiToken | str | None


def caller_token(caller: Caller) -> ApiToken | None:
    """The live API token of the caller, or None (in a pool thread: it may query)."""
    return caller if isinstance(caller, ApiToken) else find_token(caller or "")


def refused_arguments(
    arguments: Mapping[str, Any], parameters: frozenset[str]
) -> DomainError | None:
    """Why the arguments are refused before the SDK sees them, or None: a name the tool
    (or prompt) does not have (the API refuses unknown fields too), or text no database stores
    (NUL, unpaired surrogates), refused alike on every backend."""
    if unknown := sorted(set(arguments) - parameters):
        return invalid_input((name, "Extra inputs are not permitted") for name in unknown)
    if (found := unstorable_path(dict(arguments))) is not None:
        path, why = found
        return invalid_input([(".".join(map(str, path)), why)])
    return None
