"""A webhook receiver on loopback for tests: records every request and answers with the
statuses it is given, in order (then the last one, or 200)."""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float = field(default_factory=time.time)  # when it arrived (seconds since the epoch)


@dataclass
class Receiver:
    statuses: list[int] = field(default_factory=list)
    hold: threading.Event | None = None  # set: answer; unset: every request waits on it
    received: list[Received] = field(default_factory=list)
    arrived: threading.Event = field(default_factory=threading.Event)
    port: int = 0
    scheme: str = "http"

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}/hook"

    def answer(self) -> int:
        if len(self.received) <= len(self.statuses):
            return self.statuses[len(self.received) - 1]
        return self.statuses[-1] if self.statuses else 200


@contextmanager
def receiving(
    statuses: list[int] | None = None,
    hold: threading.Event | None = None,
    tls: ssl.SSLContext | None = None,
) -> Iterator[Receiver]:
    """A receiver on loopback; with ``tls``, it answers HTTPS only."""
    scheme = "https" if tls is not None else "http"
    receiver = Receiver(statuses=list(statuses or []), hold=hold, scheme=scheme)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            with lock:
                receiver.received.append(
                    Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                )
                status = receiver.answer()
            receiver.arrived.set()
            if receiver.hold is not None:
                receiver.hold.wait(30)
            self.send_response(status)
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    receiver.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        if hold is not None:
            hold.set()
        server.shutdown()
        server.server_close()
