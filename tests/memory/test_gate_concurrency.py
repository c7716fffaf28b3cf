"""The collision gate under concurrent saves (SPEC §5.1 step 3), on the real database."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from lens.models import Agent, ApiToken, Team
from memory.models import HOLDING, MemoryRecord, Promotion
from tests.api_calls import ApiClient
from tests.factories import create_agent, race
from tests.samples import SAMPLE_CONFIG

pytestmark = pytest.mark.django_db(transaction=True)

WRITERS = 6

CONFIG: dict[str, Any] = {
    **SAMPLE_CONFIG,
    "routing_spec": "user-background",
    "background": {
        "sections": [
            {"id": "user_profile", "title": "About the User", "promotion": "auto"},
            {"id": "user_preferences", "title": "User Preferences", "promotion": "guarded"},
        ]
    },
}
SECTION_OF = {"profile": "user_profile", "preference": "user_preferences"}


def setup_agent() -> tuple[Agent, str]:
    team = Team.objects.create(slug="acme", name="Acme")
    _token, raw = ApiToken.objects.issue(team)
    return create_agent(team, "wren", CONFIG), raw


def save_at_once(raw: str, body_of: Callable[[int], dict[str, Any]]) -> list[tuple[int, Any]]:
    """Every writer posts at once (after a barrier); returns (status, answer) per writer."""

    def save(n: int) -> tuple[int, Any]:
        response = ApiClient(raw).post("/api/agents/wren/memories", body_of(n))
        return response.status_code, response.json()

    return race(WRITERS, save)


def holders(agent: Agent, section: str, key: str) -> list[str]:
    address = json.dumps([section, key], separators=(",", ":"))
    return list(
        Promotion.objects.filter(
            agent=agent, placement_key=address, status__in=HOLDING
        ).values_list("record_id", flat=True)
    )


@pytest.mark.parametrize("kind", ["profile", "preference"])
def test_concurrent_saves_to_one_new_address_let_exactly_one_through(kind: str) -> None:
    agent, raw = setup_agent()

    results = save_at_once(
        raw, lambda n: {"kind": kind, "content": f"Writer {n}.", "label": "name"}
    )

    statuses = sorted(status for status, _ in results)
    assert 500 not in statuses
    assert statuses == [201] + [409] * (WRITERS - 1)
    (winner,) = [answer["id"] for status, answer in results if status == 201]
    for status, answer in results:
        if status == 409:
            assert answer["status"] == "conflict"
            assert answer["existing"]["id"] == winner
    assert holders(agent, SECTION_OF[kind], "name") == [winner]
    assert list(MemoryRecord.objects.filter(agent=agent).values_list("id", flat=True)) == [winner]
    assert Promotion.objects.filter(agent=agent).count() == 1


def test_concurrent_saves_of_one_content_let_exactly_one_through() -> None:
    agent, raw = setup_agent()

    results = save_at_once(
        raw, lambda n: {"kind": "profile", "content": "The user likes trains." + " " * n}
    )

    assert sorted(status for status, _ in results) == [201] + [409] * (WRITERS - 1)
    assert MemoryRecord.objects.filter(agent=agent).count() == 1
    assert Promotion.objects.filter(agent=agent, status__in=HOLDING).count() == 1


def test_concurrent_supersedes_of_one_holder_let_exactly_one_through() -> None:
    agent, raw = setup_agent()
    client = ApiClient(raw)
    first = client.post(
        "/api/agents/wren/memories",
        {"kind": "profile", "content": "The user's name is Doug.", "label": "name"},
    )
    assert first.status_code == 201
    holder = first.json()["id"]

    results = save_at_once(
        raw,
        lambda n: {
            "kind": "profile",
            "content": f"The user's name is Doug {n}.",
            "label": "name",
            "supersedes": holder,
        },
    )

    statuses = sorted(status for status, _ in results)
    assert 500 not in statuses
    assert statuses == [201] + [409] * (WRITERS - 1)
    (winner,) = [answer["id"] for status, answer in results if status == 201]
    # The later ones find the new holder, not the one they meant to supersede.
    assert {answer["existing"]["id"] for status, answer in results if status == 409} == {winner}
    assert holders(agent, "user_profile", "name") == [winner]
    assert Promotion.objects.get(record_id=holder).status == "superseded"
    assert sorted(MemoryRecord.objects.filter(agent=agent).values_list("id", flat=True)) == sorted(
        [holder, winner]
    )
    assert MemoryRecord.objects.get(pk=winner).supersedes_id == holder
    composed = client.get("/api/agents/wren/composition").json()
    assert {d["memory_id"]: d["reason"] for d in composed["report"]["drops"]} == {
        holder: "superseded"
    }


def test_concurrent_saves_to_different_addresses_all_land() -> None:
    agent, raw = setup_agent()

    results = save_at_once(
        raw,
        lambda n: {
            "kind": "profile" if n % 2 else "preference",
            "content": f"Fact {n}.",
            "label": f"fact-{n}",
        },
    )

    assert [status for status, _ in results] == [201] * WRITERS
    ids = {answer["id"] for _, answer in results}
    assert len(ids) == WRITERS
    assert set(MemoryRecord.objects.filter(agent=agent).values_list("id", flat=True)) == ids
    statuses = sorted(Promotion.objects.filter(agent=agent).values_list("status", flat=True))
    assert statuses == ["approved"] * (WRITERS // 2) + ["pending"] * (WRITERS // 2)
