"""The WSGI application served through ASGI so that no Python thread ever waits on a
client (what ``lens/serving/server.py`` runs).

Granian keeps every connection in Rust, but in its WSGI mode a request that reads its
body reads it on the request's Python thread: a client that sends its headers and then
trickles the body a byte at a time holds that thread for as long as it likes (Granian
has no body timeout, by design), and two such clients took a process of two threads
offline. Here the event loop reads the whole body first, under a deadline and a size
bound, and only then hands the request to a thread of a fixed pool, which runs
Django's ordinary WSGI handler (long-lived threads, so each keeps its database
connection, as under a threaded WSGI server). The answer goes back to the loop whole
(up to ``BUFFER_BYTES``), so a client that reads slowly never holds a thread either.

Django's own ASGI handler would read bodies the same way, but it runs each request on
a new thread with a new database connection (a PostgreSQL connection costs more than a
key/value read).

The access log's line (``ACCESS_LOG``: who, what, the status and how long the answer
took) is written here, by the request's thread once it has handed the answer to the
loop, so the write overlaps the answer's way out instead of preceding the loop's next
request; Granian's own access log wrapped each request in one more coroutine and built
its line on the loop (``docs/performance.md``). The hand-off to the thread and back is
a plain future for the same reason: ``run_in_executor`` chains two futures through
callbacks.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractAsyncContextManager
from typing import Any
from urllib.parse import unquote_to_bytes

from lens.core.errors import error_body

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Coroutine[Any, Any, None]]
WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

# An answer larger than this is streamed from its thread chunk by chunk (a large
# download); anything smaller is handed to the server whole.
BUFFER_BYTES = 8 * 1024 * 1024

# Turns (``turns``, web/costly.py: a team's share of costly calls). A request's
# environ says that this server waits for turns itself (TURNS_KEY), and which turn it
# holds for a request sent again (TURN_HELD_KEY). An answer carrying TURN_HEADER could
# not have its turn: the event loop waits for one, holding no thread, and sends the
# request again with it; if none comes in time the answer goes out as it is (a 429),
# without that header.
TURNS_KEY = "lens.turns"
TURN_HELD_KEY = "lens.turn"
TURN_HEADER = "X-Lens-Turn"
Turns = Callable[[str], AbstractAsyncContextManager[bool]]


# One line per request: the peer's address, the request line without its query string
# (searches carry text people typed), the status and the milliseconds it took.
ACCESS_LOGGER = logging.getLogger("granian.access")
ACCESS_LINE = '%s "%s %s HTTP/%s" %d %.2fms'


class ClientGone(Exception):
    """The client closed the connection before its request was whole."""


Answer = tuple[int, list[tuple[bytes, bytes]], bytes]


class BufferedWsgi:
    def __init__(
        self,
        app: WsgiApp,
        *,
        threads: int,
        max_body: int,
        body_seconds: float,
        turns: Turns | None = None,
        access_log: bool = False,
    ) -> None:
        self.app = app
        self.max_body = max_body
        self.body_seconds = body_seconds
        self.turns = turns
        self.access_log = access_log
        self.executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="request")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # websockets are off; lifespan is not used (Granian's "asginl")
        began = time.perf_counter()
        try:
            async with asyncio.timeout(self.body_seconds):
                body, length = await self.read_body(scope, receive)
        except TimeoutError:
            await refuse(send, scope, 408, "request_timeout", self.too_slow())
            if self.access_log:
                log_access(scope, 408, began)
            return
        except ClientGone:
            return
        answer = await self.dispatch(scope, body, length, send, began=began)
        if answer is not None and self.turns is not None:
            turn = _pop_header(answer[1], TURN_HEADER)
            if turn is not None:
                answer = await self.with_turn(turn, answer, scope, body, length, send, began)
        if answer is not None:
            status, headers, content = answer
            if length > self.max_body:
                # The body was left unread, so the connection cannot carry another
                # request: say so, or the client reuses it and its next request fails.
                headers.append((b"connection", b"close"))
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": content})

    async def dispatch(
        self,
        scope: Scope,
        body: bytes,
        length: int,
        send: Send,
        turn: str | None = None,
        *,
        began: float,
    ) -> Answer | None:
        """The request, run on a thread of the pool (``respond``)."""
        environ = wsgi_environ(scope, body, length)
        if self.turns is not None:
            environ[TURNS_KEY] = True
        if turn is not None:
            environ[TURN_HELD_KEY] = turn
        loop = asyncio.get_running_loop()
        answered: asyncio.Future[Answer | None] = loop.create_future()
        logged = began if self.access_log else None
        self.executor.submit(self.run, environ, loop, send, answered, scope, logged)
        return await answered

    def run(
        self,
        environ: dict[str, Any],
        loop: asyncio.AbstractEventLoop,
        send: Send,
        answered: asyncio.Future[Answer | None],
        scope: Scope,
        began: float | None,
    ) -> None:
        """On a pool thread: ``respond``, its answer handed to the loop, then the access
        log's line (none for an answer that waits for a turn: it is sent again)."""
        try:
            answer = self.respond(environ, loop, send)
        except BaseException as exc:
            loop.call_soon_threadsafe(_settle, answered, None, exc)
            return
        loop.call_soon_threadsafe(_settle, answered, answer, None)
        if began is None:
            return
        if answer is None:
            status = environ.get(_STREAMED_STATUS, 200)
        elif self.turns is not None and _has_header(answer[1], TURN_HEADER):
            return
        else:
            status = answer[0]
        log_access(scope, status, began)

    async def with_turn(
        self,
        turn: str,
        refused: Answer,
        scope: Scope,
        body: bytes,
        length: int,
        send: Send,
        began: float,
    ) -> Answer | None:
        """Wait for ``turn`` here, holding no thread, and send the request again with
        it; ``refused`` when no turn came in time."""
        assert self.turns is not None
        async with self.turns(turn) as got:
            if not got:
                if self.access_log:
                    log_access(scope, refused[0], began)
                return refused
            answer = await self.dispatch(scope, body, length, send, turn, began=began)
        if answer is not None:
            _pop_header(answer[1], TURN_HEADER)  # refused again (another team's turn): as is
        return answer

    def too_slow(self) -> str:
        return f"The request's body did not arrive within {self.body_seconds:g} seconds."

    async def read_body(self, scope: Scope, receive: Receive) -> tuple[bytes, int]:
        """The body, and the length Django is told. A body over ``max_body`` is not read
        (or not read further): Django sees its length and refuses it (413 on the API)."""
        declared = content_length(scope)
        if declared is not None and declared > self.max_body:
            return b"", declared
        if declared is None and not chunked(scope):
            return b"", 0  # no body at all (most GETs): nothing to wait for
        parts: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ClientGone
            chunk = message.get("body", b"")
            parts.append(chunk)
            size += len(chunk)
            if size > self.max_body:
                return b"", size
            if not message.get("more_body", False):
                break
        body = b"".join(parts)
        return body, len(body)

    def respond(
        self, environ: dict[str, Any], loop: asyncio.AbstractEventLoop, send: Send
    ) -> Answer | None:
        """On a pool thread: the application's answer, whole; or None once a large
        answer has been streamed to the client from here."""
        started: list[Any] = []

        def start_response(
            status: str, headers: list[tuple[str, str]], exc_info: Any = None
        ) -> Any:
            if exc_info is not None and started:
                raise exc_info[1].with_traceback(exc_info[2])
            started[:] = [int(status.split(" ", 1)[0]), encoded(headers)]
            return lambda data: None  # write() is not used by Django

        result = self.app(environ, start_response)
        try:
            chunks: list[bytes] = []
            size = 0
            iterator = iter(result)
            for chunk in iterator:
                chunks.append(chunk)
                size += len(chunk)
                if size > BUFFER_BYTES:
                    environ[_STREAMED_STATUS] = started[0]
                    self.stream(loop, send, started, chunks, iterator)
                    return None
            return started[0], started[1], b"".join(chunks)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()  # Django's request_finished: the connection is checked in

    @staticmethod
    def stream(
        loop: asyncio.AbstractEventLoop,
        send: Send,
        started: list[Any],
        first: list[bytes],
        rest: Iterable[bytes],
    ) -> None:
        def put(message: Message) -> None:
            asyncio.run_coroutine_threadsafe(send(message), loop).result()

        put({"type": "http.response.start", "status": started[0], "headers": started[1]})
        put({"type": "http.response.body", "body": b"".join(first), "more_body": True})
        for chunk in rest:
            if chunk:
                put({"type": "http.response.body", "body": chunk, "more_body": True})
        put({"type": "http.response.body", "body": b""})


