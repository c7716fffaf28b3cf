"""The queue's Earning view and a memory's sightings on its page (SPEC §19.1)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from lens.models import Team
from memory.decisions import pending_count
from tests.factories import VAULT_CONFIG, create_agent, logged_in, make_user, preference, remember
from tests.pages import dom, queue_row_ids
from web.pages.queue_count import queue_count

pytestmark = pytest.mark.django_db


@pytest.fixture
def vault(team: Team) -> Any:
    return create_agent(team, "vault", VAULT_CONFIG)


def music(agent: Any, session: str, content: str = "Likes jazz.") -> str:
    return remember(agent, "preference", content, label="music", session=session)


def test_earning_memories_are_only_in_the_earning_view(
    viewer_client: Client, vault: Any, wren: Any
) -> None:
    earning = music(vault, "a")
    waiting = preference(wren, "Dark theme.", label="theme")
    assert queue_row_ids(dom(viewer_client.get("/approvals/"))) == [waiting]
    page = dom(viewer_client.get("/approvals/?show=earning"))
    assert queue_row_ids(page) == [earning]
    row = page.one("data-earning")
    assert row.get("data-seen") == "1"
    assert "seen in 1 of 3 sessions" in row.squashed
    assert page.one("data-queue-view").tag == "select"
    # The nav's count is the queue's work: earning memories wait for sightings.
    assert queue_count(vault.team) == 1
    assert pending_count(vault.team) == 2  # both rows stay pending


def test_the_earning_view_costs_no_query_per_row(
    viewer_client: Client, vault: Any, django_assert_max_num_queries: Any
) -> None:
    music(vault, "a")
    viewer_client.get("/approvals/?show=earning")
    with django_assert_max_num_queries(30) as queries:
        assert viewer_client.get("/approvals/?show=earning").status_code == 200
    one = len(queries)
    for i in range(15):
        remember(vault, "preference", f"Value {i}.", label=f"k{i}", session="a")
        remember(vault, "preference", f"Value {i}.", label=f"k{i}", session="b")
    with django_assert_max_num_queries(one):
        assert viewer_client.get("/approvals/?show=earning").status_code == 200


def test_a_memory_page_lists_its_sightings_and_their_sessions(
    member_client: Client, vault: Any
) -> None:
    holder = music(vault, "morning")
    sighting = music(vault, "evening", "likes JAZZ.")
    music(vault, "evening")
    page = dom(member_client.get(f"/memories/{holder}/"))
    seen = page.one("data-sightings")
    assert "Seen in 2 of 3 sessions" in seen.squashed
    assert "morning" in seen.squashed
    assert "evening" in seen.squashed
    assert len(page.all("data-sighting")) == 3
    assert len(page.all("data-counted")) == 2
    assert "seen in 2 of 3 sessions" in page.one("data-memory-why").squashed
    page = dom(member_client.get(f"/memories/{sighting}/"))
    assert page.one("data-memory-status").get("data-memory-status") == "corroborating"
    assert "as a sighting of" in page.one("data-sightings").squashed


def test_strangers_get_404_and_anonymous_visitors_the_login_page(
    vault: Any, other_team: Team, client: Client
) -> None:
    holder = music(vault, "a")
    stranger = logged_in(make_user("sam", other_team))
    assert stranger.get(f"/memories/{holder}/").status_code == 404
    queue = dom(stranger.get("/approvals/?show=earning"))
    assert holder not in queue_row_ids(queue)
    for url in (f"/memories/{holder}/", "/approvals/?show=earning"):
        response = client.get(url)
        assert response.status_code == 302
        assert "/login" in response["Location"]
