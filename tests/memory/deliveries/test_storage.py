"""Storing deliveries (SPEC §11): one stored composition per distinct content, its
memories indexed, and the operator's ``prune`` and ``storage``.
"""

from __future__ import annotations

import json
import zlib
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from lens.actors import Actor
from lens.agents import get_agent
from lens.core.config import AgentConfig
from lens.models import Agent, ApiToken, Team
from memory.configuring import store_agent
from memory.core.deliveries import DeliveryInput, sha256_hex
from memory.deliveries.ledger import (
    composition_json,
    composition_of,
    deliver,
    deliveries_of,
)
from memory.deliveries.retention import Pruned, prune, storage
from memory.models import CompositionMemory, Delivery, StoredComposition
from tests.api_calls import ApiClient, api_composition, assert_error
from tests.factories import create_agent, memory_config, preference, remember

pytestmark = pytest.mark.django_db


def fresh(agent: Agent) -> Agent:
    """The agent loaded anew with its configuration (what each API request does)."""
    return get_agent(agent.team, agent.slug)


def delivered(agent: Agent, session: str | None = None) -> Delivery:
    """Deliver ``agent`` as it is now in the database."""
    return deliver(fresh(agent), Actor(label="test"), DeliveryInput(session=session)).delivery


def index_of(stored: StoredComposition) -> list[str]:
    return sorted(
        CompositionMemory.objects.filter(composition=stored).values_list("memory_id", flat=True)
    )


def with_timezone(value: str) -> AgentConfig:
    config = memory_config()
    config["background"]["sections"][0]["entries"] = [{"key": "timezone", "value": value}]
    return AgentConfig.model_validate(config)


def delivery_ids(queryset: Any) -> set[str]:
    return set(queryset.values_list("id", flat=True))


# --- content addressing -----------------------------------------------------------------


def test_a_thousand_identical_deliveries_store_one_composition(
    api: ApiClient, wren: Agent, api_token: ApiToken
) -> None:
    name = remember(wren, "profile", "Doug", label="name")
    agent, actor = fresh(wren), Actor.for_token(api_token)
    texts = {deliver(agent, actor).composition_json for _ in range(1000)}

    assert len(texts) == 1
    (stored,) = StoredComposition.objects.all()
    answers = [api.post("/api/agents/wren/deliveries", {"session": f"s{n}"}) for n in range(3)]
    assert [answer.status_code for answer in answers] == [201] * 3

    assert StoredComposition.objects.count() == 1
    assert Delivery.objects.count() == 1003
    assert set(Delivery.objects.values_list("composition_id", flat=True)) == {stored.pk}
    assert index_of(stored) == [name]
    assert {answer.json()["prompt_sha256"] for answer in answers} == {stored.prompt_sha256}


def test_a_stored_composition_is_addressed_by_its_canonical_json(
    api: ApiClient, wren: Agent
) -> None:
    remember(wren, "profile", 'Lives in <Gdańsk> & "likes" the sea 😀', label="city")
    delivery = delivered(wren)
    stored = delivery.composition
    text = composition_json(stored)

    assert text == zlib.decompress(bytes(stored.body)).decode("utf-8")
    assert stored.digest == sha256_hex(text)
    assert text == composition_of(stored).canonical_json()
    assert json.loads(text) == api_composition(api)
    assert len(bytes(stored.body)) < len(text.encode("utf-8"))  # kept compressed


def test_a_memory_that_composes_makes_a_new_composition(wren: Agent) -> None:
    first = delivered(wren).composition
    name = remember(wren, "profile", "Doug", label="name")
    second = delivered(wren).composition

    assert second.pk != first.pk
    assert second.prompt_sha256 != first.prompt_sha256
    assert (first.memory_ids, second.memory_ids) == ("", name)
    assert (index_of(first), index_of(second)) == ([], [name])
    assert delivered(wren).composition.pk == second.pk


def test_a_memory_waiting_for_approval_changes_the_report_but_not_the_prompt(
    wren: Agent,
) -> None:
    first = delivered(wren).composition
    preference(wren, "Prefers tea.", label="drink")
    second = delivered(wren).composition

    # The composition answered is the whole answer, drops included: stored anew.
    assert second.pk != first.pk
    assert second.prompt_sha256 == first.prompt_sha256
    assert index_of(second) == []


