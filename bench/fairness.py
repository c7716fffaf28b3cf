"""``python -m bench.fairness``: one team's costly calls against another team's cheap
ones, under the production server (``make serve``), over loopback HTTP.

Team A's 8 clients loop on ``GET /api/agents/big/stability?last=200`` (the 40-section
agent, 41 deliveries), each sending its next call as soon as it has an answer, a 429
included (a client that ignores ``Retry-After``: the worst case). Team B's one client
loops on ``GET /api/agents``. B's latency is measured alone (quiet) and beside A's
clients (loaded), in turns (two rounds of each, so both see the same noise from other
work on the machine), on a server with the default shares; with
``BENCH_FAIRNESS_COMPARE=1`` then also on one where a team's share is every request
thread (``TEAM_COSTLY_SHARE=SERVER_THREADS``), which is how the server behaved before
costly calls took turns. The load average is printed before and after: on a shared
machine, other work moves every figure.

Goal (with the default shares): B's p50 under load at most 5× its quiet p50 and under
250 ms, and at least 95% of B's calls answered (200 within 10 s). SQLite by default;
``BENCH_FAIRNESS_DB=postgresql`` measures PostgreSQL at ``BENCH_PG_URL``. Nothing here
imports Django: the server is a separate process, as in production.
"""

from __future__ import annotations

import http.client
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from bench.http import scratch_database, seed, serve, server_env

QUIET_SECONDS = float(os.environ.get("BENCH_FAIRNESS_QUIET", "6"))
LOAD_SECONDS = float(os.environ.get("BENCH_FAIRNESS_LOAD", "12"))
ROUNDS = 2
# BENCH_FAIRNESS_POLITE=1: A's clients wait as Retry-After asks before calling again.
POLITE = os.environ.get("BENCH_FAIRNESS_POLITE", "") == "1"
COMPARE = os.environ.get("BENCH_FAIRNESS_COMPARE", "0") == "1"
# A's calls run for this long before B's are timed: every thread is busy by then.
WARM_SECONDS = 3.0
HOGS = 8
LAST = 200
# A call of B not answered within this long counts as unanswered.
ANSWER_SECONDS = 10.0
KIND = os.environ.get("BENCH_FAIRNESS_DB", "sqlite")
# ``make serve``'s default: two request threads per process (lens/serving/runtime.py).
THREADS = os.environ.get("SERVER_THREADS", "2")


@dataclass
class Tally:
    """One client loop's answers: latency (ms) by status; 0 is no answer in time."""

    latencies: dict[int, list[float]] = field(default_factory=dict)

    def add(self, status: int, ms: float) -> None:
        self.latencies.setdefault(status, []).append(ms)

    def merge(self, other: Tally) -> None:
        for status, values in other.latencies.items():
            self.latencies.setdefault(status, []).extend(values)

    def count(self, status: int | None = None) -> int:
        if status is None:
            return sum(len(values) for values in self.latencies.values())
        return len(self.latencies.get(status, []))

    def answered(self) -> list[float]:
        return self.latencies.get(200, [])


