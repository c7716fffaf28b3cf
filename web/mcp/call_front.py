"""One MCP tool call over streamable HTTP, answered without the SDK's per-request
session: the request the MCP server gets most (``docs/performance.md``).

The server is stateless, so for each POST the SDK builds a whole session: a transport
with its memory streams, a task that runs a JSON-RPC dispatcher over them, and the
hand-offs between them, which cost a ``kv_store read`` more than the read itself. A
single ``tools/call`` needs none of that: it is one request in and one response out.

This front sits where the SDK's session manager starts, behind everything in front of
it (the bearer check and its 401, the body limit and its 413), and answers a
``tools/call`` by running the SDK's own single-request path (``serve_one``: the
arguments' validation, the server's middleware, the tool, the result's shape) with the
same protocol version, request metadata and error mapping the session would have used,
and writes the same JSON the session writes. Anything else goes to the session manager
untouched, the body handed back as it came: another method, a notification, a batch,
a body that is not JSON-RPC, a protocol version of the newer, sessionless era (the SDK
serves those without a session already), and a request the transport would refuse
(the Host or Origin check, the Accept or Content-Type header).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import pydantic_core
from mcp.server.connection import Connection
from mcp.server.lowlevel.server import Server
from mcp.server.runner import serve_one
from mcp.server.streamable_http import CONTENT_TYPE_JSON, check_accept_headers
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecurityMiddleware
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp.shared.message import MessageMetadata, ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import (
    DEFAULT_NEGOTIATED_VERSION,
    ErrorData,
    JSONRPCError,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
    jsonrpc_message_adapter,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

logger = logging.getLogger(__name__)

METHOD = "tools/call"
_VERSION_HEADER = MCP_PROTOCOL_VERSION_HEADER.lower().encode("ascii")


@dataclass
class _OneCall:
    """The dispatch context of one call on a stateless, JSON-answering transport, as
    the SDK's session gives it: nothing can be sent back to the client but the answer
    (a server request has no reply to land on; a notification has no wire)."""

    transport: TransportContext
    request_id: RequestId
    message_metadata: MessageMetadata
    cancel_requested: anyio.Event = field(default_factory=anyio.Event)
    can_send_request: bool = field(default=False, init=False)

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> None:
        return None

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        return None


class CallFront:
    """ASGI, in front of the SDK's stateless session manager (``app``)."""

    def __init__(self, app: ASGIApp, server: Server[Any], manager: StreamableHTTPSessionManager):
        self.app = app
        self._server = server
        self._manager = manager
        self._security = TransportSecurityMiddleware(manager.security_settings)
        self.answered = 0  # how many calls it answered itself (for tests and benchmarks)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        version = protocol_version(scope)
        request = Request(scope, receive)
        if version is None or not await self.transport_takes(request):
            await self.app(scope, receive, send)
            return
        message = await receive()
        call = tool_call(message)
        if call is None:
            await self.app(scope, replaying(message, receive), send)
            return
        answer = await self._answer(call, request, version)
        self.answered += 1
        await answer(scope, receive, send)

    async def transport_takes(self, request: Request) -> bool:
        """Whether the SDK's transport would read this request's body: its Host, Origin
        and Content-Type checks pass, and the client accepts JSON."""
        if await self._security.validate_request(request, is_post=True) is not None:
            return False
        has_json, _has_sse = check_accept_headers(request)
        content_type = request.headers.get("content-type", "")
        parts = [part.strip() for part in content_type.split(";")[0].split(",")]
        return has_json and CONTENT_TYPE_JSON in parts

    async def _answer(self, call: JSONRPCRequest, request: Request, version: str) -> Response:
        """The call run as the SDK's session runs it, and its answer as the session
        writes it: a result, or a JSON-RPC error, with status 200."""
        dctx = _OneCall(
            transport=TransportContext(kind="streamable-http", can_send_request=False),
            request_id=call.id,
            message_metadata=ServerMessageMetadata(request_context=request, can_send_request=False),
        )
        connection = Connection.from_envelope(version, None, None)
        reply: JSONRPCResponse | JSONRPCError
        try:
            # The session manager's lifespan state, entered once when the server starts.
            state = self._manager._lifespan_state
            result = await serve_one(
                self._server, dctx, call.method, call.params, connection=connection,
                lifespan_state=state,
            )  # fmt: skip
            reply = JSONRPCResponse(jsonrpc="2.0", id=call.id, result=result)
        except Exception as exc:
            # As the session's dispatcher maps a handler's exception.
            error = handler_exception_to_error_data(exc)
            if error is None:
                logger.exception("handler for %r raised", call.method)
                error = ErrorData(code=0, message=str(exc))
            reply = JSONRPCError(jsonrpc="2.0", id=call.id, error=error)
        body = reply.model_dump_json(by_alias=True, exclude_unset=True)
        return Response(body, headers={"Content-Type": CONTENT_TYPE_JSON})


def protocol_version(scope: Scope) -> str | None:
    """The protocol version a session would be given, or None when the request is of
    the newer era (the SDK has its own single-request path for those)."""
    found = [value for name, value in scope["headers"] if name == _VERSION_HEADER]
    if not found:
        return DEFAULT_NEGOTIATED_VERSION
    version = found[0].decode("latin-1")
    return version if len(found) == 1 and version in HANDSHAKE_PROTOCOL_VERSIONS else None


def tool_call(message: Message) -> JSONRPCRequest | None:
    """The whole body as one ``tools/call`` request, parsed and validated as the
    transport does, or None."""
    if message["type"] != "http.request" or message.get("more_body", False):
        return None
    try:
        parsed = jsonrpc_message_adapter.validate_python(
            pydantic_core.from_json(message.get("body", b"")), by_name=False
        )
    except (ValueError, ValidationError):
        return None
    if not isinstance(parsed, JSONRPCRequest) or parsed.method != METHOD:
        return None
    return parsed


def replaying(first: Message, receive: Receive) -> Receive:
    """``receive``, with the message already read handed back first."""
    pending = [first]

    async def replay() -> Message:
        return pending.pop() if pending else await receive()

    return replay
