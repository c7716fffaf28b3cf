"""Reading deliveries back through the API (SPEC §11): an agent's timeline with its
filters and paging, and one delivery exactly as it was delivered.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

import pytest
from django.db import IntegrityError, transaction

from lens.actors import Actor
from lens.agents import get_agent
from lens.models import Agent, Team
from memory.deliveries.ledger import deliver
from memory.models import Delivery
from tests.api_calls import (
    ApiClient,
    api_composed_ids,
    api_prompt_text,
    assert_error,
)
from tests.factories import create_agent, memory_config, remember
from web.api.rendering import iso_utc

pytestmark = pytest.mark.django_db

PAGE_KEYS = {"deliveries", "total", "limit", "offset", "next_offset"}
ROW_KEYS = {
    "delivery_id",
    "delivered_at",
    "session",
    "model",
    "revision",
    "prompt_sha256",
    "memory_ids",
    "chars",
    "tokens",
    "counts",
    "cache",
    "context",
}
ONE_KEYS = {
    "delivery_id",
    "agent",
    "delivered_at",
    "session",
    "model",
    "revision",
    "prompt_sha256",
    "cache",
    "context",
}
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def post_delivery(api: ApiClient, body: dict[str, Any] | None = None) -> dict[str, Any]:
    response = api.post("/api/agents/wren/deliveries", body or {})
    assert response.status_code == 201, response.content
    return dict(response.json())


def listing(api: ApiClient, query: str = "") -> dict[str, Any]:
    response = api.get(f"/api/agents/wren/deliveries{query}")
    assert response.status_code == 200, response.content
    page = dict(response.json())
    assert set(page) == PAGE_KEYS
    for row in page["deliveries"]:
        assert set(row) == ROW_KEYS
    return page


def ids_of(page: dict[str, Any]) -> list[str]:
    return [row["delivery_id"] for row in page["deliveries"]]


def many(agent: Agent, n: int) -> list[str]:
    """``n`` deliveries through ``deliver`` (fast), oldest first."""
    loaded = get_agent(agent.team, agent.slug)
    return [deliver(loaded, Actor(label="test")).delivery.id for _ in range(n)]


def at_times(ids: list[str], *hours: float) -> list[str]:
    """Put delivery ``ids[i]`` at T0 + ``hours[i]``; return the times as the API says them."""
    times = [T0 + timedelta(hours=h) for h in hours]
    for delivery_id, moment in zip(ids, times, strict=True):
        Delivery.objects.filter(pk=delivery_id).update(delivered_at=moment)
    return [iso_utc(moment) for moment in times]


# --- the timeline -------------------------------------------------------------------------


def test_the_listing_is_newest_first_with_the_contract_row(api: ApiClient, wren: Agent) -> None:
    first = post_delivery(api, {"session": "s1", "model": "m1"})
    remember(wren, "profile", "Lives in <Gdańsk> 😀", label="city")
    remember(wren, "profile", "Doug", label="name")
    second = post_delivery(api, {"session": "s2"})
    third = post_delivery(api)

    page = listing(api)
    assert ids_of(page) == [third["delivery_id"], second["delivery_id"], first["delivery_id"]]
    assert (page["total"], page["limit"], page["offset"], page["next_offset"]) == (3, 50, 0, None)
    for row, answer in zip(page["deliveries"], [third, second, first], strict=True):
        composition = answer["composition"]
        assert row == {
            "delivery_id": answer["delivery_id"],
            "delivered_at": answer["delivered_at"],
            "session": answer["session"],
            "model": answer["model"],
            "revision": answer["revision"],
            "prompt_sha256": answer["prompt_sha256"],
            "memory_ids": sorted(api_composed_ids(composition)),
            "chars": len(api_prompt_text(composition)),
            "tokens": composition["tokens"]["total"],
            "counts": composition["counts"],
            "cache": answer["cache"],  # as recorded (tests/web/api/deliveries/test_cache.py)
            "context": answer["context"],  # tests/web/api/deliveries/test_context.py
        }
    assert len(page["deliveries"][0]["memory_ids"]) == 2
    assert page["deliveries"][2]["memory_ids"] == []


def test_deliveries_in_one_microsecond_get_distinct_times_in_order(
    api: ApiClient, wren: Agent, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stopped clock: every delivery asks for the same moment.
    monkeypatch.setattr("memory.deliveries.ledger.timezone.now", lambda: T0)
    ids = many(wren, 4)
    stamps = [Delivery.objects.get(pk=i).delivered_at for i in ids]
    assert stamps == [T0 + timedelta(microseconds=n) for n in range(4)]
    assert ids_of(listing(api)) == list(reversed(ids))
    in_force = listing(api, f"?before={quote(iso_utc(stamps[1]))}&limit=1")
    assert ids_of(in_force) == [ids[1]]
    assert in_force["total"] == 2


def test_two_deliveries_of_one_agent_never_share_a_time(wren: Agent) -> None:
    first, second = many(wren, 2)
    moment = Delivery.objects.get(pk=first).delivered_at
    with pytest.raises(IntegrityError), transaction.atomic():
        Delivery.objects.filter(pk=second).update(delivered_at=moment)


def test_the_session_filter_keeps_one_sessions_deliveries(api: ApiClient, wren: Agent) -> None:
    ids = [
        post_delivery(api, body)["delivery_id"]
        for body in ({"session": "a"}, {"session": "b"}, {"session": "a"}, {"model": "a"}, None)
    ]
    page = listing(api, "?session=a")
    assert ids_of(page) == [ids[2], ids[0]]
    assert page["total"] == 2
    assert ids_of(listing(api, "?session=b")) == [ids[1]]
    assert listing(api, "?session=zzz")["deliveries"] == []
    assert ids_of(listing(api, f"?session=a&before={quote(iso_utc(T0))}")) == []


@pytest.mark.parametrize(
    "query", ["?session=", "?session=" + "x" * 129, "?memory=", "?session=a%0Ab"]
)
def test_a_bad_filter_label_is_refused(api: ApiClient, wren: Agent, query: str) -> None:
    assert_error(api.get(f"/api/agents/wren/deliveries{query}"), 422)


def test_before_is_inclusive_and_before_with_limit_one_is_the_delivery_in_force(
    api: ApiClient, wren: Agent
) -> None:
    d1, d2, d3 = many(wren, 3)
    t1, t2, t3 = at_times([d1, d2, d3], 1, 2, 3)

    assert ids_of(listing(api, f"?before={quote(t2)}")) == [d2, d1]
    assert ids_of(listing(api, f"?before={quote(t2)}&limit=1")) == [d2]
    between = iso_utc(T0 + timedelta(hours=2, minutes=59))
    assert ids_of(listing(api, f"?before={quote(between)}&limit=1")) == [d2]
    just_before = iso_utc(T0 + timedelta(hours=1) - timedelta(microseconds=1))
    assert listing(api, f"?before={quote(just_before)}")["deliveries"] == []
    assert ids_of(listing(api, f"?before={quote(t3)}")) == [d3, d2, d1]
    assert ids_of(listing(api, "?before=2999-01-01T00:00:00Z")) == [d3, d2, d1]
    assert t1 < t2 < t3


@pytest.mark.parametrize(
    "moment",
    [
        "2026-03-01T14:00:00Z",
        "2026-03-01T14:00:00+00:00",
        "2026-03-01T16:00:00+02:00",  # another offset, the same instant
        "2026-03-01T09:00:00-05:00",
        "2026-03-01T14:00:00",  # no offset: UTC
        "2026-03-01T14:00:00.000000Z",
    ],
)
def test_before_takes_any_iso_8601_form_of_the_instant(
    api: ApiClient, wren: Agent, moment: str
) -> None:
    d1, d2, d3 = many(wren, 3)
    at_times([d1, d2, d3], 1, 2, 3)
    assert ids_of(listing(api, f"?before={quote(moment)}&limit=1")) == [d2]


@pytest.mark.parametrize(
    "moment", ["yesterday", "1700000000", "", "now", "2026-13-01", "2026-03-01T25:00", "1.5"]
)
def test_before_that_is_not_iso_8601_is_refused(api: ApiClient, wren: Agent, moment: str) -> None:
    many(wren, 1)
    assert_error(api.get(f"/api/agents/wren/deliveries?before={quote(moment)}"), 422)


@pytest.mark.parametrize(
    "moment", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"], ids=["min", "max"]
)
def test_before_at_the_edge_of_time_is_never_a_500(
    api: ApiClient, wren: Agent, moment: str
) -> None:
    many(wren, 1)
    # Valid ISO 8601, but not a time in UTC that any database can hold: refused.
    assert_error(api.get(f"/api/agents/wren/deliveries?before={quote(moment)}"), 422)


def test_before_and_memory_combine(api: ApiClient, wren: Agent) -> None:
    many(wren, 1)
    name = remember(wren, "profile", "Doug", label="name")
    d2, d3 = many(wren, 2)
    stamps = at_times([d2, d3], 1, 2)
    assert ids_of(listing(api, f"?memory={name}&before={quote(stamps[0])}")) == [d2]
    assert ids_of(listing(api, f"?memory={name}")) == [d3, d2]


# --- paging -------------------------------------------------------------------------------


def test_the_listing_pages_with_limit_offset_next_offset_and_total(
    api: ApiClient, wren: Agent
) -> None:
    ids = many(wren, 5)[::-1]
    first = listing(api, "?limit=2")
    assert ids_of(first) == ids[:2]
    assert (first["limit"], first["offset"], first["next_offset"], first["total"]) == (2, 0, 2, 5)
    second = listing(api, "?limit=2&offset=2")
    assert ids_of(second) == ids[2:4]
    assert (second["next_offset"], second["total"]) == (4, 5)
    last = listing(api, "?limit=2&offset=4")
    assert ids_of(last) == ids[4:]
    assert (last["next_offset"], last["total"]) == (None, 5)
    exact = listing(api, "?limit=5")
    assert (exact["next_offset"], exact["total"]) == (None, 5)
    assert listing(api, "?limit=1")["next_offset"] == 1
    assert listing(api, "?limit=200")["next_offset"] is None
    assert listing(api, "?limit=4&offset=1")["next_offset"] is None


def test_an_offset_past_the_end_still_reports_the_real_total(api: ApiClient, wren: Agent) -> None:
    many(wren, 3)
    page = listing(api, "?offset=10")
    assert page["deliveries"] == []
    assert (page["total"], page["next_offset"]) == (3, None)


@pytest.mark.parametrize(
    "query",
    ["?limit=0", "?limit=201", "?limit=-1", "?limit=x", "?offset=-1", f"?offset={2**31}"],
)
def test_the_listing_refuses_bad_paging(api: ApiClient, wren: Agent, query: str) -> None:
    assert_error(api.get(f"/api/agents/wren/deliveries{query}"), 422)


def test_the_listing_of_an_agent_never_delivered_is_empty(api: ApiClient, wren: Agent) -> None:
    page = listing(api)
    assert (page["deliveries"], page["total"], page["next_offset"]) == ([], 0, None)


def test_the_listing_is_one_agents_and_one_teams(
    api: ApiClient, other_api: ApiClient, anon_api: ApiClient, team: Team, wren: Agent
) -> None:
    mine = many(wren, 1)
    many(create_agent(team, "orca", memory_config(name="Orca")), 2)
    assert ids_of(listing(api)) == mine
    assert_error(other_api.get("/api/agents/wren/deliveries"), 404, "agent_not_found")
    assert_error(api.get("/api/agents/nobody/deliveries"), 404, "agent_not_found")
    assert_error(anon_api.get("/api/agents/wren/deliveries"), 401)


def test_the_listing_query_count_does_not_grow_with_deliveries(
    api: ApiClient, wren: Agent, django_assert_max_num_queries: Any
) -> None:
    remember(wren, "profile", "Doug", label="name")
    many(wren, 2)
    remember(wren, "profile", "Lisbon", label="city")
    many(wren, 1)
    listing(api)  # warm-up: the token's first use
    with django_assert_max_num_queries(10) as captured:
        page = listing(api, "?limit=200")
    few = len(captured)
    assert len(page["deliveries"]) == 3

    for n in range(57):
        if n % 10 == 0:
            remember(wren, "profile", f"Fact {n}", label=f"fact{n}")
        many(wren, 1)
    with django_assert_max_num_queries(few, info="a page of 60 deliveries"):
        page = listing(api, "?limit=200")
    assert len(page["deliveries"]) == 60
    with django_assert_max_num_queries(few, info="a filtered page"):
        listing(api, "?limit=20&session=s&memory=x&before=2999-01-01")


# --- one delivery -------------------------------------------------------------------------


def composition_bytes(content: bytes) -> bytes:
    """The raw JSON text of an answer's composition (it is spliced in last)."""
    head, composition = content.split(b',"composition":', 1)
    assert composition.endswith(b"}")
    return composition[:-1]


