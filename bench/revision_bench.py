"""Revision targets (SPEC §14) for the 40-section, 2,000-entry agent with 1,000 memories:
what recording a revision adds to a PUT, the history and a diff, and the history's page
with 10,000 revisions. ``DEBUG=1 .venv/bin/python -m bench revision_bench`` runs them alone.
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from unittest.mock import patch

from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from bench.common import analyze
from bench.data import SECTIONS, big_config
from bench.delivery_bench import MEMORIES, _big_agent
from lens.actors import Actor
from lens.agents import config_of, with_config, write_config
from lens.core import token_counts
from lens.core.background import Background
from lens.core.config import AgentConfig
from lens.core.revisions import config_sha256
from lens.models import Agent, ApiToken, Membership, Revision, StoredConfig, Team, Via
from lens.revisions import current_number, record_revision
from memory.as_of import compose_as_of
from memory.composition import compose
from memory.configuring import store_agent

_RUN = uuid.uuid4().hex[:8]
ROUNDS = 25
PUT_RUNS = 3  # the PUT ratio, measured this many times (the machine's load varies)
DIFF_RUNS = 9
RATIO_TARGET = 1.15
HISTORY = 10_000
PAGE = 50


@dataclass(frozen=True)
class Timed:
    fastest: float  # ms, wall clock
    median: float
    cpu: float  # ms of this process's CPU time in its fastest run by that measure


def _timed(fns: dict[str, Callable[[], object]], rounds: int) -> dict[str, Timed]:
    """Each function timed ``rounds`` times, in turn so that machine noise hits them alike.

    The fastest run is the one noise touched least. On a loaded machine even that one
    waits for a core; the process's CPU time does not count those waits (nor, on
    PostgreSQL, the server's own work), so it is printed beside it.
    """
    walls: dict[str, list[float]] = {name: [] for name in fns}
    cpus: dict[str, list[float]] = {name: [] for name in fns}
    for fn in fns.values():
        fn()  # warm
    for _ in range(rounds):
        for name, fn in fns.items():
            start, cpu_start = time.perf_counter(), time.process_time()
            fn()
            walls[name].append((time.perf_counter() - start) * 1000)
            cpus[name].append((time.process_time() - cpu_start) * 1000)
    return {
        name: Timed(min(walls[name]), statistics.median(walls[name]), min(cpus[name]))
        for name in fns
    }


def _changed(config: AgentConfig, n: int) -> AgentConfig:
    """``config`` with one authored entry's value changed: a typical edit."""
    sections = list(config.background.sections)
    section = sections[n % SECTIONS]
    entries = list(section.entries)
    entries[0] = entries[0].model_copy(update={"value": f"edited {n}"})
    sections[n % SECTIONS] = section.model_copy(update={"entries": tuple(entries)})
    return config.model_copy(update={"background": Background(sections=tuple(sections))})


def _no_revision(*_args: Any, **_kwargs: Any) -> None:
    return None


def _queries(client: Client, path: str) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(path)
    assert response.status_code == 200, (path, response.status_code, response.content[:200])
    return len(ctx.captured_queries)


