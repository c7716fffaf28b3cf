"""Approval targets: the queue with 1,000 pending promotions, bulk-approving 200."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from django.contrib.auth.models import Permission, User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from bench.memory_bench import _agent, _fill
from lens.models import Membership, Team
from memory.models import Promotion, PromotionStatus

_RUN = uuid.uuid4().hex[:8]


def run(median_ms: Callable[..., float], report: Callable[..., None]) -> None:
    team = Team.objects.create(slug=f"bench-appr-{_RUN}", name="Bench approvals")
    agent = _agent(team, "queue")
    _fill(agent, 1000, statuses=("pending",))
    user = User.objects.create_user(f"bench-appr-{_RUN}", password="x")
    user.user_permissions.add(Permission.objects.get(codename="approve_promotion"))
    Membership.objects.create(team=team, user=user)
    client = Client()
    client.force_login(user)
    client.get(f"/approvals/?team={team.slug}")

    print("\nThe approval queue with 1,000 pending promotions (page of 50)")
    report("queue page, server time", median_ms(lambda: client.get("/approvals/"), 20), 150)
    with CaptureQueriesContext(connection) as ctx:
        client.get("/approvals/")
    print(f"  SQL queries for the page: {len(ctx.captured_queries)}")

    ids = list(
        Promotion.objects.filter(agent=agent, status=PromotionStatus.PENDING)
        .order_by("promoted_at")
        .values_list("record_id", flat=True)[:200]
    )
    started = time.perf_counter()
    response = client.post(
        "/approvals/bulk/", {"decision": "approve", "selected": ids}, headers={"HX-Request": "true"}
    )
    elapsed = (time.perf_counter() - started) * 1000
    assert response.status_code == 200, response.status_code
    approved = Promotion.objects.filter(pk__in=ids, status=PromotionStatus.APPROVED).count()
    assert approved == 200, approved
    report("bulk-approve 200 (one request, one transaction)", elapsed, 1000)


def cleanup() -> None:
    Team.objects.filter(slug=f"bench-appr-{_RUN}").delete()
    User.objects.filter(username=f"bench-appr-{_RUN}").delete()
