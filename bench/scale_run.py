"""One database's half of ``make bench-scale`` (``bench/scale.py`` starts it, once per
database, with DATABASE_URL set to a scratch database): grows one team 1×, 10×, 100×
(``bench.scale_seed``) and times each operation at each size, in process.

A second team stays at 1× throughout and each operation is timed on both teams in
alternating rounds: other work shares this machine's two cores and its speed drifts by
2× over minutes, so a growth ratio is taken between two figures of one moment (the grown
team's and the 1× team's), not between figures minutes apart.

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
from dataclasses import dataclass  # noqa: E402
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
PATHS = {
    "lens": "/agents/big/",
    "queue": "/approvals/",
    "search": "/memories/?q=w7+w42",  # bench.scale_seed.QUERY
    "timeline": "/agents/big/deliveries/",
    "audit_page": "/audit/",
}
COMPOSITION = "/api/agents/big/composition"


@dataclass(frozen=True)
class Subject:
    """A team as the timed operations see it: a signed-in member's pages, a token's API."""

    team: Any
    client: Client
    api: Client


def _once(fn: Callable[[], object], second_call: bool) -> float:
    """One run of ``fn`` in ms; with ``second_call``, the second of two calls (the first
    fills any cache)."""
    if second_call:
        fn()
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def paired_p50(
    grown: Callable[[], object], reference: Callable[[], object], *, second_call: bool = False
) -> tuple[tuple[float, int], float]:
    """The p50 of a few runs of ``grown`` (5, 3, or its warm-up alone when that is slow)
    and of as many of ``reference`` (at least 3), the two alternating round by round."""
    first = _once(grown, second_call)  # the warm-up, and the estimate of how many runs fit
    _once(reference, second_call)
    runs = 1 if first > ONE_SAMPLE_MS else 3 if first > 1_000 else 5
    grown_ms: list[float] = [first] if runs == 1 else []
    reference_ms: list[float] = []
    for _ in range(max(runs, 3)):
        reference_ms.append(_once(reference, second_call))
        if len(grown_ms) < runs:
            grown_ms.append(_once(grown, second_call))
    return (statistics.median(grown_ms), len(grown_ms)), statistics.median(reference_ms)


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


def operations(subject: Subject, scratch: Path) -> dict[str, Callable[[], object]]:
    """Each timed operation on ``subject``'s team, as one call."""
    from bench.data import big_memory_config
    from bench.scale_seed import BIG
    from lens.agents import get_agent
    from lens.audit import verify
    from memory.bundles.exporting import export_bundle
    from memory.composition import compose
    from memory.core.what_if import OrderChange
    from memory.what_if import what_if

    team = subject.team
    order = tuple(reversed([s.id for s in big_memory_config().background.sections]))

    def export() -> None:
        with (scratch / f"{team.slug}.bundle.jsonl.gz").open("wb") as out:
            export_bundle(get_agent(team, BIG)).write_to(out)

    def verified() -> None:
        found = verify(team)
        assert found.first_bad is None, found.problem

    return {
        "compose_uncached": lambda: compose(get_agent(team, BIG)),
        "compose_cached": page(subject.api, COMPOSITION),
        **{name: page(subject.client, path) for name, path in PATHS.items()},
        "verify_audit": verified,
        "export": export,
        "what_if": lambda: what_if(get_agent(team, BIG), OrderChange(order), 50, diff=False),
    }


def measure(
    factor: int, growth: Any, grown: Subject, reference: Subject, *, explain: bool
) -> dict[str, Any]:
    from bench.common import analyze
    from bench.scale_seed import BIG, Sizes
    from lens.agents import get_agent
    from lens.models import AuditEvent
    from memory.models import Delivery, MemoryRecord

    sizes = Sizes.at(factor)
    started = time.perf_counter()
    growth.grow_to(sizes)
    analyze()
    seeded = time.perf_counter() - started
    print(f"  {factor}×: grown in {seeded:.0f} s", flush=True)
    scratch = Path(tempfile.mkdtemp(prefix="lens-scale-export-"))
    timed, beside = operations(grown, scratch), operations(reference, scratch)
    figures: dict[str, Any] = {}
    for name, run in timed.items():
        (ms, runs), reference_ms = paired_p50(
            run, beside[name], second_call=name == "compose_cached"
        )
        figures[name] = {"ms": round(ms, 2), "runs": runs, "reference_ms": round(reference_ms, 2)}
        if name in PATHS:
            figures[name]["queries"] = queries(grown.client, PATHS[name])
            if explain:
                figures[name]["slowest"] = slowest(grown.client, PATHS[name])
        elif name == "compose_cached" and explain:
            figures[name]["slowest"] = slowest(grown.api, COMPOSITION)
        print(
            f"    {name:<18} {ms:10.1f} ms  (p50 of {runs}; the 1× team now {reference_ms:.1f} ms)",
            flush=True,
        )
    team = grown.team
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


def subject(slug: str, user: User) -> tuple[Subject, Any]:
    """A team of ``user``'s, signed in to its pages, with a token for its API."""
    from lens.models import ApiToken, Membership, Team
    from web.pages.toolkit import SESSION_KEY

    team = Team.objects.create(slug=slug, name=slug)
    Membership.objects.create(team=team, user=user)
    token, raw = ApiToken.objects.issue(team, name="runtime")
    client = Client()
    client.force_login(user)
    # Remembered as the session's team only when asked from one of the product's own
    # pages (web/pages/toolkit.py): the user belongs to both teams.
    client.get(f"/?team={team.slug}", headers={"Sec-Fetch-Site": "same-origin"})
    assert client.session[SESSION_KEY] == team.slug, "the pages would show another team"
    api = Client(headers={"Authorization": f"Bearer {raw}"})
    return Subject(team, client, api), token


def main(out: Path, factors: list[int]) -> int:
    from bench.scale_seed import Growth, Sizes
    from lens.serving.runtime import tune_gc

    started = time.perf_counter()
    call_command("migrate", verbosity=0)
    setup_test_environment()
    tune_gc()  # as the served application does once it is loaded
    user = User.objects.create_user("bench-scale", password="x")
    grown, token = subject("bench-scale", user)
    reference, reference_token = subject("bench-scale-1x", user)
    Growth(reference.team, reference_token).grow_to(Sizes.at(1))
    growth = Growth(grown.team, token)
    result: dict[str, Any] = {"database": connection.vendor, "sizes": []}
    print(f"bench-scale on {connection.vendor}", flush=True)
    for factor in factors:
        # The plans of the largest size only: where growth shows.
        explain = factor == factors[-1]
        result["sizes"].append(measure(factor, growth, grown, reference, explain=explain))
        result["seconds"] = round(time.perf_counter() - started, 1)
        out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    wanted = [int(f) for f in sys.argv[2].split(",")] if len(sys.argv) > 2 else [1, 10, 100]
    sys.exit(main(Path(sys.argv[1]), wanted))