def run(median_ms: Callable[..., float], report: Callable[..., None]) -> None:
    team = Team.objects.create(slug=f"bench-revisions-{_RUN}", name="Bench revisions")
    token, raw = ApiToken.objects.issue(team, name="bench")
    api = Client(headers={"Authorization": f"Bearer {raw}"})
    actor = Actor.for_token(token)
    agent = _big_agent(team)  # "big": 40 sections, 2,000 entries, 1,000 memories
    base = config_of(with_config(Agent.objects.filter(pk=agent.pk)).get())
    analyze()

    print(
        f"\nRevisions: the {SECTIONS}-section, 2,000-entry agent with {MEMORIES:,} memories"
        " (each write a config never stored before)"
    )
    written = [0]

    def next_edit() -> AgentConfig:
        # A config never written before: each write stores a new config, as edits do.
        written[0] += 1
        return _changed(base, written[0])

    def put() -> None:
        body = next_edit().model_dump_json()
        response = api.put("/api/agents/big", body, content_type="application/json")
        assert response.status_code == 200, response.content[:200]

    def put_without_revision() -> None:
        # The same request with recording the revision left out (the one call every
        # change makes), so the two differ by the revision alone.
        with patch("lens.proposals.record_revision", _no_revision):
            put()

    def puts() -> tuple[Timed, Timed]:
        timed = _timed({"without": put_without_revision, "with": put}, ROUNDS)
        return timed["without"], timed["with"]

    print(
        f"  PUT /api/agents/big through Django's request handler, with and without"
        f" recording the revision, in turn, {ROUNDS} rounds each, {PUT_RUNS} times:"
    )
    ratios = []
    for _run in range(PUT_RUNS):
        before, after = puts()
        ratio = after.median / before.median
        ratios.append(ratio)
        print(
            f"    medians {after.median:.1f} / {before.median:.1f} ms: {ratio:.2f} ×;"
            f" fastest {after.fastest:.1f} / {before.fastest:.1f} ms:"
            f" {after.fastest / before.fastest:.2f} ×; CPU time {after.cpu:.1f} /"
            f" {before.cpu:.1f} ms: {after.cpu / before.cpu:.2f} ×"
        )
    ratio = statistics.median(ratios)
    verdict = "met" if ratio <= RATIO_TARGET else "MISSED"
    print(
        f"  {'revision overhead: PUT p50 with / without, median of runs':<58} {ratio:9.2f} ×"
        f"  (target ≤ {RATIO_TARGET:g} ×)  {verdict}"
    )

    def record_alone() -> float:
        """The revision's own part of the write, timed inside the write's transaction
        (its commit, which also writes the new config's text, is not in it)."""
        with transaction.atomic():
            write_config(team, "big", next_edit())
            stored = config_of(with_config(Agent.objects.filter(pk=agent.pk)).get())
            start = time.perf_counter()
            record_revision(agent, actor, Via.API, config=stored)
            return (time.perf_counter() - start) * 1000

    alone = [record_alone() for _ in range(ROUNDS)]
    report("  of which record_revision alone, fastest", min(alone))
    report("  of which record_revision alone, median", statistics.median(alone))
    print(f"    {statistics.median(alone) / before.median:.1%} of the median PUT without it")

    newest = current_number(agent)
    print(f"  revisions of the agent after these writes: {newest}")
    report(
        "GET …/revisions (first page of 50), median",
        median_ms(lambda: api.get("/api/agents/big/revisions"), 30),
        100,
    )
    # Loads the token encoder, and counts the prompt of the revision before the first
    # shown below.
    api.get(f"/api/agents/big/revisions/{newest - DIFF_RUNS - 1}/diff")

    def diff_ms(number: int, *, forget: bool = False) -> tuple[float, float]:
        """One diff's wall-clock and CPU time, in ms."""
        if forget:
            token_counts._counter.forget()  # as a process that never counted either prompt
        started, cpu_started = time.perf_counter(), time.process_time()
        response = api.get(f"/api/agents/big/revisions/{number}/diff")
        assert response.status_code == 200, response.content[:200]
        return (time.perf_counter() - started) * 1000, (time.process_time() - cpu_started) * 1000

    def report_diffs(name: str, timings: list[tuple[float, float]]) -> None:
        walls, cpus = [wall for wall, _cpu in timings], [cpu for _wall, cpu in timings]
        report(f"{name}, median", statistics.median(walls), 100)
        print(
            f"    slowest {max(walls):.1f} ms; CPU time median {statistics.median(cpus):.1f} ms,"
            f" slowest {max(cpus):.1f} ms"
        )

    # Each revision shown for the first time, the one before it shown already: its
    # prompt's tokens are counted from the stretch that changed.
    report_diffs(
        "GET …/revisions/{n}/diff, a revision's first showing",
        [diff_ms(number) for number in range(newest - DIFF_RUNS, newest + 1)],
    )
    report_diffs(
        "GET …/revisions/{n}/diff, neither prompt counted before",
        [diff_ms(newest - n, forget=True) for n in range(DIFF_RUNS)],
    )
    report(
        "GET …/revisions/{n}/diff (two entries changed), median",
        median_ms(lambda: api.get(f"/api/agents/big/revisions/{newest}/diff"), 15),
        100,
    )
    report(
        "GET …/revisions/{n}/diff?against=1 (one entry apart), median",
        median_ms(lambda: api.get(f"/api/agents/big/revisions/{newest}/diff?against=1"), 15),
        100,
    )
    _as_of(team, agent, actor, next_edit, report)
    _long_history(team, api, median_ms, report)


AS_OF_REVISIONS = 100
AS_OF_TARGET = 2.0


