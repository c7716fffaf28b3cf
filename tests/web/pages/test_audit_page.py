"""``/audit/`` (SPEC §15): the team's log for people, newest first, 50 a page, filtered
by agent, actor, action and date, each event linked to its object; members only, and a
query count that does not grow with the events."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from kvstore import store
from lens.models import AuditEvent, Team
from tests.api_calls import ApiClient, post_memory
from tests.factories import memory_config
from tests.pages import dom
from web.pages import audit_pages, bounded_pager

pytestmark = pytest.mark.django_db


def seqs(client: Client, query: str = "") -> list[int]:
    page = dom(client.get(f"/audit/{query}"))
    return [int(row.get("data-audit-seq") or 0) for row in page.all("data-audit-seq")]


@pytest.fixture
def logged(api: ApiClient, team: Team) -> Team:
    api.put("/api/agents/wren", memory_config())
    post_memory(api, {"kind": "profile", "content": "Lives in Porto."})
    api.post("/api/agents/wren/deliveries", {})
    api.put("/api/kv/notes.a", {"payload": "x"})
    return team


def test_members_see_their_teams_events_newest_first(member_client: Client, logged: Team) -> None:
    shown = seqs(member_client)
    total = AuditEvent.objects.filter(team=logged).count()
    assert shown == list(range(total, 0, -1))
    page = member_client.get("/audit/").content.decode()
    assert 'href="/agents/wren/revisions/1/"' in page
    assert 'href="/kv/notes.a/"' in page
    assert "Memory saved" in page
    assert "Prompt delivered" in page


def test_filters_by_agent_action_actor_and_date(member_client: Client, logged: Team) -> None:
    wren = AuditEvent.objects.filter(team=logged, agent="wren").order_by("-seq")
    assert seqs(member_client, "?agent=wren") == [e.seq for e in wren]
    written = AuditEvent.objects.get(team=logged, action="kv.written")
    assert seqs(member_client, "?action=kv.written") == [written.seq]
    assert seqs(member_client, f"?actor={written.actor}") == [
        e.seq for e in AuditEvent.objects.filter(team=logged, actor=written.actor).order_by("-seq")
    ]
    today = timezone.now().date().isoformat()
    everything = AuditEvent.objects.filter(team=logged).count()
    assert len(seqs(member_client, f"?since={today}&until={today}")) == everything
    assert seqs(member_client, "?until=2000-01-01") == []
    refused = member_client.get("/audit/?since=yesterday&action=drop.tables")
    assert refused.status_code == 200
    text = refused.content.decode()
    assert "is not a date" in text
    assert "is not an action" in text


def test_another_team_is_not_found_and_anonymous_signs_in(
    client: Client, stranger_client: Client, member_client: Client, logged: Team
) -> None:
    assert stranger_client.get("/audit/?team=acme").status_code == 404
    # The stranger's own team's log: none of acme's events.
    own = stranger_client.get("/audit/").content.decode()
    assert "wren" not in own
    assert "notes.a" not in own
    answer = client.get("/audit/")
    assert answer.status_code == 302
    assert answer["Location"].startswith("/accounts/login/")


def test_past_the_count_cap_the_pager_says_so_and_still_links_on(
    member_client: Client, team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bounded_pager, "COUNT_CAP", 3)
    monkeypatch.setattr(audit_pages, "PAGE_SIZE", 2)
    for n in range(6):
        store.write(team, f"k{n}", "v")
    with CaptureQueriesContext(connection) as queries:
        first = member_client.get("/audit/").content.decode()
    counts = [q["sql"] for q in queries.captured_queries if "COUNT(" in q["sql"].upper()]
    assert any('"lens_auditevent"' in sql and "LIMIT 4" in sql for sql in counts)
    assert "Page 1 · 3+ events" in first
    assert 'href="?page=2"' in first
    # Past the three counted events the links keep going, back and forth, to the end.
    shown: list[int] = []
    number = 1
    while True:
        page = member_client.get(f"/audit/?page={number}").content.decode()
        shown += seqs(member_client, f"?page={number}")
        if number > 1:
            assert f'href="?page={number - 1}"' in page
        if f'href="?page={number + 1}"' not in page:
            break
        number += 1
    total = AuditEvent.objects.filter(team=team).count()
    assert total > 3
    assert shown == list(range(total, 0, -1))


def test_pages_of_fifty_and_a_fixed_query_count(
    member_client: Client, team: Team, member: User, django_assert_max_num_queries: Any
) -> None:
    for n in range(120):
        store.write(team, f"k{n}", "v")
    assert len(seqs(member_client)) == 50
    assert len(seqs(member_client, "?page=3")) == AuditEvent.objects.filter(team=team).count() - 100
    with django_assert_max_num_queries(12) as few:
        member_client.get("/audit/")
    for n in range(120, 300):
        store.write(team, f"k{n}", "v")
    with django_assert_max_num_queries(len(few.captured_queries)):
        member_client.get("/audit/?page=2")
