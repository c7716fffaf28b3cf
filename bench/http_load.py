"""The HTTP benchmark's client: keep-alive connections from plain ``http.client``, the
same code against this server and against etcd, so the ratios compare servers, not
clients. No Django here.
"""

from __future__ import annotations

import http.client
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Call:
    """One request to repeat: ``body`` may depend on the call's sequence number."""

    method: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)
    body: Callable[[int], bytes] | None = None
    expect: tuple[int, ...] = (200,)


@dataclass
class Samples:
    """Latencies in milliseconds and the wall time they took, for one or more runs."""

    latencies: list[float] = field(default_factory=list)
    seconds: float = 0.0

    def add(self, other: Samples) -> None:
        self.latencies.extend(other.latencies)
        self.seconds += other.seconds

    @property
    def p50(self) -> float:
        return statistics.median(self.latencies)

    @property
    def p99(self) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]

    @property
    def throughput(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else 0.0


class Failed(RuntimeError):
    pass


class _Sequence:
    """Call numbers shared by every client thread, so each body is unique."""

    def __init__(self) -> None:
        self._next = 0
        self._lock = threading.Lock()

    def take(self) -> int:
        with self._lock:
            self._next += 1
            return self._next


_SEQUENCE = _Sequence()


def _client(
    port: int, call: Call, count: int, out: list[float], errors: list[str], start: threading.Event
) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        # One untimed request opens the connection (keep-alive from then on).
        _send(connection, call)
        start.wait()
        for _ in range(count):
            began = time.perf_counter()
            _send(connection, call)
            out.append((time.perf_counter() - began) * 1000)
    except Exception as exc:  # reported by the caller, with the failing call
        errors.append(f"{call.method} {call.path}: {exc}")
    finally:
        connection.close()


def _send(connection: http.client.HTTPConnection, call: Call) -> None:
    body = call.body(_SEQUENCE.take()) if call.body is not None else None
    connection.request(call.method, call.path, body=body, headers=call.headers)
    response = connection.getresponse()
    payload = response.read()
    if response.status not in call.expect:
        raise Failed(f"answered {response.status}: {payload[:300]!r}")


def load(port: int, call: Call, clients: int, per_client: int) -> Samples:
    """``clients`` keep-alive connections each sending ``per_client`` requests at once;
    every request's latency and the wall time of the whole run."""
    outs: list[list[float]] = [[] for _ in range(clients)]
    errors: list[str] = []
    start = threading.Event()
    threads = [
        threading.Thread(target=_client, args=(port, call, per_client, outs[i], errors, start))
        for i in range(clients)
    ]
    for thread in threads:
        thread.start()
    time.sleep(0.05)  # every connection is open before the clock starts
    began = time.perf_counter()
    start.set()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - began
    if errors:
        raise Failed(errors[0])
    return Samples([ms for out in outs for ms in out], seconds)
