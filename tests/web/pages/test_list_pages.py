"""The memories list at ``/memories/`` and the memory counts on the agents list at ``/``
(SPEC §4.4, §9), with query counts that do not grow with the memories.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from lens.models import Agent, Team
from memory.core.composition import counts_words
from tests.factories import (
    Story,
    composed,
    create_agent,
    fill_memories,
    memory_config,
    remember,
)
from tests.pages import dom

pytestmark = pytest.mark.django_db


MIDDLE_DOT = "\u00b7"


# --- /memories/ --------------------------------------------------------------------


def listed(client: Client, path: str = "/memories/") -> list[str]:
    return [e.get("data-memory-id") or "" for e in dom(client.get(path)).all("data-memory-id")]


def test_the_list_shows_the_team_s_memories_newest_first(
    member_client: Client, wren: Agent
) -> None:
    ids = [
        remember(wren, "profile", "Mira", label="name"),
        remember(wren, "fact", "Visited Kraków."),
        remember(wren, "preference", "Dark theme.", label="theme"),
    ]
    assert listed(member_client) == list(reversed(ids))
    page = dom(member_client.get("/memories/"))
    for element in page.all("data-memory-id"):
        hrefs = [e.get("href") for e in element.descendants() if e.tag == "a"]
        assert f"/memories/{element.get('data-memory-id')}/" in hrefs
        assert "/agents/wren/" in hrefs


def test_the_list_filters_by_agent_and_kind(member_client: Client, team: Team, wren: Agent) -> None:
    gizmo = create_agent(team, "gizmo", memory_config(name="Gizmo"))
    wren_profile = remember(wren, "profile", "Mira", label="name")
    wren_fact = remember(wren, "fact", "Visited Kraków.")
    gizmo_profile = remember(gizmo, "profile", "Gil", label="name")
    gizmo_fact = remember(gizmo, "fact", "Likes boats.")

    assert set(listed(member_client)) == {wren_profile, wren_fact, gizmo_profile, gizmo_fact}
    assert listed(member_client, "/memories/?agent=wren") == [wren_fact, wren_profile]
    assert listed(member_client, "/memories/?agent=gizmo") == [gizmo_fact, gizmo_profile]
    assert listed(member_client, "/memories/?kind=profile") == [gizmo_profile, wren_profile]
    assert listed(member_client, "/memories/?agent=gizmo&kind=fact") == [gizmo_fact]
    assert listed(member_client, "/memories/?kind=episode") == []
    assert listed(member_client, "/memories/?agent=nobody") == []


def test_the_list_is_paginated_by_fifty(member_client: Client, wren: Agent) -> None:
    ids = [remember(wren, "fact", f"Fact number {n}.") for n in range(51)]
    newest_first = list(reversed(ids))
    first = dom(member_client.get("/memories/"))
    assert [e.get("data-memory-id") for e in first.all("data-memory-id")] == newest_first[:50]
    assert "Page 1 of 2" in first.one("aria-label", "Pages").squashed
    assert listed(member_client, "/memories/?page=2") == newest_first[50:]
    # The filters survive paging.
    assert listed(member_client, "/memories/?agent=wren&kind=fact&page=2") == [ids[0]]
    next_links = [
        e.get("href") for e in first.one("aria-label", "Pages").descendants() if e.tag == "a"
    ]
    assert next_links == ["?page=2"]
    filtered = dom(member_client.get("/memories/?agent=wren&kind=fact"))
    filtered_links = [
        e.get("href") for e in filtered.one("aria-label", "Pages").descendants() if e.tag == "a"
    ]
    assert filtered_links == ["?agent=wren&kind=fact&page=2"]


def test_a_non_member_sees_none_of_the_team_s_memories(
    stranger_client: Client, wren: Agent
) -> None:
    mine = remember(wren, "profile", "Mira", label="name")
    for path in ("/memories/", "/memories/?agent=wren", "/memories/?kind=profile"):
        response = stranger_client.get(path)
        assert response.status_code == 200
        assert mine not in response.content.decode()
        assert listed(stranger_client, path) == []
    assert stranger_client.get("/memories/?team=acme").status_code == 404


def test_the_list_redirects_anonymous_visitors() -> None:
    response = Client().get("/memories/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/memories/"


# --- / : the agents list -----------------------------------------------------------


def test_the_agents_list_shows_pending_and_dropped_counts(
    member_client: Client, story: Story
) -> None:
    composition = composed(story.agent)
    page = dom(member_client.get("/"))
    card = page.one("data-agent", "wren")
    inside = card.descendants()
    pending = next(e for e in inside if "data-pending-count" in e.attrs)
    dropped = next(e for e in inside if "data-dropped-count" in e.attrs)
    assert pending.squashed == "1 pending"
    # The pending pill opens the approval queue for this agent.
    assert pending.get("href") == "/approvals/?agent=wren"
    # Each memory counted once: the pending one is not among those left out.
    assert dropped.squashed == f"{len(story.expected_drops) - 1} left out"
    assert len(composition.report.drops) == len(story.expected_drops)
    composed_count = next(e for e in inside if "data-composed-count" in e.attrs)
    assert composed_count.text == str(len(story.composed_ids))
    # The authored timezone plus the three composed memory entries.
    counts = next(e for e in inside if "data-counts" in e.attrs)
    assert counts.text == f"2 sections {MIDDLE_DOT} 4 entries"
    assert counts.text == composition.counts.label()


def test_memory_entries_count_on_the_list_and_the_lens(member_client: Client, wren: Agent) -> None:
    assert dom(member_client.get("/")).one("data-counts").text == (
        f"2 sections {MIDDLE_DOT} 1 entry"
    )
    remember(wren, "profile", "Mira", label="name")
    remember(wren, "profile", "Gdańsk", label="city")
    remember(wren, "preference", "Dark theme.", label="theme")  # pending: not an entry
    label = f"2 sections {MIDDLE_DOT} 3 entries"
    card = dom(member_client.get("/")).one("data-agent", "wren")
    assert next(e for e in card.descendants() if "data-counts" in e.attrs).text == label
    assert next(e for e in card.descendants() if "data-pending-count" in e.attrs).squashed == (
        "1 pending"
    )
    assert dom(member_client.get("/agents/wren/")).one("data-counts").text.startswith(label)


def test_an_agent_with_nothing_dropped_shows_no_drop_counts(
    member_client: Client, wren: Agent
) -> None:
    remember(wren, "profile", "Mira", label="name")
    page = dom(member_client.get("/"))
    assert page.all("data-pending-count") == []
    assert page.all("data-dropped-count") == []
    assert page.one("data-composed-count").text == "1"


def test_each_memory_is_counted_once_on_the_card(member_client: Client, story: Story) -> None:
    card = dom(member_client.get("/")).one("data-agent", "wren").descendants()

    def shown(hook: str) -> int:
        return int(next(e for e in card if hook in e.attrs).squashed.split()[0])

    total = story.agent.memories.count()
    in_prompt, pending, left_out = (
        shown(hook) for hook in ("data-composed-count", "data-pending-count", "data-dropped-count")
    )
    assert in_prompt + pending + left_out == total


def test_the_card_says_when_the_agent_last_changed(member_client: Client, wren: Agent) -> None:
    """Not when its row was last saved (a re-run of the demo's seed): the newest revision
    or memory event."""
    long_ago = timezone.now() - timedelta(days=30)
    Agent.objects.filter(pk=wren.pk).update(updated_at=long_ago)
    wren.revisions.update(created_at=long_ago)

    def last_change() -> datetime:
        shown = dom(member_client.get("/")).one("data-last-change")
        return datetime.fromisoformat(shown.get("datetime") or "")

    assert last_change() == long_ago
    remember(wren, "profile", "Mira", label="name")
    saved = wren.memory_events.latest("at").at
    assert last_change() == saved


# --- query counts ------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/", "/agents/wren/", "/memories/", "/memories/?agent=wren"])
def test_page_query_counts_do_not_grow_with_memories(
    member_client: Client,
    member: User,
    wren: Agent,
    path: str,
    django_assert_max_num_queries: Any,
) -> None:
    # One memory of each outcome first: a page may read something once for a kind of
    # memory it shows (who reopened the waiting ones, say), never once per memory.
    fill_memories(wren, member, 5)
    member_client.get(path)  # settle the session (it stores the current team once)
    # The lens's newest-revision line is one query of its own, and its drop groups one
    # more: what the shown drops need, read for those alone (the same count for ten
    # memories or ten thousand), its routing line one (the agent's routing cases), and
    # the migration plan's "N memories would move" one.
    bound = 19 if path == "/agents/wren/" else 15
    with django_assert_max_num_queries(bound) as captured:
        assert member_client.get(path).status_code == 200
    one = len(captured)

    fill_memories(wren, member, 55, start=5)
    assert Agent.objects.get(pk=wren.pk).memories.count() == 60
    if path == "/agents/wren/":
        # The first lens after memories changed counts the migration plan afresh: one
        # query more (the rows), whatever their number; then it is kept.
        with django_assert_max_num_queries(one + 1, info="the lens counting the plan"):
            assert member_client.get(path).status_code == 200
    with django_assert_max_num_queries(one, info=f"{path} with 60 memories"):
        assert member_client.get(path).status_code == 200


def test_the_counts_say_what_they_count_alike_everywhere(
    member_client: Client, admin_client: Client, story: Story
) -> None:
    """The cards, the lens header and the admin count sections and entries one way and
    say what each number holds: the admin's section rows list authored entries only."""
    composition = composed(story.agent)
    words = counts_words(composition)
    assert words.startswith("2 declared Background sections; the composed Background holds 4")
    assert words.endswith(f"1 authored, {len(story.composed_ids)} from memory")
    card = dom(member_client.get("/")).one("data-agent", "wren").descendants()
    assert next(e for e in card if "data-counts" in e.attrs).get("title") == words
    assert dom(member_client.get("/agents/wren/")).one("data-counts").get("title") == words
    admin_page = admin_client.get(f"/admin/lens/agent/{story.agent.pk}/change/")
    assert f"{composition.counts.label()} ({words})" in admin_page.content.decode()