def test_a_delivery_reads_back_exactly_as_it_was_delivered(api: ApiClient, wren: Agent) -> None:
    remember(wren, "profile", 'Lives in <Gdańsk> & "likes" the sea 😀', label="city")
    posted = api.post("/api/agents/wren/deliveries", {"session": "s", "model": "m"})
    answer = posted.json()

    response = api.get(f"/api/deliveries/{answer['delivery_id']}")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == ONE_KEYS | {"composition"}
    assert body == {**answer, "agent": "wren"}
    assert composition_bytes(response.content) == composition_bytes(posted.content)


@pytest.mark.parametrize(
    "delivery_id", ["0" * 18, "zzzzzzzzzzzzzzzzzz", "nope", "x" * 40, "ABCDEFGHIJKLMNOPQR", "1"]
)
def test_an_unknown_or_malformed_id_is_not_found(
    api: ApiClient, wren: Agent, delivery_id: str
) -> None:
    many(wren, 1)
    assert_error(api.get(f"/api/deliveries/{delivery_id}"), 404, "delivery_not_found")
    assert_error(api.get(f"/api/deliveries/{delivery_id}/diff"), 404, "delivery_not_found")


def test_a_nul_in_a_delivery_id_is_refused_as_input(api: ApiClient, wren: Agent) -> None:
    (mine,) = many(wren, 1)
    assert_error(api.get(f"/api/deliveries/{mine}%00"), 422)


