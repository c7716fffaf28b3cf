"""Approval targets: the queue with 1,000 pending promotions, a page of 50 for an agent with
1,000 memories in the prompt's competition (every row's impact comes from the fold), a page
of 50 maximal-length memories whose word diffs are each a worst case, and bulk-approving
200."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable
from datetime import timedelta

from django.contrib.auth.models import Permission, User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from bench.common import analyze
from bench.memory_bench import SECTIONS, _agent, _fill, stored_row
from lens.actors import SYSTEM
from lens.core.background import Background
from lens.core.config import AgentConfig
from lens.models import Agent, Membership, Team
from memory.configuring import store_agent
from memory.models import (
    EventKind,
    MemoryEvent,
    MemoryRecord,
    Promotion,
    PromotionStatus,
    new_event,
)
from web.pages.toolkit import TEAM_FIELD

_RUN = uuid.uuid4().hex[:8]
# The content limit: a memory of this many code points is the longest a save accepts.
LONGEST = 10_000
LONG_ROWS = 50


def _alternating(first: str, second: str) -> str:
    """``first second first second …`` of exactly ``LONGEST`` code points: against the
    same words in the other order, the case that kept difflib busy for minutes."""
    return (f"{first} {second} " * LONGEST)[:LONGEST]


def _two_words(seed: int) -> str:
    """Random words from a vocabulary of two, ``LONGEST`` code points: a long shortest
    edit script between any two of them, the worst case for the bounded search."""
    rng = random.Random(seed)
    return " ".join(rng.choice("ab") for _ in range(LONGEST // 2))[:LONGEST].ljust(LONGEST, "a")


def _long_texts(i: int) -> tuple[str, str]:
    """Row ``i``'s old and new text: even rows alternate two words, odd rows are random."""
    if i % 2 == 0:
        return _alternating("a", "b"), _alternating("b", "a")
    return _two_words(2 * i), _two_words(2 * i + 1)


