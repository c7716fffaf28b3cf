"""A webhook receiver that hangs: it accepts every TCP connection and never answers,
holding each open, until it recovers; from then on it answers every request (held ones
too, when their sender still waits) with 200 and records its ``webhook-id``."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class Hanging:
    port: int = 0
    recovered: threading.Event = field(default_factory=threading.Event)
    accepted: int = 0  # connections taken while hanging
    first_accepted_at: float | None = None  # seconds since the epoch
    ids: list[str] = field(default_factory=list)  # webhook-ids answered after recovery
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"


def _answer(receiver: Hanging, conn: socket.socket) -> None:
    with conn:
        receiver.recovered.wait()
        conn.settimeout(5)
        data = b""
        with contextlib.suppress(OSError):
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return  # its sender gave up while it was held
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            fields = dict(
                line.decode().split(":", 1) for line in head.split(b"\r\n")[1:] if b":" in line
            )
            headers = {k.strip().lower(): v.strip() for k, v in fields.items()}
            length = int(headers.get("content-length", "0"))
            while len(body) < length:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                body += chunk
            # A sender that gave up (its deadline passed) closed its end: its request
            # still waits in the buffer, but no one would hear the answer.
            conn.setblocking(False)
            try:
                if conn.recv(1) == b"":
                    return
            except BlockingIOError:
                pass  # still there, waiting for the answer
            conn.setblocking(True)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            with receiver.lock:
                receiver.ids.append(headers["webhook-id"])


@contextmanager
def hanging() -> Iterator[Hanging]:
    receiver = Hanging()
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    receiver.port = server.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with receiver.lock:
                if not receiver.recovered.is_set():
                    receiver.accepted += 1
                    if receiver.first_accepted_at is None:
                        receiver.first_accepted_at = time.time()
            threading.Thread(target=_answer, args=[receiver, conn], daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        stop.set()
        receiver.recovered.set()
        thread.join(5)
        server.close()
