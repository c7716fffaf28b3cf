"""How ``bench/task_engines.py`` drives an engine's client process: one JSON request per
line on its stdin, one JSON answer per line on its stdout.

Each engine's client (``bench.task_engine_django_tasks``, ``bench.task_engine_procrastinate``)
runs in a process of its own, so django-tasks gets a Django of its own settings and
procrastinate none at all, and keeps its database connection open from one request to
the next, as an application that enqueues does. Both clients time their transactions
with the same loop (``alternate``).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

Request = dict[str, Any]
Answer = dict[str, Any]


def serve(handle: Callable[[Request], Answer]) -> None:
    """The client's side: answer requests until stdin closes."""
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        try:
            answer = handle(json.loads(line))
        except Exception:
            answer = {"error": traceback.format_exc()}
        print(json.dumps(answer, default=str), flush=True)


class Client:
    """The benchmark's side: a client process started with ``command``."""

    def __init__(self, command: list[str], env: dict[str, str], cwd: Path) -> None:
        self.process = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._read()  # {"ready": true} once its imports are done

    def call(self, op: str, **arguments: Any) -> Answer:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"op": op, **arguments}) + "\n")
        self.process.stdin.flush()
        return self._read()

    def _read(self) -> Answer:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the client {self.process.args!r} exited")
        answer: Answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"the client failed:\n{answer['error']}")
        return answer

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


# The transactions each client times, in turn: one small row alone, with a task
# enqueued beside it, and with a second small row instead (what an outbox row costs).
VARIANTS = ("alone", "task", "row")


def alternate(one: Callable[[int, str], tuple[float, float]], runs: int, first: int) -> Answer:
    """p50s of ``runs`` transactions of each variant, taken in rotation so all see the
    same noise; ``one(n, variant)`` runs one and answers (its µs, the µs of the call
    that enqueued or inserted the extra row). The first 100 of each warm caches."""
    totals: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
    calls: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
    n = first
    for i in range(runs + 100):
        shift = i % len(VARIANTS)
        for variant in VARIANTS[shift:] + VARIANTS[:shift]:
            total, call = one(n, variant)
            n += 1
            if i >= 100:
                totals[variant].append(total)
                calls[variant].append(call)
    return {
        "tx": {variant: statistics.median(totals[variant]) for variant in VARIANTS},
        "call": {variant: statistics.median(calls[variant]) for variant in VARIANTS[1:]},
    }
