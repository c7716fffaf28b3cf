"""What the task-engine benchmark's tasks do (``bench/task_engines.py``), the same under
both engines: each notes when it starts and ends in a log shared by every worker, and
in between does nothing, POSTs a small JSON body to the benchmark's receiver, or sleeps.

The log is how the benchmark sees tasks run whatever the engine: one line per event,
each written with a single ``write`` on a file opened with ``O_APPEND``, so lines from
several worker processes never interleave and none is lost when a worker is killed.
"""

from __future__ import annotations

import http.client
import json
import os
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

LOG_ENV = "BENCH_TASK_LOG"
# About the size of a webhook event's body (an audit event without contents).
BODY_PADDING = "x" * 240

_log: int | None = None


def note(event: str, n: int) -> None:
    global _log
    if _log is None:
        _log = os.open(os.environ[LOG_ENV], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.write(_log, f"{event} {n} {os.getpid()} {time.time():.6f}\n".encode())


def work(kind: str, n: int, arg: str) -> None:
    """Task ``n``: ``noop``, ``post`` (to the URL ``arg``) or ``hold`` (``arg`` seconds)."""
    note("start", n)
    if kind == "post":
        post(arg, n)
    elif kind == "hold":
        time.sleep(float(arg))
    elif kind != "noop":
        raise ValueError(f"unknown kind of task: {kind}")
    note("end", n)


def post(url: str, n: int) -> None:
    """One POST on a new connection, as a webhook goes to an endpoint: 200 or an error."""
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    body = json.dumps({"type": "bench.event", "data": {"n": n, "padding": BODY_PADDING}})
    try:
        connection.request("POST", parts.path or "/", body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"the receiver answered {response.status}")
    finally:
        connection.close()


@dataclass(frozen=True)
class Event:
    kind: str  # "start" or "end"
    n: int
    pid: int
    at: float  # time.time()


class TaskLog:
    """The log as the benchmark reads it while workers write it: only what was added
    since the last read, and only whole lines (a line being written is left for the
    next read)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.events: list[Event] = []
        self._offset = 0
        self._partial = b""

    def read(self) -> list[Event]:
        try:
            with self.path.open("rb") as log:
                log.seek(self._offset)
                data = log.read()
        except FileNotFoundError:
            return self.events
        self._offset += len(data)
        *lines, self._partial = (self._partial + data).split(b"\n")
        for line in lines:
            kind, n, pid, at = line.decode().split()
            self.events.append(Event(kind, int(n), int(pid), float(at)))
        return self.events
