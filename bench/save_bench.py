"""A ``memory_save`` over the API in process, and each of its statements timed
(``docs/performance.md``, "A save's statements"): ``python -m bench save_bench``.

The agent is ``bench.http``'s saver (two declared sections, ``user-background``), the
body the one ``bench.http`` sends. Each statement is timed where Django sends it (an
execute wrapper: the driver's call, the round trip included), and ``COMMIT`` where
Django sends it. On PostgreSQL psycopg sends ``BEGIN`` on its own just before the
transaction's first statement (the gate's probe), so that statement's time holds two
round trips. Run as served, with DEBUG off.
"""

from __future__ import annotations

import re
import statistics
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection
from django.test import Client, override_settings

from bench.data import saver_config
from lens.models import ApiToken, Team
from memory.configuring import store_agent

_RUN = uuid.uuid4().hex[:8]
SAVES = 400
WARM = 50

# What each statement of a save does, by what its text starts with or names.
_KINDS: list[tuple[str, str]] = [
    (r"lens_apitoken", "token, agent and its declarations"),
    (r"^SELECT \(SELECT created_at", "gate's probe and the agent's newest time"),
    (r"^WITH w0 AS", "record, search document, promotion row, events"),
    (r"^INSERT INTO memory_memoryrecord", "record"),
    (r"^INSERT INTO memory_searchdoc", "search document (FTS5 triggers)"),
    (r"^INSERT INTO memory_promotion", "promotion row"),
    (r"^INSERT INTO memory_memoryevent", "events"),
    (r"^WITH named AS", "agent's lock and the audit head's bump"),
    (r"^INSERT INTO lens_audithead", "audit head's bump"),
    (r"^WITH added AS", "audit events, head's hash, webhook endpoints"),
    (r"^INSERT INTO lens_auditevent", "audit events"),
    (r"^UPDATE lens_audithead", "audit head's hash"),
    (r"webhooks_endpoint", "webhook endpoints"),
]


def _kind(sql: str) -> str:
    return next((name for pattern, name in _KINDS if re.search(pattern, sql)), sql[:60])


@contextmanager
def _timing(found: dict[str, list[float]]) -> Iterator[None]:
    """Time each statement, BEGIN and COMMIT of what runs inside, in µs, by kind."""
    wrapper: Any = connection

    def timed(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            found.setdefault(_kind(sql), []).append((time.perf_counter() - start) * 1e6)

    def around(name: str, original: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> Any:
            start = time.perf_counter()
            try:
                return original()
            finally:
                found.setdefault(name, []).append((time.perf_counter() - start) * 1e6)

        return run

    # SQLite's BEGIN IMMEDIATE is a statement Django sends through the wrapper.
    commit = wrapper._commit
    wrapper._commit = around("COMMIT", commit)
    try:
        with connection.execute_wrapper(timed):
            yield
    finally:
        wrapper._commit = commit


def run(median_ms: Callable[..., float], report: Callable[..., None]) -> None:
    team = Team.objects.create(slug=f"bench-save-{_RUN}", name="Bench save")
    _token, raw = ApiToken.objects.issue(team, name="bench")
    saver = saver_config()
    store_agent(team, "saver", saver)
    api = Client(headers={"Authorization": f"Bearer {raw}"})

    def save(n: int) -> None:
        content = f"The user mentioned fact number {n} worth keeping."
        answer = api.post(
            "/api/agents/saver/memories",
            {"kind": "profile", "content": content},
            content_type="application/json",
        )
        assert answer.status_code == 201, answer.content

    for n in range(WARM):
        save(n)
    whole: list[float] = []
    found: dict[str, list[float]] = {}
    # DEBUG off, as served: DEBUG's query log would compose each statement's text.
    with override_settings(DEBUG=False), _timing(found):
        for n in range(WARM, WARM + SAVES):
            start = time.perf_counter()
            save(n)
            whole.append((time.perf_counter() - start) * 1000)
    print(f"\nmemory_save over the API, in process ({SAVES} saves, {connection.vendor})")
    # The goals are over HTTP (``bench.http``): in process is what is left of them.
    goal = 6.0 if connection.vendor == "postgresql" else 4.0
    report("memory_save, whole request, p50", statistics.median(whole), goal)
    per_save = sum(len(samples) for samples in found.values()) / SAVES
    print(f"  statements per save: {per_save:g}")
    for name, samples in found.items():
        median = statistics.median(samples)
        print(f"  {name:<58} {median:9.0f} µs  ({len(samples) / SAVES:g} a save)")


def cleanup() -> None:
    Team.objects.filter(slug=f"bench-save-{_RUN}").delete()