def p50(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else float("nan")


class Looper(threading.Thread):
    """A keep-alive client sending ``path`` again and again until told to stop."""

    def __init__(
        self, port: int, path: str, token: str, stop: threading.Event, go: threading.Event
    ) -> None:
        super().__init__(daemon=True)
        self.port, self.path, self.stop, self.go = port, path, stop, go
        self.headers = {"Authorization": f"Bearer {token}"}
        self.tally = Tally()
        self.timing = threading.Event()  # set: answers count from now on
        self.idle = threading.Event()  # set: paused, no call in flight

    def run(self) -> None:
        connection = self._connect()
        while not self.stop.is_set():
            if not self.go.is_set():
                self.idle.set()
                self.go.wait(0.1)
                continue
            self.idle.clear()
            began = time.perf_counter()
            try:
                connection.request("GET", self.path, headers=self.headers)
                response = connection.getresponse()
                response.read()
                status = response.status
            except (OSError, http.client.HTTPException):
                status = 0
                connection.close()
                connection = self._connect()
            if self.timing.is_set():
                self.tally.add(status, (time.perf_counter() - began) * 1000)
            if status == 429 and POLITE:
                self.stop.wait(1.0)
        connection.close()

    def _connect(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=ANSWER_SECONDS)


def timed(port: int, path: str, token: str, seconds: float) -> Tally:
    stop, go = threading.Event(), threading.Event()
    go.set()
    client = Looper(port, path, token, stop, go)
    client.timing.set()
    client.start()
    time.sleep(seconds)
    stop.set()
    client.join()
    return client.tally


class Hogs:
    """Team A's clients, looping on the stability measure while ``resume``d; ``pause``
    returns once none has a call in flight."""

    def __init__(self, port: int, info: dict[str, str]) -> None:
        self.stop, self.go = threading.Event(), threading.Event()
        path = f"/api/agents/{info['big']}/stability?last={LAST}"
        self.clients = [
            Looper(port, path, info["busy_token"], self.stop, self.go) for _ in range(HOGS)
        ]
        for client in self.clients:
            client.start()

    def resume(self) -> None:
        """A's calls resume; from ``WARM_SECONDS`` on (every thread is busy by then)
        their answers count."""
        self.go.set()
        time.sleep(WARM_SECONDS)
        for client in self.clients:
            client.timing.set()

    def pause(self) -> None:
        for client in self.clients:
            client.timing.clear()
        self.go.clear()
        for client in self.clients:
            client.idle.wait(ANSWER_SECONDS * 2)

    def close(self) -> Tally:
        self.stop.set()
        tally = Tally()
        for client in self.clients:
            client.join()
            tally.merge(client.tally)
        return tally


@contextmanager
def hogging(port: int, info: dict[str, str]) -> Iterator[Hogs]:
    hogs = Hogs(port, info)
    try:
        yield hogs
    finally:
        hogs.close()


@dataclass(frozen=True)
class Figures:
    quiet: Tally
    loaded: Tally
    busy: Tally
    seconds: float

    @property
    def ratio(self) -> float:
        return p50(self.loaded.answered()) / p50(self.quiet.answered())

    @property
    def answered_share(self) -> float:
        return self.loaded.count(200) / max(1, self.loaded.count())


def measure(port: int, info: dict[str, str]) -> Figures:
    """Quiet and loaded phases in turn, ``ROUNDS`` of each, so both see the same
    machine noise (other work on the same cores comes and goes)."""
    listing, token = "/api/agents", info["other_token"]
    timed(port, listing, token, 1.0)  # warm: templates, connections
    quiet, loaded = Tally(), Tally()
    seconds = 0.0
    with hogging(port, info) as hogs:
        for _ in range(ROUNDS):
            quiet.merge(timed(port, listing, token, QUIET_SECONDS / ROUNDS))
            hogs.resume()
            began = time.perf_counter()
            loaded.merge(timed(port, listing, token, LOAD_SECONDS / ROUNDS))
            seconds += time.perf_counter() - began
            hogs.pause()
    return Figures(quiet, loaded, hogs.close(), seconds)


def report(title: str, figures: Figures) -> None:
    quiet, loaded, busy = figures.quiet.answered(), figures.loaded.answered(), figures.busy
    print(f"  {title}")
    print(
        f"    B  GET /api/agents quiet   p50 {p50(quiet):7.1f} ms   p99 {p99(quiet):7.1f} ms"
        f"   ({len(quiet)} calls)"
    )
    print(
        f"    B  GET /api/agents loaded  p50 {p50(loaded):7.1f} ms   p99 {p99(loaded):7.1f} ms"
        f"   ({figures.loaded.count()} calls, {figures.answered_share:.1%} answered)"
    )
    print(f"    B  p50 loaded / quiet      {figures.ratio:.1f}×")
    per_second = figures.seconds or 1.0
    print(
        f"    A  stability?last={LAST}: {busy.count(200) / per_second:.1f} answered/s"
        f" (p50 {p50(busy.answered()):.0f} ms), {busy.count(429) / per_second:.0f} refused"
        f" with 429/s (p50 {p50(busy.latencies.get(429, [])):.1f} ms),"
        f" {busy.count(0)} unanswered"
    )


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def main() -> int:
    started = time.perf_counter()
    load_before = os.getloadavg()[0]
    scratch = Path(tempfile.mkdtemp(prefix="lens-bench-fairness-"))
    title = "SQLite" if KIND == "sqlite" else "PostgreSQL"
    print(
        f"Fairness — make serve ({title}, {THREADS} request threads a process): "
        f"team A's {HOGS} clients on stability?last={LAST} against team B's GET /api/agents"
    )
    try:
        with scratch_database(KIND, scratch) as url:
            env = server_env(url, scratch)
            began = time.perf_counter()
            info = seed(env, "bench.fairness_seed")
            print(f"  seeded in {time.perf_counter() - began:.0f} s")
            runs = [
                ("default shares (TEAM_COSTLY_SHARE unset)", {}),
                (
                    f"one team may hold every thread (TEAM_COSTLY_SHARE={THREADS})",
                    {"TEAM_COSTLY_SHARE": THREADS},
                ),
            ][: 2 if COMPARE else 1]
            results: list[Figures] = []
            for label, extra in runs:
                with serve({**env, "ACCESS_LOG": "0", **extra}, scratch) as port:
                    figures = measure(port, info)
                report(label, figures)
                results.append(figures)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    shared = results[0]
    loaded_p50 = p50(shared.loaded.answered())
    print("\nTargets (default shares)")
    print(f"  B's p50 under load ≤ 5× quiet: {shared.ratio:.1f}× {verdict(shared.ratio <= 5)}")
    print(f"  B's p50 under load < 250 ms: {loaded_p50:.1f} ms {verdict(loaded_p50 < 250)}")
    print(
        f"  B's calls answered ≥ 95%: {shared.answered_share:.1%} "
        f"{verdict(shared.answered_share >= 0.95)}"
    )
    print(
        f"  (the whole run: {time.perf_counter() - started:.0f} s; load average "
        f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after, on {os.cpu_count()} cores)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
