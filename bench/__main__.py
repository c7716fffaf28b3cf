"""Run every benchmark against a scratch database and print the figures.

SQLite by default (a temporary file); set DATABASE_URL to measure PostgreSQL — the
benchmark then works inside a team of its own and deletes it afterwards.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

_scratch = tempfile.mkdtemp(prefix="lens-bench-")
os.environ.setdefault("DATABASE_URL", f"sqlite:///{_scratch}/bench.sqlite3")
os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lens.settings")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402


def median_ms(fn: Callable[[], object], runs: int) -> float:
    fn()  # warm caches (templates, pydantic validators) the way a running server has them
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def report(name: str, value: float, target: float | None = None, unit: str = "ms") -> None:
    verdict = "" if target is None else ("  ok" if value < target else "  MISSED")
    goal = "" if target is None else f"  (target < {target:g} {unit})"
    print(f"  {name:<58} {value:9.2f} {unit}{goal}{verdict}")


def main() -> int:
    call_command("migrate", verbosity=0)
    setup_test_environment()
    from lens.runtime import tune_gc

    tune_gc()  # as lens/wsgi.py does once the application is loaded
    from bench import approvals_bench, kv_bench, lens_bench, memory_bench

    print(f"Composition Lens benchmarks — {connection.vendor}")
    for module in (lens_bench, memory_bench, approvals_bench, kv_bench):
        try:
            module.run(median_ms, report)
        finally:
            module.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
