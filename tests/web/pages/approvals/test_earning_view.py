"""The queue's Earning view and a memory's sightings on its page (SPEC §19.1)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from lens.actors import Actor
from lens.models import Team
from memory.decisions import decide, pending_count, revoke
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


def test_an_earning_row_names_its_sessions_the_first_few_then_how_many_more(
    viewer_client: Client, vault: Any, settings: Any
) -> None:
    settings.EARNED_SIGHTINGS = 6
    earning = music(vault, "monday")
    for session in ("tuesday", "tuesday", "wednesday", "thursday", "friday"):
        music(vault, session)
    page = dom(viewer_client.get("/approvals/?show=earning"))
    assert queue_row_ids(page) == [earning]
    row = page.one("data-earning")
    assert "seen in 5 of 6 sessions" in row.squashed
    assert page.one("data-sessions").squashed == "monday, tuesday, wednesday +2 more"


def test_a_memory_seen_in_more_sessions_than_earn_a_place_says_so(
    member_client: Client, vault: Any
) -> None:
    holder = music(vault, "a")
    for session in ("b", "c", "d", "e"):
        music(vault, session)
    page = dom(member_client.get(f"/memories/{holder}/"))
    seen = page.one("data-sightings").squashed
    assert "Seen in 5 sessions (3 earn a place)" in seen
    assert "of 3" not in seen


@pytest.mark.parametrize(
    ("decide_it", "words"),
    [
        ("reject", "which a reviewer rejected; this sighting joins its line once it is in"),
        ("revoke", "which a reviewer took out of the prompt; this sighting joins its line"),
        ("over-budget", "which is approved but does not fit in the memory budget"),
    ],
)
def test_a_sightings_drop_is_worded_by_the_state_of_the_memory_it_saw(
    member_client: Client, vault: Any, member: Any, settings: Any, decide_it: str, words: str
) -> None:
    reviewer = Actor.for_user(member)
    holder = music(vault, "a")
    sighting = music(vault, "b")
    if decide_it == "reject":
        decide(holder, False, reviewer, "not now")
    elif decide_it == "revoke":
        decide(holder, True, reviewer)
        revoke(holder, reviewer)
    else:
        decide(holder, True, reviewer)
        settings.MEMORY_OVERLAY_BUDGET_CHARS = 5
    page = dom(member_client.get(f"/memories/{sighting}/"))
    why = page.one("data-memory-why").squashed
    assert words in why
    assert "still earning" not in why
