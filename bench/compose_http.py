"""``make bench-http``, composing: the big agent's composition, delivery and lens page
over loopback HTTP under ``make serve``, with its composition kept since the last change
(``memory.composed``) and right after a change, p50 of one keep-alive client.

"After a change" saves a memory to the agent (a change of what it is made of: its
composition's routing report at least) before each timed request; the save is not timed.
The same requests against a server started with ``COMPOSITION_CACHE=0`` are the
"composed every time" column, in the same run. Nothing here imports Django.
"""

from __future__ import annotations

import http.client
import json
import secrets
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench.http import each_database, scratch_database, seed, serve, server_env, sign_in

REQUESTS = 60
# Issue 38's p50 goals in ms, by call and database.
GOALS = {
    "composition, unchanged": {"sqlite": 5.0, "postgresql": 5.0},
    "composition, after a change": {"sqlite": 20.0, "postgresql": 20.0},
    "delivery, unchanged prompt": {"sqlite": 6.0, "postgresql": 6.0},
    "lens page": {"sqlite": 40.0, "postgresql": 60.0},
}


class Client:
    """One keep-alive connection."""

    def __init__(self, port: int, headers: dict[str, str]) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.headers = headers

    def call(self, method: str, path: str, body: bytes | None = None) -> int:
        self.connection.request(method, path, body=body, headers=self.headers)
        answer = self.connection.getresponse()
        answer.read()
        return answer.status

    def timed(self, method: str, path: str, expect: int, body: bytes | None = None) -> float:
        started = time.perf_counter()
        status = self.call(method, path, body)
        elapsed = (time.perf_counter() - started) * 1000
        if status != expect:
            raise RuntimeError(f"{method} {path}: {status}, not {expect}")
        return elapsed


def p50(samples: list[float]) -> float:
    return statistics.median(samples)


def measure(port: int, info: dict[str, str], session: str) -> dict[str, float]:
    api = Client(
        port,
        {
            "Authorization": f"Bearer {info['token']}",
            "Content-Type": "application/json",
            "Accept-Encoding": "gzip",
        },
    )
    page = Client(port, {"Cookie": f"sessionid={session}"})
    big = info["big"]
    composition = f"/api/agents/{big}/composition"
    serial = iter(range(10**9))
    run = secrets.token_hex(4)  # each server's run saves memories of its own

    def change() -> None:
        content = f"The user mentioned fact {run}-{next(serial)} worth keeping."
        body = {"kind": "profile", "content": content}
        status = api.call("POST", f"/api/agents/{big}/memories", json.dumps(body).encode())
        if status != 201:
            raise RuntimeError(f"memory save: {status}")

    def repeat(timed: Callable[[], float], before: Callable[[], None] | None = None) -> float:
        samples = []
        for _ in range(REQUESTS):
            if before is not None:
                before()
            samples.append(timed())
        return p50(samples)

    # Warm: every server process composes once.
    for _ in range(8):
        api.call("GET", composition)
    return {
        "composition, unchanged": repeat(lambda: api.timed("GET", composition, 200)),
        "composition, after a change": repeat(lambda: api.timed("GET", composition, 200), change),
        "delivery, unchanged prompt": repeat(
            lambda: api.timed("POST", f"/api/agents/{big}/deliveries", 201, b"{}")
        ),
        "lens page": repeat(lambda: page.timed("GET", f"/agents/{big}/?team={info['team']}", 200)),
    }


def run(kind: str, scratch: Path, summary: list[str]) -> None:
    title = "SQLite" if kind == "sqlite" else "PostgreSQL"
    with scratch_database(kind, scratch) as url:
        env = server_env(url, scratch)
        info = seed(env)
        figures = {}
        for cached in (True, False):
            with serve({**env, "COMPOSITION_CACHE": "1" if cached else "0"}, scratch) as port:
                session = sign_in(port, info["username"], info["password"])
                figures[cached] = measure(port, info, session)
        print(f"\n{title}: p50 of {REQUESTS} requests, 1 client (ms)")
        print(f"  {'call':<30} {'kept':>8} {'composed':>9}   goal")
        for name, goal in GOALS.items():
            kept, every = figures[True][name], figures[False][name]
            target = goal[kind]
            verdict = "met" if kept <= target else "MISSED"
            print(f"  {name:<30} {kept:8.2f} {every:9.2f}   ≤ {target:g} ({verdict})")
            summary.append(
                f"{title}: {name} p50 {kept:.2f} ms (composed every time {every:.2f} ms), "
                f"goal ≤ {target:g} ms: {verdict}"
            )


def main() -> int:
    heading = "Composing once per change — make serve, the big agent, loopback HTTP"
    return each_database("lens-bench-compose-", heading, run)


if __name__ == "__main__":
    sys.exit(main())
