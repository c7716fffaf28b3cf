"""Audit log targets (SPEC §15), in process: ``verify_audit`` over 100,000 events (goal
under 5 s on SQLite), and what the append adds to a key/value write and a memory save
here (the contract's figure is over HTTP: ``python -m bench.audit_http``).
``DEBUG=1 .venv/bin/python -m bench audit_bench`` runs them alone.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from django.db import transaction

import lens.audit
from kvstore import store
from lens.actors import Actor
from lens.audit import Entry, append, verify
from lens.inserts import insert_unless_taken
from lens.models import ApiToken, Team

_RUN = uuid.uuid4().hex[:8]
EVENTS = 100_000
BATCH = 1000


def _skip(team_id: int, actor: Actor | str, entries: object, *, first: Any = None) -> bool:
    # The change's own row is still written (a delivery's goes with its event).
    return first is None or insert_unless_taken(first)


def _without_audit(fn: Callable[[], object]) -> Callable[[], object]:
    def run() -> object:
        kept = lens.audit.append
        lens.audit.append = _skip  # measured off
        try:
            return fn()
        finally:
            lens.audit.append = kept  # and back on

    return run


def run(median_ms: Callable[..., float], report: Callable[..., None]) -> None:
    print("\nAudit log")
    team = Team.objects.create(slug=f"bench-audit-{_RUN}", name="Bench audit")
    token, _raw = ApiToken.objects.issue(team)
    actor = Actor.for_token(token)
    with_ms = median_ms(lambda: store.write(team, "bench.audit", "x" * 300, actor=actor), 400)
    without_ms = median_ms(
        _without_audit(lambda: store.write(team, "bench.audit", "x" * 300, actor=actor)), 400
    )
    again_ms = median_ms(lambda: store.write(team, "bench.audit", "x" * 300, actor=actor), 400)
    audited = (with_ms + again_ms) / 2
    report("key/value write with its audit event, median", audited * 1000, unit="µs")
    report("key/value write without it, median", without_ms * 1000, unit="µs")
    print(f"  {'ratio (in process; the goal is over HTTP)':<58} {audited / without_ms:9.2f} ×")

    started = time.perf_counter()
    for first in range(0, EVENTS, BATCH):
        entries = [
            Entry("kv.written", "kv", f"k{n}", details={"version": n, "runes": 300})
            for n in range(first, first + BATCH)
        ]
        with transaction.atomic():
            append(team.pk, actor, entries)
    report(
        f"appending {EVENTS:,} events in batches of {BATCH:,}",
        time.perf_counter() - started,
        unit="s",
    )
    started = time.perf_counter()
    found = verify(team)
    seconds = time.perf_counter() - started
    assert found.first_bad is None, found.problem
    report(f"verify_audit over {found.events:,} events", seconds, 5.0, unit="s")


def cleanup() -> None:
    Team.objects.filter(slug=f"bench-audit-{_RUN}").delete()