# Where ``respond`` notes the status of an answer it streamed (for the access log).
_STREAMED_STATUS = "lens.streamed_status"


def _settle(
    answered: asyncio.Future[Answer | None], answer: Answer | None, exc: BaseException | None
) -> None:
    """On the loop: the thread's outcome, unless nobody waits for it any more."""
    if answered.done():
        return
    if exc is not None:
        answered.set_exception(exc)
    else:
        answered.set_result(answer)


def log_access(scope: Scope, status: int, began: float) -> None:
    """The access log's line for a request answered with ``status``."""
    client = scope.get("client") or ("-", 0)
    ACCESS_LOGGER.info(
        ACCESS_LINE,
        client[0],
        scope["method"],
        scope["path"],
        scope.get("http_version", "1.1"),
        status,
        (time.perf_counter() - began) * 1000,
    )


def _has_header(headers: list[tuple[bytes, bytes]], name: str) -> bool:
    wanted = name.lower().encode("latin-1")
    return any(key == wanted for key, _ in headers)


def _pop_header(headers: list[tuple[bytes, bytes]], name: str) -> str | None:
    """The value of header ``name``, taken out of ``headers``; None when absent."""
    wanted = name.lower().encode("latin-1")
    for index, (key, value) in enumerate(headers):
        if key == wanted:
            del headers[index]
            return value.decode("latin-1")
    return None


