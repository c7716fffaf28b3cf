"""The delivery pages (SPEC §11, §9): the timeline, a delivery as delivered, the diffs,
the memory page's "Delivered in" and the lens's last-delivery line; who may see them;
query counts that do not grow with rows.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from lens.actors import SYSTEM, Actor
from lens.models import Agent, Team
from memory.core.deliveries import DeliveryInput
from memory.decisions import revoke
from memory.deliveries.ledger import Delivered, composition_data, deliver
from memory.models import Delivery
from tests.factories import create_agent, memory_config, remember
from tests.pages import Dom, dom
from web.pages import bounded_pager, delivery_pages

pytestmark = pytest.mark.django_db


def delivered(agent: Agent, session: str | None = "s-1", model: str | None = "gpt-x") -> Delivery:
    result: Delivered = deliver(agent, SYSTEM, DeliveryInput(session=session, model=model))
    return result.delivery


def prompt_of(delivery: Delivery) -> str:
    data = composition_data(delivery.composition)
    return "\n\n".join(
        "".join(f["text"] for f in section["fragments"]) for section in data["prompt"]["sections"]
    )


def page_urls(agent: Agent, delivery: Delivery) -> list[str]:
    return [
        f"/agents/{agent.slug}/deliveries/",
        f"/deliveries/{delivery.id}/",
        f"/deliveries/{delivery.id}/diff/",
        f"/deliveries/{delivery.id}/live/",
    ]


# --- who may see them --------------------------------------------------------------


def test_members_see_every_delivery_page(member_client: Client, wren: Agent) -> None:
    delivery = delivered(wren)
    for url in page_urls(wren, delivery):
        assert member_client.get(url).status_code == 200, url


def test_strangers_get_404_on_every_delivery_page(stranger_client: Client, wren: Agent) -> None:
    delivery = delivered(wren)
    for url in page_urls(wren, delivery):
        assert stranger_client.get(url).status_code == 404, url


def test_anonymous_visitors_are_sent_to_log_in(client: Client, wren: Agent) -> None:
    delivery = delivered(wren)
    for url in page_urls(wren, delivery):
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize("bad", ["nope", "0" * 18, "0honsj18gv9cnllff\u00e9"])
def test_unknown_or_malformed_delivery_ids_are_404(member_client: Client, bad: str) -> None:
    for url in (f"/deliveries/{bad}/", f"/deliveries/{bad}/diff/", f"/deliveries/{bad}/live/"):
        assert member_client.get(url).status_code == 404, url


def test_against_another_agents_delivery_is_404(
    member_client: Client, team: Team, wren: Agent
) -> None:
    other = create_agent(team, "otto", memory_config())
    mine, theirs = delivered(wren), delivered(other)
    response = member_client.get(f"/deliveries/{mine.id}/diff/?against={theirs.id}")
    assert response.status_code == 404


# --- a delivery as it was delivered ------------------------------------------------


def test_the_delivery_page_joins_to_the_recorded_prompt(member_client: Client, wren: Agent) -> None:
    memory_id = remember(wren, "profile", "The user's name is Ada.", label="name")
    delivery = delivered(wren)
    page = dom(member_client.get(f"/deliveries/{delivery.id}/"))
    sections = page.all("data-section-text")
    joined = "\n\n".join(
        "".join(f.text for f in section.children if f.get("data-source")) for section in sections
    )
    assert joined == prompt_of(delivery)
    memory_fragments = page.all("data-source", "memory")
    assert [f.get("data-memory-ids") for f in memory_fragments] == [memory_id]
    assert memory_fragments[0].get("href") == f"/memories/{memory_id}/"


def test_later_changes_leave_the_delivery_page_as_it_was_and_say_what_happened(
    member_client: Client, wren: Agent, member: Any
) -> None:
    old = remember(wren, "profile", "The user's name is Ada.", label="name")
    kept = remember(wren, "profile", "The user lives in Lyon.", label="city")
    gone = remember(wren, "profile", "The user likes tea.", label="drink")
    delivery = delivered(wren)
    before = dom(member_client.get(f"/deliveries/{delivery.id}/"))
    newer = remember(wren, "profile", "The user's name is Ada L.", label="name", supersedes=old)
    revoke(gone, Actor.for_user(member), "wrong")

    after = dom(member_client.get(f"/deliveries/{delivery.id}/"))
    assert [e.text for e in after.all("data-section-text")] == [
        e.text for e in before.all("data-section-text")
    ]
    fates = {e.get("data-memory-id"): e for e in after.all("data-fate")}
    assert fates[kept].get("data-fate") == "in-prompt"
    assert fates[old].get("data-fate") == "superseded"
    assert f"/memories/{newer}/" in [a.get("href") for a in fates[old].descendants()]
    assert fates[gone].get("data-fate") == "revoked"
    assert "by mira" in fates[gone].squashed
    assert after.all("data-live-differs")


# --- timeline ----------------------------------------------------------------------


def rows(page: Dom) -> list[str]:
    return [str(e.get("data-delivery-id")) for e in page.all("data-delivery-id", tag="tr")]


def test_the_timeline_is_newest_first_and_says_what_changed(
    member_client: Client, wren: Agent
) -> None:
    first = delivered(wren)
    same = delivered(wren)
    remember(wren, "profile", "The user's name is Ada.", label="name")
    changed = delivered(wren)
    page = dom(member_client.get(f"/agents/{wren.slug}/deliveries/"))
    assert rows(page) == [changed.id, same.id, first.id]
    change = {r: page.one("data-delivery-id", r, tag="tr").squashed for r in rows(page)}
    assert "+1 memory" in change[changed.id]
    assert "unchanged" in change[same.id]
    assert "first delivery" in change[first.id]


def test_the_timeline_filters_by_session_and_memory(member_client: Client, wren: Agent) -> None:
    a = delivered(wren, session="alpha")
    memory_id = remember(wren, "profile", "The user's name is Ada.", label="name")
    b = delivered(wren, session="beta")
    url = f"/agents/{wren.slug}/deliveries/"
    assert rows(dom(member_client.get(f"{url}?session=alpha"))) == [a.id]
    assert rows(dom(member_client.get(f"{url}?memory={memory_id}"))) == [b.id]


def test_the_time_field_jumps_to_the_delivery_in_force(member_client: Client, wren: Agent) -> None:
    early, late = delivered(wren), delivered(wren)
    Delivery.objects.filter(pk=early.pk).update(delivered_at=late.delivered_at - timedelta(hours=2))
    moment = (late.delivered_at - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S")
    response = member_client.get(f"/agents/{wren.slug}/deliveries/?at={moment}")
    assert response.status_code == 302
    assert response["Location"] == f"/deliveries/{early.id}/"
    too_early = dom(member_client.get(f"/agents/{wren.slug}/deliveries/?at=2000-01-01T00:00"))
    assert "No delivery at or before" in too_early.one("data-jump-error").text
    for bad in ("yesterday", "0001-01-01T00:00:00%2B01:00"):
        nonsense = dom(member_client.get(f"/agents/{wren.slug}/deliveries/?at={bad}"))
        assert "not a date and time" in nonsense.one("data-jump-error").text


def _bulk(agent: Agent, n: int) -> None:
    template = delivered(agent)
    Delivery.objects.bulk_create(
        Delivery(
            agent=agent,
            composition_id=template.composition_id,
            delivered_at=template.delivered_at - timedelta(seconds=i + 1),
            session=f"s-{i % 7}",
        )
        for i in range(n)
    )


def _queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    return len(ctx.captured_queries)


def test_timeline_and_memory_page_queries_do_not_grow_with_deliveries(
    member_client: Client, wren: Agent, django_assert_max_num_queries: Callable[..., Any]
) -> None:
    memory_id = remember(wren, "profile", "The user's name is Ada.", label="name")
    _bulk(wren, 2)
    urls = [f"/agents/{wren.slug}/deliveries/", f"/memories/{memory_id}/"]
    few = [_queries(member_client, url) for url in urls]
    _bulk(wren, 120)
    for url, count in zip(urls, few, strict=True):
        with django_assert_max_num_queries(count):
            assert member_client.get(url).status_code == 200
    assert rows(dom(member_client.get(f"{urls[0]}?page=3"))) != []


def test_the_timeline_counts_no_further_than_the_cap_and_pages_on(
    member_client: Client, wren: Agent, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bounded_pager, "COUNT_CAP", 3)
    monkeypatch.setattr(delivery_pages, "PAGE_SIZE", 2)
    _bulk(wren, 6)  # 7 deliveries
    url = f"/agents/{wren.slug}/deliveries/"
    with CaptureQueriesContext(connection) as queries:
        first = member_client.get(url).content.decode()
    sqls = [q["sql"] for q in queries.captured_queries]
    (count,) = [sql for sql in sqls if "COUNT(" in sql.upper() and '"memory_delivery"' in sql]
    assert "LIMIT 4" in count
    assert "Page 1 · 3+ deliveries" in first
    shown: list[str] = []
    for number in range(1, 5):
        page = member_client.get(f"{url}?page={number}")
        shown += rows(dom(page))
        assert (f'href="?page={number + 1}"' in page.content.decode()) == (number < 4)
    newest_first = Delivery.objects.filter(agent=wren).order_by("-delivered_at")
    assert shown == [d.id for d in newest_first]
    # The last row of a page is compared with the first of the next, as before.
    last_of_first = dom(member_client.get(url)).one("data-delivery-id", shown[1], tag="tr")
    assert "unchanged" in last_of_first.squashed


# --- memory page, lens -------------------------------------------------------------


def test_the_memory_page_lists_the_deliveries_it_shaped(member_client: Client, wren: Agent) -> None:
    delivered(wren)
    memory_id = remember(wren, "profile", "The user's name is Ada.", label="name")
    shaped = [delivered(wren) for _ in range(12)]
    page = dom(member_client.get(f"/memories/{memory_id}/"))
    card = page.one("data-delivered-in")
    assert card.get("data-delivered-in") == "12"
    listed = [e.get("data-delivery-id") for e in card.descendants() if e.get("data-delivery-id")]
    assert listed == [d.id for d in reversed(shaped)][:10]
    assert f"/agents/{wren.slug}/deliveries/?memory={memory_id}" in page.links(
        "All 12 in the timeline"
    )


def test_the_lens_says_when_the_agent_was_last_delivered(
    member_client: Client, wren: Agent
) -> None:
    lens = f"/agents/{wren.slug}/"
    assert "Never delivered" in dom(member_client.get(lens)).one("data-last-delivery").text
    delivery = delivered(wren)
    page = dom(member_client.get(lens))
    assert page.all("data-live-unchanged")
    remember(wren, "profile", "The user's name is Ada.", label="name")
    page = dom(member_client.get(lens))
    assert page.all("data-live-differs")
    assert f"/deliveries/{delivery.id}/live/" in page.links("see diff")


def test_the_diff_page_colours_lines_and_lists_memories(member_client: Client, wren: Agent) -> None:
    delivered(wren)
    memory_id = remember(wren, "profile", "The user's name is Ada.", label="name")
    delivery = delivered(wren)
    page = dom(member_client.get(f"/deliveries/{delivery.id}/diff/"))
    added = [e.text for e in page.elements if "dl-add" in (e.get("class") or "")]
    assert "+- **name**: The user's name is Ada." in added
    assert page.one("data-memory-added").get("data-memory-added") == memory_id
    assert page.all("data-memory-removed") == []
