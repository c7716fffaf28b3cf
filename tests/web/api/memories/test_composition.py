"""The composition with memories through the API (SPEC §5.5, §5.6): every memory composed
or dropped, ids only in the report, and a query count that does not grow with the memories.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User

from lens.actors import Actor
from lens.models import Agent
from memory.decisions import decide
from tests.api_calls import (
    DOUG,
    ApiClient,
    api_composed_ids,
    api_composition,
    api_drops,
    api_memory_fragments,
    api_section_entries,
    assert_every_memory_accounted_for,
    memory_body,
    post_memory,
)
from tests.factories import fill_memories, memory_row_counts

pytestmark = pytest.mark.django_db


# --- the composition with memories -------------------------------------------------


def test_the_composition_accounts_for_every_memory_and_reports_ids_only(
    api: ApiClient, wren: Agent, member: User
) -> None:
    name = post_memory(api, memory_body("profile", DOUG, label="name"))
    city = post_memory(api, memory_body("profile", "Lives in Leeds.", label="city"))
    theme = post_memory(api, memory_body("preference", "Prefers dark mode.", label="theme"))
    drink = post_memory(api, memory_body("preference", "Tea, not coffee.", label="drink"))
    decide(drink, approve=False, actor=Actor.for_user(member))
    episode = post_memory(api, memory_body("episode", "We talked about trains."))
    older = post_memory(api, memory_body("profile", "Born in 1970.", label="born"))
    newer = post_memory(
        api, memory_body("profile", "Born in 1971.", label="born", supersedes=older)
    )

    composed = api_composition(api)

    assert composed["agent"] == "wren"
    assert composed["spec"] == {"key": "user-background", "version": "1"}
    assert sorted(api_composed_ids(composed)) == sorted([name, city, newer])
    assert api_drops(composed) == {
        theme: "awaiting-approval",
        drink: "rejected",
        episode: "spec-declined",
        older: "superseded",
    }
    for drop in composed["report"]["drops"]:
        assert set(drop) == {"memory_id", "reason"}
    report_text = json.dumps(composed["report"])
    for content in (DOUG, "Prefers dark mode.", "Tea, not coffee.", "trains", "1970"):
        assert content not in report_text
    assert_every_memory_accounted_for(composed, wren)
    # One authored entry plus three memory entries, in three declared sections.
    assert composed["counts"] == {"sections": 3, "entries": 4}
    assert [e["memory_ids"] for e in api_section_entries(composed, "user_profile")] == [
        [name],
        [city],
        [newer],
    ]
    for fragment in api_memory_fragments(composed):
        assert len(fragment["memory_ids"]) == 1


def test_the_agent_list_counts_memory_entries(api: ApiClient, wren: Agent) -> None:
    def wren_counts() -> dict[str, int]:
        (summary,) = [a for a in api.get("/api/agents").json()["agents"] if a["slug"] == "wren"]
        return dict(summary["counts"])

    assert wren_counts() == {"sections": 3, "entries": 1}
    post_memory(api, memory_body("profile", DOUG, label="name"))
    post_memory(api, memory_body("preference", "Tea.", label="drink"))  # pending: not composed
    assert wren_counts() == {"sections": 3, "entries": 2}
    assert wren_counts() == api_composition(api)["counts"]


def test_the_composition_records_nothing(api: ApiClient, wren: Agent) -> None:
    post_memory(api, memory_body("profile", DOUG, label="name"))
    before = memory_row_counts()
    api_composition(api)
    assert memory_row_counts() == before


def test_the_composition_query_count_does_not_grow_with_memories(
    api: ApiClient, wren: Agent, member: User, django_assert_max_num_queries: Any
) -> None:
    fill_memories(wren, member, 5)
    api_composition(api)  # warm-up: the token's first use
    with django_assert_max_num_queries(10) as captured:
        api_composition(api)
    few = len(captured)

    fill_memories(wren, member, 295, start=5)
    with django_assert_max_num_queries(few, info="the composition of 300 memories"):
        composed = api_composition(api)
    assert_every_memory_accounted_for(composed, wren)
    assert len(api_composed_ids(composed)) + len(composed["report"]["drops"]) == 300
