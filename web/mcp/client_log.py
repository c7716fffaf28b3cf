"""``logging/setLevel``: the level of the log messages (``notifications/message``) a
client wants from this server, kept for its connection.

The protocol's handshake era (up to ``2025-11-25``) has the client set the level once
and the server send log messages at or above it for the rest of the connection; the
newer era (``2026-07-28``) dropped the method and has each request carry its own level,
which the SDK applies itself. So the level is kept in the connection's state, which
lasts as long as the connection: over stdio, the whole session; over streamable HTTP,
which is stateless, the one POST that carried it.

The server sends no log messages today (what goes wrong reaches the client as a tool
error or a JSON-RPC error, and the server's own log); a message it sends later goes
through ``sends`` first. A level the protocol does not name is refused by the SDK's
validation of the request, before the handler runs: ``-32602``, invalid params.
"""

from __future__ import annotations

from typing import Any, Final, get_args

from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp_types import EmptyResult, LoggingLevel, SetLevelRequestParams

METHOD = "logging/setLevel"
# Least to most severe (RFC 5424), as the protocol lists them.
LEVELS: Final[tuple[LoggingLevel, ...]] = get_args(LoggingLevel)
_STATE_KEY = "composition_lens.log_level"


def _connection(ctx: ServerRequestContext[Any, Any]) -> Connection:
    # The SDK hands a request handler a per-request session over the connection;
    # what must outlive the request goes in the connection's own state.
    connection: Connection = ctx.session._connection
    return connection


def level_of(connection: Connection) -> LoggingLevel | None:
    """The level the client set on this connection (None: it set none)."""
    level = connection.state.get(_STATE_KEY)
    return level if level in LEVELS else None


def sends(connection: Connection, level: LoggingLevel) -> bool:
    """Whether a log message at ``level`` goes to this connection's client: at or above
    the level it set; before it sets one, warnings and worse (the protocol leaves the
    default to the server)."""
    floor = level_of(connection) or "warning"
    return LEVELS.index(level) >= LEVELS.index(floor)


async def set_level(
    ctx: ServerRequestContext[Any, Any], params: SetLevelRequestParams
) -> EmptyResult:
    """Keep the level for the connection; the answer is empty, as the protocol says."""
    _connection(ctx).state[_STATE_KEY] = params.level
    return EmptyResult()
