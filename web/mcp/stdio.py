"""Over stdio, every line that is not a JSON-RPC message gets a JSON-RPC error.

The SDK's stdio transport reads a line, and when it is not a message (not JSON, JSON
the SDK's parser refuses such as an unpaired surrogate escape ``"\\ud800"``, or JSON
that is not JSON-RPC) it passes the parse error on, and the server drops it: the
client hears nothing and waits for its own timeout. ``answering_unreadable`` wraps the
transport's read stream so each such error is answered on the write stream instead,
as the HTTP transport answers a bad body:

- not JSON at all: ``-32700`` (parse error), ``id`` null, as over HTTP;
- JSON that only the SDK refuses (an unpaired surrogate): ``-32600`` (invalid request)
  with the request's ``id`` when the line has one, so the client's pending request
  fails at once instead of timing out (over HTTP: ``-32700``, ``id`` null);
- JSON that is not a JSON-RPC message: ``-32600``, ``id`` null (over HTTP: ``-32602``).

A blank line is skipped, as the framing allows. Reading a refused line again with
Python's own parser is linear in its length, like the SDK's own parse.
"""

from __future__ import annotations

import contextvars
import json
from typing import TYPE_CHECKING, Any, Self

import anyio
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError, RequestId
from pydantic import ValidationError

if TYPE_CHECKING:
    from mcp.shared._stream_protocols import ReadStream, WriteStream

_JSON_INVALID = "json_invalid"
_INVALID_JSON_PREFIX = "Invalid JSON: "


def _refused_line(error: ValidationError) -> tuple[str, str] | None:
    """The line the SDK could not parse as JSON and why, or None when it was JSON."""
    for detail in error.errors(include_url=False):
        if detail["type"] == _JSON_INVALID and isinstance(detail.get("input"), str):
            return detail["input"], detail["msg"].removeprefix(_INVALID_JSON_PREFIX)
    return None


def _request_id(value: object) -> RequestId | None:
    """The ``id`` of a JSON-RPC request object, when it has a usable one."""
    if not isinstance(value, dict):
        return None
    found = value.get("id")
    if isinstance(found, bool) or not isinstance(found, int | str):
        return None
    return found


def error_for(error: Exception) -> JSONRPCError | None:
    """The JSON-RPC error that answers what the transport could not read (None: a blank
    line, which needs no answer)."""
    if not isinstance(error, ValidationError):
        return _error(None, INVALID_REQUEST, f"Invalid request: {error}")
    refused = _refused_line(error)
    if refused is None:
        # JSON, but not a JSON-RPC message (which part is wrong: the SDK's first complaint).
        first = error.errors(include_url=False)[0]["msg"] if error.error_count() else ""
        return _error(None, INVALID_REQUEST, f"Invalid request: not a JSON-RPC message ({first}).")
    line, why = refused
    if not line.strip():
        return None
    try:
        value: Any = json.loads(line)
    except (ValueError, RecursionError):
        return _error(None, PARSE_ERROR, f"Parse error: {why}")
    return _error(
        _request_id(value),
        INVALID_REQUEST,
        f"Invalid request: the message is JSON but cannot be read ({why}); "
        "text must be valid Unicode (no unpaired surrogate escapes).",
    )


def _error(request_id: RequestId | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))


class AnsweringUnreadable:
    """The transport's read stream, less its parse errors, each answered on ``write``.

    A read stream the SDK's server loop accepts: it yields only messages, and exposes
    the sender context of the last one (``last_context``) as the transport's own does.
    """

    def __init__(
        self,
        read: ReadStream[SessionMessage | Exception],
        write: WriteStream[SessionMessage],
    ) -> None:
        self._read = read
        self._write = write

    @property
    def last_context(self) -> contextvars.Context | None:
        found: contextvars.Context | None = getattr(self._read, "last_context", None)
        return found

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item = await self._read.receive()
            if not isinstance(item, Exception):
                return item
            answer = error_for(item)
            if answer is not None:
                await self._write.send(SessionMessage(answer))

    async def aclose(self) -> None:
        await self._read.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> bool | None:
        await self.aclose()
        return None