def test_an_edited_authored_entry_makes_a_new_composition_and_reverting_finds_the_old(
    team: Team, wren: Agent
) -> None:
    first = delivered(wren).composition
    store_agent(team, "wren", with_timezone("Asia/Tokyo"))
    second = delivered(wren).composition
    store_agent(team, "wren", with_timezone("Europe/Warsaw"))
    third = delivered(wren).composition

    assert second.pk != first.pk
    assert second.prompt_sha256 != first.prompt_sha256
    assert third.pk == first.pk
    assert StoredComposition.objects.count() == 2
    assert Delivery.objects.count() == 3


def test_the_memory_index_finds_exactly_the_deliveries_a_memory_shaped(wren: Agent) -> None:
    none = delivered(wren)
    old_name = remember(wren, "profile", "Doug", label="name")
    with_old = [delivered(wren, "a"), delivered(wren, "b")]
    city = remember(wren, "profile", "Lisbon", label="city")
    both = delivered(wren)
    new_name = remember(wren, "profile", "Douglas", label="name", supersedes=old_name)
    renamed = delivered(wren)
    waiting = preference(wren, "Prefers tea.", label="drink")
    last = delivered(wren)  # the pending memory changes the report, not the prompt

    def shaped_by(memory: str) -> set[str]:
        return delivery_ids(deliveries_of(wren, memory=memory))

    assert shaped_by(old_name) == {d.id for d in [*with_old, both]}
    assert shaped_by(city) == {both.id, renamed.id, last.id}
    assert shaped_by(new_name) == {renamed.id, last.id}
    assert shaped_by(waiting) == set()
    assert shaped_by("0" * 18) == set()
    assert none.id not in shaped_by(old_name) | shaped_by(city)
    assert index_of(renamed.composition) == sorted([city, new_name])
    # Filters combine: the session names one of the two deliveries with the old name.
    assert delivery_ids(deliveries_of(wren, memory=old_name, session="b")) == {with_old[1].id}


def test_the_memory_listing_is_the_index_through_the_api(api: ApiClient, wren: Agent) -> None:
    delivered(wren)
    name = remember(wren, "profile", "Doug", label="name")
    shaped = delivered(wren)
    listing = api.get(f"/api/agents/wren/deliveries?memory={name}").json()
    assert [row["delivery_id"] for row in listing["deliveries"]] == [shaped.id]
    assert listing["total"] == 1
    assert listing["deliveries"][0]["memory_ids"] == [name]


def test_identical_compositions_of_two_agents_are_stored_apart(
    api: ApiClient, other_api: ApiClient, wren: Agent, other_team: Team
) -> None:
    twin = create_agent(other_team, "wren", memory_config())  # same slug, same config
    ours, theirs = delivered(wren), delivered(twin)

    assert composition_json(ours.composition) == composition_json(theirs.composition)
    assert ours.composition.digest == theirs.composition.digest
    assert ours.composition_id != theirs.composition_id
    assert (ours.composition.agent_id, theirs.composition.agent_id) == (wren.pk, twin.pk)
    listed = api.get("/api/agents/wren/deliveries").json()["deliveries"]
    assert [row["delivery_id"] for row in listed] == [ours.id]
    other = other_api.get("/api/agents/wren/deliveries").json()["deliveries"]
    assert [row["delivery_id"] for row in other] == [theirs.id]
    assert_error(api.get(f"/api/deliveries/{theirs.id}"), 404, "delivery_not_found")


def test_the_memory_index_is_one_agents(team: Team, wren: Agent) -> None:
    """A memory id indexed for one agent finds nothing of another's (ids are unique,
    but the lookup must not depend on it)."""
    name = remember(wren, "profile", "Doug", label="name")
    mine = delivered(wren)
    orca = create_agent(team, "orca", memory_config(name="Orca"))
    delivered(orca)
    assert delivery_ids(deliveries_of(wren, memory=name)) == {mine.id}
    assert delivery_ids(deliveries_of(orca, memory=name)) == set()


def test_deleting_an_agent_deletes_its_deliveries_and_compositions(team: Team, wren: Agent) -> None:
    remember(wren, "profile", "Doug", label="name")
    delivered(wren)
    orca = create_agent(team, "orca", memory_config(name="Orca"))
    kept = delivered(orca)

    Agent.objects.filter(pk=wren.pk).delete()

    assert delivery_ids(Delivery.objects.all()) == {kept.id}
    assert list(StoredComposition.objects.values_list("pk", flat=True)) == [kept.composition_id]
    assert CompositionMemory.objects.count() == 0


