"""Run every benchmark against a scratch database and print the figures.

SQLite by default (a temporary file); set DATABASE_URL to measure PostgreSQL — the
benchmark then works inside a team of its own and deletes it afterwards. The figures
over HTTP under the production server (``bench.http``, ``bench.tracing_http``,
``bench.audit_http``, …) start servers of their own and run as modules: ``make bench``
runs them after these.
"""

from __future__ import annotations

import os
import sys
import tempfile

_scratch = tempfile.mkdtemp(prefix="lens-bench-")
os.environ.setdefault("DATABASE_URL", f"sqlite:///{_scratch}/bench.sqlite3")
os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lens.settings")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402


def main() -> int:
    call_command("migrate", verbosity=0)
    setup_test_environment()
    from lens.serving.runtime import tune_gc

    tune_gc()  # as the served application does once it is loaded
    from bench import (
        agent_tools_bench,
        approvals_bench,
        audit_bench,
        bundle_bench,
        cache_bench,
        composition_bench,
        delivery_bench,
        erasure_bench,
        kv_bench,
        lens_bench,
        mcp_bench,
        memory_bench,
        migration_bench,
        request_floor_bench,
        revision_bench,
        routing_eval_bench,
        save_bench,
        screening_bench,
        search_bench,
        stability_bench,
        webhook_bench,
        what_if_bench,
    )
    from bench.common import median_ms, report

    print(f"Composition Lens benchmarks — {connection.vendor}")
    only = set(sys.argv[1:])  # e.g. `python -m bench delivery_bench`
    modules = (
        lens_bench,
        composition_bench,
        memory_bench,
        save_bench,
        search_bench,
        approvals_bench,
        kv_bench,
        request_floor_bench,
        delivery_bench,
        cache_bench,
        erasure_bench,
        revision_bench,
        bundle_bench,
        agent_tools_bench,
        mcp_bench,
        audit_bench,
        webhook_bench,
        stability_bench,
        routing_eval_bench,
        screening_bench,
        migration_bench,
        what_if_bench,
    )
    for module in modules:
        if only and module.__name__.removeprefix("bench.") not in only:
            continue
        try:
            module.run(median_ms, report)
        finally:
            module.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
