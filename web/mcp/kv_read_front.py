"""``kv_store read`` over streamable HTTP in one hop to a thread and one statement: the
call agents make most, answered before the bearer check and the SDK
(``docs/performance.md``).

Through the SDK a read takes two hops from the event loop to a thread (the bearer
check on the token lane, then the tool on a tool thread) and two statements (the
token, then the key), besides the Starlette middleware, the arguments' validation and
the server's dispatch. The API reads a key with its token's check in one statement
(``kvstore.store.read_as``); this front does the same on the token lane, where a call
costs what a token check costs (one indexed statement), and writes the answer the tool
would write.

It answers only a request it can answer exactly as the server would: a POST to the MCP
path that the transport takes (Host and Origin, Accept, Content-Type: ``CallFront``'s
checks), of the handshake era's protocol, with a bearer token, whose whole body is one
``tools/call`` of ``kv_store`` with ``command`` "read", an ``id`` that is a valid key and
at most a ``version`` that is a whole number in range, and nothing else. A token that is
not live, an error from the database, and every other request go on untouched, the
body handed back as it came: the server then refuses the token (401) or answers in its
own way (``CallFront`` or the SDK's session). A read can be made twice.

It takes no team's turn (``web.team_shares``): the turns keep costly tool calls of one
team from holding every tool thread, and a read holds none.
"""

from __future__ import annotations

from typing import Any

from mcp.server.streamable_http import CONTENT_TYPE_JSON
from mcp_types import CallToolResult, JSONRPCResponse
from mcp_types.methods import serialize_server_result
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kvstore import store
from kvstore.core.keys import key_problem
from lens.core.errors import DomainError
from web.answers.kv_answers import value_out
from web.api.params import INT_MAX
from web.mcp import MCP_PATH
from web.mcp.call_front import CallFront, protocol_version, replaying, tool_call
from web.mcp.tools import DjangoThreads, answer_result, error_result

TOOL = "kv_store"
_AUTHORIZATION = b"authorization"


class KvReadFront:
    """ASGI, in front of the whole MCP application (``app``): its bearer check, its
    body limit and ``CallFront`` behind it. ``lane``: the token checks' threads.
    ``call_front``: whose transport checks it shares."""

    def __init__(
        self, app: ASGIApp, lane: DjangoThreads, call_front: CallFront, max_body: int
    ) -> None:
        self.app = app
        self._lane = lane
        self._call_front = call_front
        self._max_body = max_body
        self.answered = 0  # how many reads it answered itself (for tests and benchmarks)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] != "POST"
            or scope["path"] != MCP_PATH
            or scope.get("root_path")
        ):
            await self.app(scope, receive, send)
            return
        token = _bearer(scope)
        version = protocol_version(scope)
        if not token or version is None:
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        if not await self._call_front.transport_takes(request):
            await self.app(scope, receive, send)
            return
        message = await self._whole(receive)
        answer = await self._answer(message, token, version)
        if answer is None:
            await self.app(scope, replaying(message, receive), send)
            return
        self.answered += 1
        await answer(scope, receive, send)

    async def _whole(self, receive: Receive) -> Message:
        """The request's body as one message (a client may send it in parts), read no
        further than the body limit: what is read is handed on as it came."""
        message = await receive()
        parts = [message.get("body", b"")]
        size = len(parts[0])
        while message["type"] == "http.request" and message.get("more_body", False):
            if size > self._max_body:
                return {**message, "body": b"".join(parts)}
            message = await receive()
            parts.append(message.get("body", b""))
            size += len(parts[-1])
        return {**message, "body": b"".join(parts)}

    async def _answer(self, message: Message, token: str, version: str) -> Response | None:
        """The read's answer as the server writes it, or None: the server answers."""
        if len(message.get("body", b"")) > self._max_body:
            return None
        call = tool_call(message)
        if call is None or call.params is None or set(call.params) != {"name", "arguments"}:
            return None
        if call.params["name"] != TOOL:
            return None
        read = _read_arguments(call.params["arguments"])
        if read is None:
            return None
        key, asked = read
        try:
            result = await self._lane.run(_read, token, key, asked)
        except Exception:
            return None  # the server reads again, and answers or logs its own error
        if result is None:
            return None  # no live token: the server refuses it
        # Shaped for the call's protocol version as the SDK's runner shapes a result.
        dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        shaped = serialize_server_result(call.method, version, dumped)
        reply = JSONRPCResponse(jsonrpc="2.0", id=call.id, result=shaped)
        body = reply.model_dump_json(by_alias=True, exclude_unset=True)
        return Response(body, headers={"Content-Type": CONTENT_TYPE_JSON})


def _read_arguments(arguments: Any) -> tuple[str, int | None] | None:
    """The key and version of a plain ``read``, or None for anything the tool's own
    validation should see (another command, another argument, a value the schema or
    ``ReadParams`` would coerce or refuse, a key ``check_key`` would refuse)."""
    if not isinstance(arguments, dict) or arguments.get("command") != "read":
        return None
    if not set(arguments) <= {"command", "id", "version"}:
        return None
    key = arguments.get("id")
    if not isinstance(key, str) or key_problem(key) is not None:
        return None
    version = arguments.get("version")
    if version is None and "version" not in arguments:
        return key, None
    if type(version) is not int or not 1 <= version <= INT_MAX:
        return None
    return key, version


def _read(token: str, key: str, version: int | None) -> CallToolResult | None:
    """On the token lane: the tool's result for the read, or None when no live token is
    ``token``."""
    found = store.read_as(token, key, version)
    if found is None:
        return None
    try:
        return answer_result(value_out(key, found.value()))
    except DomainError as exc:
        return error_result(exc.envelope())


def _bearer(scope: Scope) -> str:
    """The token of the first ``Authorization: Bearer …`` header, as the SDK's bearer
    check reads it (a value of only spaces is no token there either); "" otherwise."""
    for name, value in scope["headers"]:
        if name == _AUTHORIZATION:
            text = value.decode("latin-1")
            if not text.lower().startswith("bearer "):
                return ""
            token = text[7:]
            return token if token.strip() else ""
    return ""