def test_deleting_a_team_deletes_its_tokens_and_deliveries(
    api: ApiClient, team: Team, wren: Agent
) -> None:
    remember(wren, "profile", "Doug", label="name")
    assert api.post("/api/agents/wren/deliveries", {}).status_code == 201
    Team.objects.filter(pk=team.pk).delete()
    assert (Delivery.objects.count(), StoredComposition.objects.count()) == (0, 0)
    assert ApiToken.objects.count() == 0


# --- prune and storage ------------------------------------------------------------------


def age(*deliveries: Delivery, days: float) -> None:
    """Move ``deliveries`` ``days`` into the past, a microsecond apart (an agent's
    delivery times are unique), keeping their order."""
    moment = timezone.now() - timedelta(days=days)
    for step, delivery in enumerate(deliveries):
        Delivery.objects.filter(pk=delivery.pk).update(
            delivered_at=moment + timedelta(microseconds=step)
        )


def test_prune_removes_old_deliveries_and_the_compositions_only_they_used(
    api: ApiClient, wren: Agent
) -> None:
    first = remember(wren, "profile", "Doug", label="name")
    only_old = delivered(wren)  # composition A: {first}
    second = remember(wren, "profile", "Lisbon", label="city")
    old_shared, new_shared = delivered(wren), delivered(wren)  # composition B
    remember(wren, "profile", "Tea", label="drink")
    newest = delivered(wren)  # composition C
    age(only_old, old_shared, days=40)
    age(new_shared, days=29)

    assert prune(timedelta(days=30)) == Pruned(deliveries=2, compositions=1)

    assert delivery_ids(Delivery.objects.all()) == {new_shared.id, newest.id}
    assert set(StoredComposition.objects.values_list("pk", flat=True)) == {
        new_shared.composition_id,
        newest.composition_id,
    }
    assert not CompositionMemory.objects.filter(composition_id=only_old.composition_id).exists()
    assert index_of(new_shared.composition) == sorted([first, second])
    assert CompositionMemory.objects.count() == 2 + 3
    assert delivery_ids(deliveries_of(wren, memory=first)) == {new_shared.id, newest.id}
    assert_error(api.get(f"/api/deliveries/{only_old.id}"), 404, "delivery_not_found")
    assert api.get(f"/api/deliveries/{new_shared.id}").status_code == 200


def test_prune_with_nothing_old_removes_nothing(wren: Agent) -> None:
    remember(wren, "profile", "Doug", label="name")
    kept = [delivered(wren), delivered(wren)]
    rows = (Delivery.objects.count(), StoredComposition.objects.count())
    assert prune(timedelta(days=1)) == Pruned(deliveries=0, compositions=0)
    assert (Delivery.objects.count(), StoredComposition.objects.count()) == rows
    assert delivery_ids(Delivery.objects.all()) == {d.id for d in kept}
    assert CompositionMemory.objects.count() == 1


def test_prune_of_everything_leaves_no_composition_behind(wren: Agent) -> None:
    remember(wren, "profile", "Doug", label="name")
    old = [delivered(wren), delivered(wren)]
    age(*old, days=2)
    assert prune(timedelta(days=1)) == Pruned(deliveries=2, compositions=1)
    assert (Delivery.objects.count(), StoredComposition.objects.count()) == (0, 0)
    assert CompositionMemory.objects.count() == 0


def test_storage_counts_deliveries_compositions_and_bytes(wren: Agent) -> None:
    empty = storage()
    assert (empty.deliveries, empty.compositions, empty.body_bytes) == (0, 0, 0)

    delivered(wren)
    delivered(wren)
    remember(wren, "profile", "Doug", label="name")
    delivered(wren)
    counted = storage()

    assert (counted.deliveries, counted.compositions) == (3, 2)
    bodies = StoredComposition.objects.values_list("body", flat=True)
    assert counted.body_bytes == sum(len(bytes(body)) for body in bodies)
    if connection.vendor == "postgresql":
        assert counted.table_bytes is not None
        assert counted.table_bytes > 0
    else:  # SQLite tells only where its dbstat table is compiled in
        assert counted.table_bytes is None or counted.table_bytes > 0
