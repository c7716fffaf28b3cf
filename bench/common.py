"""Timing and reporting helpers shared by the benchmarks."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from django.db import connection


def median_ms(fn: Callable[[], object], runs: int) -> float:
    fn()  # warm caches (templates, pydantic validators) the way a running server has them
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def analyze() -> None:
    """Refresh planner statistics after a bulk load, as PostgreSQL's autovacuum would
    in steady state (SQLite keeps none unless asked, and our queries do not need them).
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")


def report(name: str, value: float, target: float | None = None, unit: str = "ms") -> None:
    verdict = "" if target is None else ("  ok" if value < target else "  MISSED")
    goal = "" if target is None else f"  (target < {target:g} {unit})"
    print(f"  {name:<58} {value:9.2f} {unit}{goal}{verdict}")
