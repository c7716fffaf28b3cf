"""Listing an agent's memories through the API (SPEC §8): newest first, filters, paging,
timestamps, and a query count that does not grow with the memories.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from lens.models import Agent
from memory.models import MemoryRecord
from tests.api_calls import (
    DOUG,
    VIEW_KEYS,
    ApiClient,
    api_composition,
    assert_error,
    memories_listing,
    memory_body,
    post_memory,
)
from tests.factories import fill_memories

pytestmark = pytest.mark.django_db


# --- listing -----------------------------------------------------------------------


def test_the_listing_is_newest_first_with_the_contract_view(api: ApiClient, wren: Agent) -> None:
    ids = [
        post_memory(api, memory_body("profile", DOUG, label="name", tags=["identity"])),
        post_memory(api, memory_body("preference", "Tea.", label="drink")),
        post_memory(api, memory_body("episode", "We talked.")),
    ]
    page = memories_listing(api)
    assert page["skipped"] == 0
    assert [view["id"] for view in page["memories"]] == ids[::-1]
    for view in page["memories"]:
        assert set(view) == VIEW_KEYS
    assert page["memories"][-1] == {
        "id": ids[0],
        "kind": "profile",
        "content": DOUG,
        "tags": ["identity"],
        "label": "name",
        "supersedes": None,
        "created_at": page["memories"][-1]["created_at"],
        "valid_until": None,
    }
    stamp = datetime.fromisoformat(page["memories"][-1]["created_at"])
    offset = stamp.utcoffset()
    assert offset is not None
    assert offset.total_seconds() == 0


def test_records_sharing_a_timestamp_are_listed_by_id_ascending(
    api: ApiClient, wren: Agent
) -> None:
    ids = [post_memory(api, memory_body("episode", f"Batch {n}.")) for n in range(4)]
    newest = post_memory(api, memory_body("episode", "Later."))
    moment = MemoryRecord.objects.get(pk=ids[0]).created_at
    MemoryRecord.objects.filter(pk__in=ids).update(created_at=moment)
    listed = [view["id"] for view in memories_listing(api)["memories"]]
    assert listed == [newest, *sorted(ids)]


def test_the_listing_filters_by_kind(api: ApiClient, wren: Agent) -> None:
    profile = post_memory(api, memory_body("profile", DOUG, label="name"))
    post_memory(api, memory_body("episode", "We talked."))
    assert [view["id"] for view in memories_listing(api, "?kind=profile")["memories"]] == [profile]
    assert memories_listing(api, "?kind=decision")["memories"] == []


def test_the_listing_pages_with_limit_offset_and_next_offset(api: ApiClient, wren: Agent) -> None:
    ids = [post_memory(api, memory_body("episode", f"Memory {n}.")) for n in range(5)][::-1]
    first = memories_listing(api, "?limit=2")
    assert [v["id"] for v in first["memories"]] == ids[:2]
    assert (first["limit"], first["offset"], first["next_offset"]) == (2, 0, 2)
    second = memories_listing(api, "?limit=2&offset=2")
    assert [v["id"] for v in second["memories"]] == ids[2:4]
    assert second["next_offset"] == 4
    last = memories_listing(api, "?limit=2&offset=4")
    assert [v["id"] for v in last["memories"]] == ids[4:]
    assert last["next_offset"] is None
    assert memories_listing(api, "?limit=1")["next_offset"] == 1
    assert memories_listing(api, "?limit=200")["next_offset"] is None
    assert memories_listing(api, "?offset=9")["memories"] == []
    default = memories_listing(api)
    assert (default["limit"], default["offset"], default["next_offset"]) == (50, 0, None)


@pytest.mark.parametrize("query", ["?limit=0", "?limit=201", "?offset=-1", "?limit=x"])
def test_the_listing_refuses_bad_paging(api: ApiClient, wren: Agent, query: str) -> None:
    assert_error(api.get(f"/api/agents/wren/memories{query}"), 422)


def test_the_listing_with_a_query_searches(api: ApiClient, wren: Agent) -> None:
    doug = post_memory(api, memory_body(label="name"))
    post_memory(api, memory_body(content="Lives in Lisbon.", label="city"))
    found = api.get("/api/agents/wren/memories?q=DOUG")
    assert found.status_code == 200
    assert [m["id"] for m in found.json()["memories"]] == [doug]
    assert found.json()["skipped"] == 0


@pytest.mark.parametrize(
    "corruption", [{"kind": "NOT A KIND"}, {"tags": ["x" * 100]}, {"content": ""}]
)
def test_a_corrupt_row_costs_one_record_not_the_listing(
    api: ApiClient, wren: Agent, corruption: dict[str, Any]
) -> None:
    ids = [
        post_memory(api, memory_body("profile", DOUG, label="name")),
        post_memory(api, memory_body("episode", "We talked.")),
        post_memory(api, memory_body("preference", "Tea.", label="drink")),
    ]
    MemoryRecord.objects.filter(pk=ids[1]).update(**corruption)
    page = memories_listing(api)
    assert [view["id"] for view in page["memories"]] == [ids[2], ids[0]]
    assert page["skipped"] == 1
    api_composition(api)  # the composition still answers


def test_sequential_saves_get_strictly_increasing_timestamps(api: ApiClient, wren: Agent) -> None:
    ids = [post_memory(api, memory_body("episode", f"Memory {n}.")) for n in range(8)]
    stamps = [MemoryRecord.objects.get(pk=record_id).created_at for record_id in ids]
    assert all(a < b for a, b in zip(stamps, stamps[1:], strict=False))
    listed = [datetime.fromisoformat(v["created_at"]) for v in memories_listing(api)["memories"]]
    assert listed == stamps[::-1]


def test_a_save_after_a_timestamp_in_the_future_still_increases(
    api: ApiClient, wren: Agent
) -> None:
    first = post_memory(api, memory_body("episode", "First."))
    future = timezone.now() + timedelta(hours=1)
    MemoryRecord.objects.filter(pk=first).update(created_at=future)
    second = post_memory(api, memory_body("episode", "Second."))
    assert MemoryRecord.objects.get(pk=second).created_at > future


def test_the_listing_query_count_does_not_grow_with_memories(
    api: ApiClient, wren: Agent, member: User, django_assert_max_num_queries: Any
) -> None:
    fill_memories(wren, member, 3)
    memories_listing(api)  # warm-up: the token's first use
    with django_assert_max_num_queries(10) as captured:
        page = memories_listing(api, "?limit=200")
    few = len(captured)
    assert len(page["memories"]) == 3

    fill_memories(wren, member, 247, start=3)
    with django_assert_max_num_queries(few, info="a page of 200 of 250 memories"):
        page = memories_listing(api, "?limit=200")
    assert len(page["memories"]) == 200
    assert page["next_offset"] == 200
