"""The collision gate of the memories API (SPEC §5.1 step 3): one holder per address,
superseding, and content-keyed saves.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest
from django.contrib.auth.models import User

from lens.actors import Actor
from lens.models import Agent
from memory.decisions import decide
from memory.models import MemoryEvent, MemoryRecord
from tests.api_calls import (
    DOUG,
    VIEW_KEYS,
    ApiClient,
    api_composed_ids,
    api_composition,
    api_drops,
    api_prompt_text,
    api_section_entries,
    assert_every_memory_accounted_for,
    memories_listing,
    memory_body,
    post_memory,
)
from tests.factories import event_kinds, memory_row_counts, promotion_of

pytestmark = pytest.mark.django_db


HINT = "supersede it or use a different label"


def conflict(client: ApiClient, body: dict[str, Any], slug: str = "wren") -> dict[str, Any]:
    """Save a memory that must be refused by the collision gate; return the answer."""
    response = client.post(f"/api/agents/{slug}/memories", body)
    assert response.status_code == 409, response.content
    answer = response.json()
    assert set(answer) == {"status", "existing", "message"}
    assert answer["status"] == "conflict"
    assert set(answer["existing"]) == VIEW_KEYS
    assert HINT in answer["message"]
    return dict(answer)


# --- the collision gate ------------------------------------------------------------


def test_a_second_save_to_the_same_label_conflicts_and_writes_nothing(
    api: ApiClient, wren: Agent
) -> None:
    holder = post_memory(api, memory_body("profile", DOUG, label="name", tags=["identity"]))
    before = memory_row_counts()
    holder_promotion = promotion_of(holder)

    answer = conflict(api, memory_body("profile", "The user's name is Douglas.", label="name"))

    existing = answer["existing"]
    assert existing["id"] == holder
    assert existing == memories_listing(api)["memories"][0]
    assert existing["kind"] == "profile"
    assert existing["content"] == DOUG
    assert existing["tags"] == ["identity"]
    assert existing["label"] == "name"
    assert existing["supersedes"] is None
    assert (
        datetime.fromisoformat(existing["created_at"])
        == MemoryRecord.objects.get(pk=holder).created_at
    )
    assert memory_row_counts() == before
    assert promotion_of(holder).status == holder_promotion.status == "approved"
    assert "Douglas" not in api_prompt_text(api_composition(api))


@pytest.mark.parametrize("label", ["Name ", "NAME", "name", " name"])
def test_labels_that_slug_alike_share_one_address(api: ApiClient, wren: Agent, label: str) -> None:
    holder = post_memory(api, memory_body("profile", DOUG, label="name"))
    before = memory_row_counts()
    assert conflict(api, memory_body("profile", "Doug.", label=label))["existing"]["id"] == holder
    assert memory_row_counts() == before


def test_the_same_label_in_another_section_is_another_address(api: ApiClient, wren: Agent) -> None:
    post_memory(api, memory_body("profile", DOUG, label="name"))
    post_memory(api, memory_body("preference", "Call me Doug.", label="name"))


def test_a_pending_holder_blocks_the_address(api: ApiClient, wren: Agent) -> None:
    holder = post_memory(api, memory_body("preference", "Prefers dark mode.", label="theme"))
    before = memory_row_counts()
    answer = conflict(api, memory_body("preference", "Prefers light mode.", label="Theme"))
    assert answer["existing"]["id"] == holder
    assert memory_row_counts() == before
    assert promotion_of(holder).status == "pending"


def test_a_rejected_memory_no_longer_holds_its_address(
    api: ApiClient, wren: Agent, member: User
) -> None:
    rejected = post_memory(api, memory_body("preference", "Prefers dark mode.", label="theme"))
    decide(rejected, approve=False, actor=Actor.for_user(member))
    newer = post_memory(api, memory_body("preference", "Prefers light mode.", label="theme"))
    assert api_drops(api_composition(api)) == {rejected: "rejected", newer: "awaiting-approval"}


def test_superseding_the_holder_replaces_it_in_the_composition(
    api: ApiClient, wren: Agent, token_prefix: str
) -> None:
    older = post_memory(api, memory_body("profile", DOUG, label="name"))
    newer = post_memory(
        api, memory_body("profile", "The user's name is Douglas.", label="name", supersedes=older)
    )

    assert promotion_of(older).status == "superseded"
    assert promotion_of(newer).status == "approved"
    assert MemoryRecord.objects.get(pk=newer).supersedes_id == older
    superseded = MemoryEvent.objects.get(record_id=older, kind="superseded")
    assert token_prefix in superseded.actor
    assert superseded.detail == {"by": newer}
    assert event_kinds(older) == ["saved", "promoted", "superseded"]
    assert event_kinds(newer) == ["saved", "promoted"]

    composed = api_composition(api)
    assert api_section_entries(composed, "user_profile") == [
        {"key": "name", "value": "The user's name is Douglas.", "memory_ids": [newer]}
    ]
    assert api_composed_ids(composed) == [newer]
    assert api_drops(composed) == {older: "superseded"}
    assert DOUG not in api_prompt_text(composed)
    assert_every_memory_accounted_for(composed, wren)
    assert memories_listing(api)["memories"][0]["supersedes"] == older


def test_superseding_is_immediate_even_when_the_newer_one_waits_for_approval(
    api: ApiClient, wren: Agent
) -> None:
    older = post_memory(api, memory_body("profile", DOUG, label="name"))
    newer = post_memory(
        api, memory_body("preference", "Call him Doug.", label="address", supersedes=older)
    )
    composed = api_composition(api)
    assert api_drops(composed) == {older: "superseded", newer: "awaiting-approval"}
    assert api_composed_ids(composed) == []


def test_superseding_a_pending_holder_takes_over_its_address(api: ApiClient, wren: Agent) -> None:
    older = post_memory(api, memory_body("preference", "Prefers dark mode.", label="theme"))
    newer = post_memory(
        api, memory_body("preference", "Prefers light mode.", label="theme", supersedes=older)
    )
    assert promotion_of(older).status == "superseded"
    assert promotion_of(newer).status == "pending"
    assert (
        conflict(api, memory_body("preference", "Sepia.", label="theme"))["existing"]["id"] == newer
    )


def test_superseding_a_record_that_does_not_hold_the_address_conflicts(
    api: ApiClient, wren: Agent
) -> None:
    holder = post_memory(api, memory_body("profile", DOUG, label="name"))
    bystander = post_memory(api, memory_body("episode", "We talked about trains."))
    before = memory_row_counts()

    answer = conflict(api, memory_body("profile", "Douglas.", label="name", supersedes=bystander))

    assert answer["existing"]["id"] == holder
    assert memory_row_counts() == before
    assert promotion_of(bystander).status == "declined"
    assert promotion_of(holder).status == "approved"


def test_superseding_a_spec_declined_record_retires_it(api: ApiClient, wren: Agent) -> None:
    older = post_memory(api, memory_body("episode", "We talked about trains."))
    newer = post_memory(api, memory_body("episode", "We talked about boats.", supersedes=older))
    assert promotion_of(older).status == "superseded"
    assert event_kinds(older) == ["saved", "declined", "superseded"]
    composed = api_composition(api)
    assert api_drops(composed) == {older: "superseded", newer: "spec-declined"}
    assert_every_memory_accounted_for(composed, wren)


def test_a_routed_memory_may_supersede_a_spec_declined_one(api: ApiClient, wren: Agent) -> None:
    older = post_memory(api, memory_body("episode", "He said his name is Doug."))
    newer = post_memory(api, memory_body("profile", DOUG, label="name", supersedes=older))
    composed = api_composition(api)
    assert api_drops(composed) == {older: "superseded"}
    assert api_composed_ids(composed) == [newer]


@pytest.mark.parametrize(
    "variant",
    ["the user likes trains.", "  The   user likes\ntrains.  ", "THE USER LIKES TRAINS."],
)
def test_content_keyed_saves_of_the_same_content_collide(
    api: ApiClient, wren: Agent, variant: str
) -> None:
    holder = post_memory(api, memory_body("profile", "The user likes trains."))
    promotion = promotion_of(holder)
    assert promotion.key_source == "content"
    assert promotion.key
    assert promotion.placement_key is not None
    assert json.loads(promotion.placement_key) == ["user_profile", promotion.key]
    before = memory_row_counts()
    assert conflict(api, memory_body("profile", variant))["existing"]["id"] == holder
    assert memory_row_counts() == before


def test_content_keyed_saves_of_different_content_do_not_collide(
    api: ApiClient, wren: Agent
) -> None:
    first = post_memory(api, memory_body("profile", "The user likes trains."))
    second = post_memory(api, memory_body("profile", "The user likes boats."))
    assert promotion_of(first).key != promotion_of(second).key
    composed = api_composition(api)
    assert sorted(api_composed_ids(composed)) == sorted([first, second])
    assert [e["memory_ids"] for e in api_section_entries(composed, "user_profile")] == [
        [first],
        [second],
    ]
