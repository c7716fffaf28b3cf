"""The routing report past a group's first hundred drops (SPEC §5.6, §9): the lens lists
each group's first 100 with its count and a link to the group's own pages, which list
every drop of that reason, 100 a page, in the lens's words and hooks."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lens.models import Agent
from tests.factories import composed, every_drop, many_pending, remember
from tests.pages import Dom, dom, with_class

pytestmark = pytest.mark.django_db

WAITING = "awaiting-approval"
GROUP = f"/agents/wren/drops/{WAITING}/"


def lens(client: Client) -> Dom:
    return dom(client.get("/agents/wren/"))


def listed(page: Dom, reason: str = WAITING) -> list[str]:
    return [e.get("data-memory-id") or "" for e in page.all("data-drop-reason", reason, tag="li")]


def drops_of(agent: Agent, reason: str = WAITING) -> list[str]:
    return [d.memory_id for d in composed(agent).report.drops if d.reason == reason]


def test_a_group_of_exactly_100_is_listed_whole(member_client: Client, wren: Agent) -> None:
    ids = many_pending(wren, 100)
    page = lens(member_client)
    assert sorted(listed(page)) == sorted(ids)
    assert page.all("data-drop-more") == []
    group = page.one("data-drop-group", WAITING)
    assert with_class(group, "count")[0].squashed == "100"


def test_a_group_of_101_shows_100_and_links_to_every_one(
    member_client: Client, wren: Agent
) -> None:
    ids = many_pending(wren, 101)
    page = lens(member_client)
    order = drops_of(wren)
    assert listed(page) == order[:100]  # the report's order, the first hundred
    more = page.one("data-drop-more", WAITING)
    assert more.squashed == "The first 100 of 101. See all 101"
    assert [e.get("href") for e in more.descendants() if e.tag == "a"] == [GROUP]

    first = dom(member_client.get(GROUP))
    second = dom(member_client.get(f"{GROUP}?page=2"))
    assert listed(first) == order[:100]
    assert listed(second) == order[100:]
    assert sorted(listed(first) + listed(second)) == sorted(ids)
    assert first.one("data-drop-count").squashed == "101"
    assert second.links("Previous") == ["?page=1"]
    # Each item says in words what keeps it out, as on the lens.
    (item,) = second.all("data-memory-id", order[100], tag="li")
    (why,) = with_class(item, "drop-why")
    assert why.squashed.startswith("Waiting for approval")


def test_a_group_page_without_drops_says_so(member_client: Client, wren: Agent) -> None:
    page = dom(member_client.get("/agents/wren/drops/rejected/"))
    assert page.all("data-drop-reason") == []
    assert (
        "No memory of this agent is left out for this reason now."
        in page.one("data-drop-group", "rejected").squashed
    )


def test_strangers_and_unknown_reasons_get_404_and_anonymous_visitors_log_in(
    member_client: Client, stranger_client: Client, client: Client, wren: Agent
) -> None:
    many_pending(wren, 1)
    assert member_client.get(GROUP).status_code == 200
    assert stranger_client.get(GROUP).status_code == 404
    assert member_client.get("/agents/wren/drops/no-such-reason/").status_code == 404
    assert member_client.get("/agents/nobody/drops/rejected/").status_code == 404
    response = client.get(GROUP)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_a_past_group_says_each_reason_alone(member_client: Client, wren: Agent) -> None:
    many_pending(wren, 2)
    moment = datetime.now(UTC).isoformat()
    many_pending(wren, 1, prefix="later")
    page = dom(member_client.get(GROUP, {"as_of": moment}))
    assert len(listed(page)) == 2
    assert page.one("data-as-of")
    assert member_client.get(f"{GROUP}?as_of=yesterday").status_code == 400


def test_the_lens_and_a_group_page_cost_the_same_queries_past_100_drops(
    member_client: Client,
    wren: Agent,
    member: User,
    settings: Any,
    django_assert_max_num_queries: Any,
) -> None:
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 120  # a few over the budget, then many
    every_drop(wren, member, 1)
    member_client.get("/agents/wren/")  # settle the session
    with django_assert_max_num_queries(25) as few:
        assert member_client.get("/agents/wren/").status_code == 200
    with django_assert_max_num_queries(25) as few_group:
        assert member_client.get(GROUP).status_code == 200
    many_pending(wren, 120)
    for i in range(110):
        remember(wren, "profile", f"Long {i} " * 20, label=f"more{i}")
    assert len(drops_of(wren)) > 100
    assert len(drops_of(wren, "over-budget")) > 100
    # The lens counts the migration plan again after memories change (one query more
    # on that first view, whatever their number): settled, it costs the same.
    with django_assert_max_num_queries(len(few) + 1):
        lens(member_client)
    with django_assert_max_num_queries(len(few)):
        page = lens(member_client)
    assert len(listed(page)) == 100
    assert len(listed(page, "over-budget")) == 100
    with django_assert_max_num_queries(len(few_group)):
        assert member_client.get(f"{GROUP}?page=2").status_code == 200


def test_the_waiting_group_starts_open_wherever_it_stands(
    member_client: Client, member: User, wren: Agent
) -> None:
    """What a reviewer can act on is never folded away: the first group and every
    actionable one start open, the rest closed."""
    every_drop(wren, member, 1)
    groups = lens(member_client).all("data-drop-group")
    reasons = [g.get("data-drop-group") for g in groups]
    assert reasons.index(WAITING) > 0  # another group comes first
    opened = {g.get("data-drop-group") for g in groups if "open" in g.attrs}
    assert opened == {reasons[0], WAITING}


def test_phones_get_a_jump_link_to_the_report(member_client: Client, wren: Agent) -> None:
    remember(wren, "preference", "Dark theme.", label="theme")
    links = lens(member_client).one("aria-label", "On this page")
    assert [e.get("href") for e in links.descendants() if e.tag == "a"] == ["#outline", "#drops"]