def test_another_teams_delivery_is_not_found(
    api: ApiClient, other_api: ApiClient, anon_api: ApiClient, wren: Agent
) -> None:
    (mine,) = many(wren, 1)
    assert_error(other_api.get(f"/api/deliveries/{mine}"), 404, "delivery_not_found")
    assert_error(other_api.get(f"/api/deliveries/{mine}/diff"), 404, "delivery_not_found")
    assert_error(anon_api.get(f"/api/deliveries/{mine}"), 401)
    assert api.get(f"/api/deliveries/{mine}").status_code == 200


def test_every_delivery_endpoint_is_401_anonymous_and_404_to_another_team(
    api: ApiClient, other_api: ApiClient, anon_api: ApiClient, wren: Agent
) -> None:
    (delivery_id,) = many(wren, 1)
    paths = [
        "/api/agents/wren/deliveries",
        f"/api/deliveries/{delivery_id}",
        f"/api/deliveries/{delivery_id}/diff",
    ]
    for path in paths:
        assert_error(anon_api.get(path), 401)
        assert api.get(path).status_code == 200, path
    assert_error(anon_api.post("/api/agents/wren/deliveries", {}), 401)
    assert_error(other_api.get(paths[0]), 404, "agent_not_found")
    assert_error(other_api.post(paths[0], {}), 404, "agent_not_found")
    for path in paths[1:]:
        assert_error(other_api.get(path), 404, "delivery_not_found")