def _long_page(team: Team) -> Agent:
    """An agent whose page of 50 pending memories are all ``LONGEST`` code points long. Half
    of them replace something at their address: a superseded memory of the same length or
    an authored entry as long, with the other's words, so every diff is a worst case."""
    authored = [i for i in range(LONG_ROWS // 2) if i % 2]
    config = AgentConfig(
        name="long",
        persona="A benchmark agent.",
        routing_spec="user-background",
        background=Background.model_validate(
            {
                "sections": [
                    {
                        "id": section,
                        "title": title,
                        "promotion": tier,
                        "entries": [
                            {"key": f"long-{i}", "value": _long_texts(i)[0]} for i in authored
                        ]
                        if tier == "guarded"
                        else [],
                    }
                    for section, title, tier in SECTIONS
                ]
            }
        ),
    )
    agent = store_agent(team, "long", config)[0]
    start = timezone.now() - timedelta(hours=1)
    olders, records, promotions, events = [], [], [], []
    for i in range(LONG_ROWS):
        old, new = _long_texts(i)
        if i >= LONG_ROWS // 2:
            new = _alternating("c", "d")  # replaces nothing
        fields = {
            "kind": "preference",
            "label": f"long-{i}",
            "section": "user_preferences",
            "tier": "guarded",
        }
        record, promotion = stored_row(
            agent,
            content=new,
            status=PromotionStatus.PENDING,
            created_at=start + timedelta(seconds=i),
            **fields,
        )
        if i < LONG_ROWS // 2 and i not in authored:
            older, older_promotion = stored_row(
                agent,
                content=old,
                status=PromotionStatus.SUPERSEDED,
                created_at=start - timedelta(seconds=i),
                **fields,
            )
            record.supersedes = older
            olders.append(older)
            promotions.append(older_promotion)
        records.append(record)
        promotions.append(promotion)
        events.append(new_event(record.id, agent.pk, EventKind.SAVED, SYSTEM, record.created_at))
    MemoryRecord.objects.bulk_create([*olders, *records])
    Promotion.objects.bulk_create(promotions)
    MemoryEvent.objects.bulk_create(events)
    return agent


def _pending(agent: Agent, count: int) -> None:
    """``count`` pending preferences saved after every approved memory (newest, so each
    competes for the budget), with the events that name who saved them."""
    start = timezone.now() - timedelta(hours=1)
    records, promotions, events = [], [], []
    for i in range(count):
        record, promotion = stored_row(
            agent,
            kind="preference",
            content=f"Pending preference {i}, long enough to look like a real one.",
            label=f"pref-{i}",
            section="user_preferences",
            tier="guarded",
            status=PromotionStatus.PENDING,
            created_at=start + timedelta(seconds=i),
        )
        records.append(record)
        promotions.append(promotion)
        events.append(new_event(record.id, agent.pk, EventKind.SAVED, SYSTEM, record.created_at))
    MemoryRecord.objects.bulk_create(records)
    Promotion.objects.bulk_create(promotions)
    MemoryEvent.objects.bulk_create(events)


def _reviewer(team: Team) -> Client:
    user = User.objects.create_user(f"bench-appr-{_RUN}", password="x")
    user.user_permissions.add(Permission.objects.get(codename="approve_promotion"))
    Membership.objects.create(team=team, user=user)
    client = Client()
    client.force_login(user)
    client.get(f"/approvals/?team={team.slug}")
    return client


def _queries(client: Client, path: str) -> int:
    with CaptureQueriesContext(connection) as ctx:
        client.get(path)
    return len(ctx.captured_queries)


def run(median_ms: Callable[..., float], report: Callable[..., None]) -> None:
    team = Team.objects.create(slug=f"bench-appr-{_RUN}", name="Bench approvals")
    queue_agent = _agent(team, "queue")
    _fill(queue_agent, 1000, statuses=("pending",))
    big = _agent(team, "big")
    _fill(big, 1000, statuses=("approved",))
    _pending(big, 60)
    _long_page(team)
    analyze()
    client = _reviewer(team)

    print("\nThe approval queue with 1,000 pending promotions (page of 50)")
    page = "/approvals/?agent=queue"
    report("queue page, server time", median_ms(lambda: client.get(page), 20), 150)
    print(f"  SQL queries for the page: {_queries(client, page)}")

    print("\nA page of 50 for an agent with 1,000 approved memories (budget, preview per row)")
    page = "/approvals/?agent=big"
    response = client.get(page)
    assert response.status_code == 200, response.status_code
    assert response.content.count(b'data-budget="') == 50, "every row says what it does"
    report("queue page, server time", median_ms(lambda: client.get(page), 20), 300)
    print(f"  SQL queries for the page: {_queries(client, page)}")
    print(f"  page size: {len(response.content) / 1024:.0f} KiB")

    print(
        f"\nA page of {LONG_ROWS} memories of {LONGEST:,} code points, half replacing one as"
        " long (worst-case word diffs)"
    )
    page = "/approvals/?agent=long"
    response = client.get(page)
    assert response.status_code == 200, response.status_code
    replaced = response.content.count(b'data-replaces="memory"')
    held = response.content.count(b'data-replaces="authored"')
    assert (replaced, held) == (13, 12), (replaced, held)
    report("queue page, server time", median_ms(lambda: client.get(page), 20), 150)
    print(f"  SQL queries for the page: {_queries(client, page)}")
    print(f"  page size: {len(response.content) / 1024:.0f} KiB")

    ids = list(
        Promotion.objects.filter(agent=queue_agent, status=PromotionStatus.PENDING)
        .order_by("promoted_at")
        .values_list("record_id", flat=True)[:200]
    )
    started = time.perf_counter()
    response = client.post(
        "/approvals/bulk/",
        {"decision": "approve", "selected": ids, TEAM_FIELD: team.slug},
        headers={"HX-Request": "true"},
    )
    elapsed = (time.perf_counter() - started) * 1000
    assert response.status_code == 200, response.status_code
    approved = Promotion.objects.filter(pk__in=ids, status=PromotionStatus.APPROVED).count()
    assert approved == 200, approved
    report("bulk-approve 200 (one request, one transaction)", elapsed, 1000)


def cleanup() -> None:
    Team.objects.filter(slug=f"bench-appr-{_RUN}").delete()
    User.objects.filter(username=f"bench-appr-{_RUN}").delete()
