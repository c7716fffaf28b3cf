"""One database's half of ``make bench-scale`` (``bench/scale.py`` starts it, once per
database, with DATABASE_URL set to a scratch database): grows one team 1×, 10×, 100×
(``bench.scale_seed``) and times each operation at each size, in process.

``python -m bench.scale_run OUT.json [FACTORS]`` writes the figures to OUT.json after
each size, so a run cut short keeps what it measured.
"""

from __future__ import annotations

import os
import sys
import tempfile

_scratch = tempfile.mkdtemp(prefix="lens-bench-scale-")
os.environ.setdefault("DATABASE_URL", f"sqlite:///{_scratch}/scale.sqlite3")
os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lens.settings")

import django  # noqa: E402

django.setup()

import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext, setup_test_environment  # noqa: E402

# One run of an operation longer than this is its only sample: the 100× export and
# verify_audit take tens of seconds each, and a second run would say nothing new.
ONE_SAMPLE_MS = 5_000.0


def p50_ms(fn: Callable[[], object]) -> tuple[float, int]:
    """The median of a few runs (5, 3, or the first alone when it is slow) and how many."""
    from bench.common import median_ms

    started = time.perf_counter()
    fn()  # the warm-up, and the estimate of how many runs fit
    first = (time.perf_counter() - started) * 1000
    if first > ONE_SAMPLE_MS:
        return first, 1
    runs = 5 if first < 1_000 else 3
    return median_ms(fn, runs), runs


def second_call_ms(fn: Callable[[], object]) -> tuple[float, int]:
    """The median time of the second of two calls: the first fills any cache."""
    samples = []
    for _ in range(5):
        fn()
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples), len(samples)


def page(client: Client, path: str) -> Callable[[], object]:
    def get() -> object:
        response = client.get(path)
        assert response.status_code == 200, (path, response.status_code)
        return response

    return get


def queries(client: Client, path: str) -> int:
    with CaptureQueriesContext(connection) as ctx:
        page(client, path)()
    return len(ctx.captured_queries)


def slowest(client: Client, path: str, count: int = 3) -> list[dict[str, Any]]:
    """The ``count`` slowest statements of one request to ``path``, each with its plan
    (EXPLAIN ANALYZE on PostgreSQL, EXPLAIN QUERY PLAN on SQLite): where a page's time
    goes when it does not stay flat."""
    with CaptureQueriesContext(connection) as ctx:
        page(client, path)()
    ranked = sorted(ctx.captured_queries, key=lambda q: -float(q["time"]))[:count]
    found = []
    for query in ranked:
        sql = query["sql"]
        explain = "EXPLAIN ANALYZE " if connection.vendor == "postgresql" else "EXPLAIN QUERY PLAN "
        try:
            with connection.cursor() as cursor:
                cursor.execute(explain + sql)
                plan = "\n".join(" ".join(str(c) for c in row) for row in cursor.fetchall())
        except Exception as exc:  # a statement the log cannot replay as written
            plan = f"(no plan: {exc})"
        found.append({"ms": round(float(query["time"]) * 1000, 2), "sql": sql[:2000], "plan": plan})
    return found