def _as_of(
    team: Team,
    agent: Agent,
    actor: Actor,
    next_edit: Callable[[], AgentConfig],
    report: Callable[..., None],
) -> None:
    """The composition as of a past moment against the live one, for the agent with
    its 1,000 memories and 100 revisions (SPEC §14: at most 2×)."""
    while current_number(agent) < AS_OF_REVISIONS:
        store_agent(team, "big", next_edit(), actor=actor, via=Via.API)
    middle = Revision.objects.get(agent=agent, number=AS_OF_REVISIONS // 2).created_at
    fresh = with_config(Agent.objects.filter(pk=agent.pk).select_related("team"))
    timed = _timed(
        {
            "live": lambda: compose(fresh.get()),
            "as_of": lambda: compose_as_of(fresh.get(), middle),
        },
        ROUNDS // 2,
    )
    report("live composition (agent read + compose), fastest", timed["live"].fastest)
    report("composition as of revision 50's time, fastest", timed["as_of"].fastest)
    ratio = timed["as_of"].fastest / timed["live"].fastest
    verdict = "met" if ratio <= AS_OF_TARGET else "MISSED"
    print(f"  {'as_of / live':<58} {ratio:9.2f} ×  (target ≤ {AS_OF_TARGET:g} ×)  {verdict}")


def _long_history(
    team: Team, api: Client, median_ms: Callable[..., float], report: Callable[..., None]
) -> None:
    """An agent with 100, then 10,000 revisions, bulk-written: a few stored configs shared
    by all of them, as an agent edited back and forth holds."""
    agent, _ = store_agent(team, "history", big_config())
    first = Revision.objects.get(agent=agent)
    configs = [first.config_id]
    for n in range(1, 4):
        text = first.config.text.replace("lorem", f"ipsum{n}", 1)
        stored, _ = StoredConfig.objects.get_or_create(
            sha256=config_sha256(text), defaults={"text": text}
        )
        configs.append(stored.sha256)
    start = timezone.now() - timedelta(days=HISTORY)

    def add(upto: int) -> None:
        have = current_number(agent)
        for chunk in range(have + 1, upto + 1, 5_000):
            Revision.objects.bulk_create(
                Revision(
                    agent=agent,
                    number=n,
                    created_at=start + timedelta(minutes=n),
                    actor=f"token bench{n % 7}…",
                    via=Via.API if n % 3 else Via.ADMIN,
                    config_id=configs[n % len(configs)],
                    summary=[
                        {
                            "change": "entry_changed",
                            "section": f"section_{n % SECTIONS}",
                            "key": "k",
                        }
                    ],
                )
                for n in range(chunk, min(chunk + 5_000, upto + 1))
            )
        analyze()

    path = "/api/agents/history/revisions"
    deepest = f"{path}?offset={HISTORY - PAGE}"
    print(f"\nThe history API, a page of {PAGE}: one agent with 100, then {HISTORY:,} revisions")
    # The page people read, /agents/history/revisions/, as a member of the team.
    member = get_user_model().objects.create_user(f"bench-revisions-{_RUN}")
    Membership.objects.create(team=team, user=member)
    browser = Client()
    browser.force_login(member)
    page = "/agents/history/revisions/"
    add(100)
    few = _queries(api, path)
    _queries(browser, page)  # the first page of a session reads what later ones cache
    page_few = _queries(browser, page)
    report("GET …/revisions, 100 revisions, median", median_ms(lambda: api.get(path), 30), 100)
    add(HISTORY)
    many = _queries(api, path)
    report(
        f"GET …/revisions, {HISTORY:,} revisions, first page, median",
        median_ms(lambda: api.get(path), 30),
        100,
    )
    report(
        f"GET …/revisions, {HISTORY:,} revisions, last page (offset {HISTORY - PAGE:,}), median",
        median_ms(lambda: api.get(deepest), 30),
        100,
    )
    print(f"  queries of the page: {few} with 100 revisions, {many} with {HISTORY:,}")
    page_many = _queries(browser, page)
    print(
        f"  queries of /agents/<slug>/revisions/: {page_few} with 100 revisions,"
        f" {page_many} with {HISTORY:,}"
    )
    report(
        f"/agents/<slug>/revisions/ page, {HISTORY:,} revisions, first page, median",
        median_ms(lambda: browser.get(page), 30),
        100,
    )
    report(
        f"/agents/<slug>/revisions/ page, {HISTORY:,} revisions, last page, median",
        median_ms(lambda: browser.get(f"{page}?page={HISTORY // PAGE}"), 30),
        100,
    )


def cleanup() -> None:
    teams = Team.objects.filter(slug=f"bench-revisions-{_RUN}")
    digests = set(
        Revision.objects.filter(agent__team__in=teams).values_list("config_id", flat=True)
    )
    teams.delete()
    # Stored configs are shared across agents; drop only ours that nothing else holds.
    held = set(Revision.objects.filter(config_id__in=digests).values_list("config_id", flat=True))
    StoredConfig.objects.filter(sha256__in=digests - held).delete()
    get_user_model().objects.filter(username=f"bench-revisions-{_RUN}").delete()
