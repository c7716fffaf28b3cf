"""Delivery targets (SPEC §11, §4.5): recording beside composing, bytes per delivery,
the timeline and "delivered in" with 100,000 deliveries, token counting of a big prompt.
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Callable
from datetime import timedelta

from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from bench.common import analyze
from bench.data import big_config
from bench.memory_bench import _fill
from lens.actors import Actor
from lens.core import token_counts
from lens.core.background import Background, BackgroundSection
from lens.core.token_counts import count_tokens
from lens.models import Agent, ApiToken, Membership, Team
from memory.composition import compose
from memory.configuring import store_agent
from memory.core.deliveries import DeliveryInput
from memory.deliveries.ledger import deliver, shaped_by
from memory.models import Delivery, MemoryRecord

_RUN = uuid.uuid4().hex[:8]
MEMORIES = 1_000
STORAGE_DELIVERIES = 10_000
TIMELINE_DELIVERIES = 100_000


def _big_agent(team: Team) -> Agent:
    """The 40-section, 2,000-entry agent, with the user-background sections its 1,000
    memories route to."""
    config = big_config()
    sections = (
        *config.background.sections,
        BackgroundSection(id="user_profile", title="About the User", promotion="auto"),
        BackgroundSection(id="user_preferences", title="User Preferences", promotion="guarded"),
    )
    config = config.model_copy(
        update={"routing_spec": "user-background", "background": Background(sections=sections)}
    )
    agent = store_agent(team, "big", config)[0]
    _fill(agent, MEMORIES)
    return agent


def _interleaved(fns: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """Median ms of each function, run in turn so machine noise hits them alike."""
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for fn in fns.values():
        fn()  # warm
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            samples[name].append((time.perf_counter() - start) * 1000)
    return {name: statistics.median(values) for name, values in samples.items()}


def _table_bytes(table: str) -> int:
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT pg_total_relation_size(%s)", [table])
            return int(cursor.fetchone()[0])
        cursor.execute(
            "SELECT sum(pgsize) FROM dbstat WHERE name IN "
            "(SELECT name FROM sqlite_master WHERE tbl_name = %s)",
            [table],
        )
        return int(cursor.fetchone()[0] or 0)


def _copies(agent: Agent, template: Delivery, count: int, token: ApiToken) -> None:
    """``count`` deliveries like ``template`` (what deliver() writes when nothing
    changed), older than it, one second apart; sessions of 20 deliveries each. Written
    oldest first, in time order, as deliveries arrive (indexes fill as they would)."""
    for start in range(0, count, 5_000):
        Delivery.objects.bulk_create(
            Delivery(
                agent=agent,
                composition_id=template.composition_id,
                delivered_at=template.delivered_at - timedelta(seconds=count - i),
                session=f"sess-{i // 20:06d}",
                model="gpt-4.1-mini",
                actor_token=token,
            )
            for i in range(start, min(start + 5_000, count))
        )


def run(median_ms: Callable[..., float], report: Callable[..., None]) -> None:
    team = Team.objects.create(slug=f"bench-deliveries-{_RUN}", name="Bench deliveries")
    user = User.objects.create_user(f"bench-deliveries-{_RUN}", password="x")
    Membership.objects.create(team=team, user=user)
    token, raw = ApiToken.objects.issue(team, name="runtime")
    api = Client(headers={"Authorization": f"Bearer {raw}"})
    agent = _big_agent(team)
    analyze()

    print(f"\nDeliveries: the 40-section, 2,000-entry agent with {MEMORIES:,} memories")
    timed = _interleaved(
        {
            "composition": lambda: api.get("/api/agents/big/composition"),
            "delivery": lambda: api.post(
                "/api/agents/big/deliveries", "", content_type="application/json"
            ),
        },
        15,
    )
    report("GET …/composition server time (median)", timed["composition"])
    report("POST …/deliveries server time (median)", timed["delivery"])
    report(
        "recording overhead: delivery / composition",
        timed["delivery"] / timed["composition"],
        1.3,
        unit="×",
    )

    prompt = compose(agent).prompt.text
    token_counts._counter.forget()
    encoding = token_counts._counter.encoding()
    cold = median_ms(lambda: len(encoding.encode_ordinary(prompt)), 10)
    report(f"token count of the whole prompt ({len(prompt):,} chars), uncached", cold, 20)
    report(
        "token count of the same prompt, cached by its hash",
        median_ms(lambda: count_tokens(prompt), 50),
    )

    small_team = Team.objects.create(slug=f"bench-small-deliveries-{_RUN}", name="Bench small")
    Membership.objects.create(team=small_team, user=user)
    small = store_agent(
        small_team, "wren", big_config().model_copy(update={"background": Background()})
    )[0]
    request = DeliveryInput(session="sess-000000", model="gpt-4.1-mini")
    template = deliver(small, Actor.for_token(token), request).delivery
    before = _table_bytes("memory_delivery")
    _copies(small, template, STORAGE_DELIVERIES, token)
    analyze()
    _print_breakdown()
    per_delivery = (_table_bytes("memory_delivery") - before) / STORAGE_DELIVERIES
    report(
        f"table space per unchanged delivery (rows + indexes, {STORAGE_DELIVERIES:,})",
        per_delivery,
        300,
        unit="B",
    )

    memory_id = MemoryRecord.objects.filter(agent=agent).values_list("pk", flat=True).first()
    newest = Delivery.objects.filter(agent=agent).order_by("-delivered_at").first()
    assert newest is not None
    browser = Client()
    browser.force_login(user)
    browser.get(f"/?team={team.slug}")
    timeline, memory_page = "/agents/big/deliveries/", f"/memories/{memory_id}/"
    few = {url: _queries(browser, url) for url in (timeline, memory_page)}
    report(
        "memory page before: ~16 deliveries (composes the agent)",
        median_ms(lambda: browser.get(memory_page), 15),
    )
    _copies(agent, newest, TIMELINE_DELIVERIES, token)
    analyze()
    print(f"\nWith {TIMELINE_DELIVERIES:,} deliveries of one agent")
    report(
        "timeline page /agents/big/deliveries/ (median)",
        median_ms(lambda: browser.get(timeline), 15),
        100,
    )
    report(
        "timeline page 1,000 (median)",
        median_ms(lambda: browser.get(f"{timeline}?page=1000"), 10),
        100,
    )
    report(
        "its Delivered in list alone (newest 10 and the total)",
        median_ms(lambda: shaped_by(agent, str(memory_id), 10), 15),
        100,
    )
    report(
        "memory page with its Delivered in list (median)",
        median_ms(lambda: browser.get(memory_page), 15),
    )
    many = {url: _queries(browser, url) for url in (timeline, memory_page)}
    for url in (timeline, memory_page):
        print(
            f"  queries {url:<40} {few[url]} with ~16 deliveries, {many[url]} with {TIMELINE_DELIVERIES:,}"
        )


def _print_breakdown() -> None:
    if connection.vendor != "sqlite":
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT name, sum(pgsize), sum(ncell) FROM dbstat WHERE name IN "
            "(SELECT name FROM sqlite_master WHERE tbl_name = 'memory_delivery') GROUP BY name"
        )
        for name, size, cells in cursor.fetchall():
            print(f"    {name:<48} {size:>10,} B  {size / max(cells, 1):6.1f} B/cell")


def _queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return len(ctx.captured_queries)


def cleanup() -> None:
    teams = Team.objects.filter(slug__endswith=_RUN, slug__contains="deliveries")
    Delivery.objects.filter(agent__team__in=teams).delete()
    teams.delete()
    User.objects.filter(username=f"bench-deliveries-{_RUN}").delete()