def measure(
    factor: int, growth: Any, client: Client, api: Client, *, explain: bool
) -> dict[str, Any]:
    from bench.common import analyze
    from bench.data import big_memory_config
    from bench.scale_seed import BIG, QUERY, Sizes
    from lens.agents import get_agent
    from lens.audit import verify
    from lens.models import AuditEvent
    from memory.bundles.exporting import export_bundle
    from memory.composition import compose
    from memory.core.what_if import OrderChange
    from memory.models import Delivery, MemoryRecord
    from memory.what_if import what_if

    sizes = Sizes.at(factor)
    started = time.perf_counter()
    growth.grow_to(sizes)
    analyze()
    seeded = time.perf_counter() - started
    team = growth.team
    print(f"  {factor}×: grown in {seeded:.0f} s", flush=True)

    scratch = Path(tempfile.mkdtemp(prefix="lens-scale-export-"))

    def export() -> None:
        with (scratch / "big.bundle.jsonl.gz").open("wb") as out:
            export_bundle(get_agent(team, BIG)).write_to(out)

    def verified() -> None:
        found = verify(team)
        assert found.first_bad is None, found.problem

    order = tuple(reversed([s.id for s in big_memory_config().background.sections]))
    search = "/memories/?q=" + QUERY.replace(" ", "+")
    paths = {
        "lens": f"/agents/{BIG}/",
        "queue": "/approvals/",
        "search": search,
        "timeline": f"/agents/{BIG}/deliveries/",
        "audit_page": "/audit/",
    }
    composition = f"/api/agents/{BIG}/composition"

    def paged(path: str) -> Callable[[], tuple[float, int]]:
        return lambda: p50_ms(page(client, path))

    timed: dict[str, Callable[[], tuple[float, int]]] = {
        "compose_uncached": lambda: p50_ms(lambda: compose(get_agent(team, BIG))),
        "compose_cached": lambda: second_call_ms(page(api, composition)),
        **{name: paged(path) for name, path in paths.items()},
        "verify_audit": lambda: p50_ms(verified),
        "export": lambda: p50_ms(export),
        "what_if": lambda: p50_ms(
            lambda: what_if(get_agent(team, BIG), OrderChange(order), 50, diff=False)
        ),
    }
    figures: dict[str, Any] = {}
    for name, run in timed.items():
        ms, runs = run()
        figures[name] = {"ms": round(ms, 2), "runs": runs}
        if name in paths:
            figures[name]["queries"] = queries(client, paths[name])
            if explain:
                figures[name]["slowest"] = slowest(client, paths[name])
        elif name == "compose_cached" and explain:
            figures[name]["slowest"] = slowest(api, composition)
        print(f"    {name:<18} {ms:10.1f} ms  (p50 of {runs})", flush=True)
    big = get_agent(team, BIG)
    return {
        "factor": factor,
        "seed_s": round(seeded, 1),
        # How busy the machine was (other work shares its two cores): the 1-minute load.
        "load": round(os.getloadavg()[0], 1),
        "rows": {
            "agents": sizes.agents,
            "memories": MemoryRecord.objects.filter(agent=big).count(),
            "team_memories": MemoryRecord.objects.filter(agent__team=team).count(),
            "deliveries": Delivery.objects.filter(agent=big).count(),
            "audit_events": AuditEvent.objects.filter(team=team).count(),
        },
        "figures": figures,
    }


def main(out: Path, factors: list[int]) -> int:
    from bench.scale_seed import Growth
    from lens.models import ApiToken, Membership, Team
    from lens.serving.runtime import tune_gc

    started = time.perf_counter()
    call_command("migrate", verbosity=0)
    setup_test_environment()
    tune_gc()  # as the served application does once it is loaded
    team = Team.objects.create(slug="bench-scale", name="Bench scale")
    user = User.objects.create_user("bench-scale", password="x")
    Membership.objects.create(team=team, user=user)
    token, raw = ApiToken.objects.issue(team, name="runtime")
    client = Client()
    client.force_login(user)
    client.get(f"/?team={team.slug}")
    api = Client(headers={"Authorization": f"Bearer {raw}"})
    growth = Growth(team, token)
    result: dict[str, Any] = {"database": connection.vendor, "sizes": []}
    print(f"bench-scale on {connection.vendor}", flush=True)
    for factor in factors:
        # The plans of the largest size only: where growth shows.
        explain = factor == factors[-1]
        result["sizes"].append(measure(factor, growth, client, api, explain=explain))
        result["seconds"] = round(time.perf_counter() - started, 1)
        out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    wanted = [int(f) for f in sys.argv[2].split(",")] if len(sys.argv) > 2 else [1, 10, 100]
    sys.exit(main(Path(sys.argv[1]), wanted))