def content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def chunked(scope: Scope) -> bool:
    return any(name == b"transfer-encoding" for name, _ in scope["headers"])


def encoded(headers: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    return [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers]


def wsgi_environ(scope: Scope, body: bytes, length: int) -> dict[str, Any]:
    """PEP 3333's environ for an ASGI HTTP scope: the path is percent-decoded from the
    raw bytes (text that is not UTF-8 reaches Django's input guard as it was sent)."""
    server = scope.get("server") or ("127.0.0.1", 80)
    client = scope.get("client") or ("", 0)
    raw_path = scope.get("raw_path") or scope["path"].encode("utf-8")
    root = scope.get("root_path", "")
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": root,
        "PATH_INFO": unquote_to_bytes(raw_path).decode("latin-1")[len(root) :],
        "QUERY_STRING": scope.get("query_string", b"").decode("latin-1"),
        "SERVER_NAME": str(server[0]),
        "SERVER_PORT": str(server[1]),
        "SERVER_PROTOCOL": f"HTTP/{scope.get('http_version', '1.1')}",
        "REMOTE_ADDR": str(client[0]),
        "CONTENT_LENGTH": str(length),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    for raw_name, raw_value in scope["headers"]:
        name = raw_name.decode("latin-1").upper()
        if "_" in name:
            # X_Forwarded_For would read as X-Forwarded-For: dropped, as gunicorn and
            # Django's runserver drop them.
            continue
        value = raw_value.decode("latin-1")
        if name == "CONTENT-LENGTH":
            continue  # the length of the body as read (above)
        key = "CONTENT_TYPE" if name == "CONTENT-TYPE" else f"HTTP_{name.replace('-', '_')}"
        environ[key] = f"{environ[key]},{value}" if key in environ else value
    return environ


async def refuse(send: Send, scope: Scope, status: int, code: str, message: str) -> None:
    """An answer from here, not from Django: the API's envelope on /api/, text elsewhere."""
    if scope["path"].startswith("/api/"):
        body = json.dumps(error_body(code, message)).encode()
        kind = b"application/json"
    else:
        body, kind = message.encode(), b"text/plain; charset=utf-8"
    headers = [(b"content-type", kind), (b"connection", b"close")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
