"""A delivery never changes (SPEC §11): whatever happens to the agent afterwards — saves,
approvals, rejections, revocations, reopenings, supersessions, edits of its declarations
and of its authored entries — ``GET /api/deliveries/{id}`` answers the very bytes it
answered when it was recorded, and the timeline keeps its row as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lens.actors import Actor
from lens.core.config import AgentConfig
from lens.models import Agent, Team
from memory.configuring import store_agent
from memory.core.records import MemoryInput
from memory.decisions import decide, reopen, revoke
from memory.models import MemoryRecord, Promotion, PromotionStatus
from memory.saving import save_memory
from tests.api_calls import ApiClient, api_composition, api_prompt_text
from tests.factories import create_agent, memory_config

pytestmark = pytest.mark.django_db

STEPS = (
    "save_auto",
    "save_guarded",
    "approve",
    "reject",
    "revoke",
    "reopen",
    "supersede",
    "declare",
    "author",
)
PROFILE_LABELS = ("name", "city", "timezone")  # "timezone" meets the authored entry
PREFERENCE_LABELS = ("drink", "theme", "music")
TIERS = ("guarded", "auto", "locked", None)
AUTHORED: tuple[list[dict[str, Any]], ...] = (
    [{"key": "timezone", "value": "Europe/Warsaw"}],
    [{"key": "timezone", "value": "Asia/Tokyo"}],
    [{"key": "timezone", "value": "UTC"}, {"key": "name", "value": "Authored Name"}],
    [],
)


@dataclass
class Wren:
    """The agent under test, its current config and what the reviewer does to it."""

    agent: Agent
    reviewer: Actor
    tier: str | None = "guarded"
    entries: list[dict[str, Any]] = field(default_factory=lambda: list(AUTHORED[0]))
    counter: int = 0

    def config(self) -> AgentConfig:
        config = memory_config(preferences=self.tier)
        config["background"]["sections"][0]["entries"] = self.entries
        return AgentConfig.model_validate(config)

    def save(self, kind: str, label: str, supersedes: str | None = None) -> None:
        self.counter += 1
        data = MemoryInput(
            kind=kind, content=f"{kind} {label} {self.counter}", label=label, supersedes=supersedes
        )
        save_memory(self.agent, data, self.reviewer)  # a conflict is a fine outcome too

    def rows(self, *statuses: str) -> list[str]:
        return list(
            Promotion.objects.filter(agent=self.agent, status__in=statuses)
            .order_by("record_id")
            .values_list("record_id", flat=True)
        )

    def step(self, name: str, pick: int) -> None:
        def one_of(*statuses: str) -> str | None:
            rows = self.rows(*statuses)
            return rows[pick % len(rows)] if rows else None

        if name == "save_auto":
            self.save("profile", PROFILE_LABELS[pick % 3])
        elif name == "save_guarded":
            self.save("preference", PREFERENCE_LABELS[pick % 3])
        elif name in ("approve", "reject") and (target := one_of(PromotionStatus.PENDING)):
            decide(target, name == "approve", self.reviewer)
        elif name == "revoke" and (target := one_of(PromotionStatus.APPROVED)):
            revoke(target, self.reviewer, "no longer true")
        elif name == "reopen" and (target := one_of(PromotionStatus.REJECTED)):
            reopen(target, self.reviewer)
        elif name == "supersede" and (
            target := one_of(PromotionStatus.PENDING, PromotionStatus.APPROVED)
        ):
            older = MemoryRecord.objects.get(pk=target)
            self.save(older.kind, older.label or "name", supersedes=older.pk)
        elif name == "declare":
            self.tier = TIERS[pick % len(TIERS)]
            self.agent, _ = store_agent(self.agent.team, "wren", self.config())
        elif name == "author":
            self.entries = list(AUTHORED[pick % len(AUTHORED)])
            self.agent, _ = store_agent(self.agent.team, "wren", self.config())


@dataclass(frozen=True)
class Recorded:
    """A delivery as first read back: the bytes of GET, its POST answer, its timeline row."""

    delivery_id: str
    answer: dict[str, Any]
    read: bytes
    row: dict[str, Any]


def rows_by_id(api: ApiClient) -> dict[str, dict[str, Any]]:
    response = api.get("/api/agents/wren/deliveries?limit=200")
    assert response.status_code == 200, response.content
    return {row["delivery_id"]: row for row in response.json()["deliveries"]}


def record(api: ApiClient, session: str) -> Recorded:
    posted = api.post("/api/agents/wren/deliveries", {"session": session, "model": "m"})
    assert posted.status_code == 201, posted.content
    answer = posted.json()
    read = api.get(f"/api/deliveries/{answer['delivery_id']}")
    assert read.status_code == 200
    assert read.json() == {**answer, "agent": "wren"}
    row = rows_by_id(api)[answer["delivery_id"]]
    return Recorded(answer["delivery_id"], answer, read.content, row)


def assert_unchanged(api: ApiClient, recorded: list[Recorded]) -> None:
    rows = rows_by_id(api)
    for delivered in recorded:
        response = api.get(f"/api/deliveries/{delivered.delivery_id}")
        assert response.status_code == 200
        assert response.content == delivered.read  # byte for byte
        body = response.json()
        assert body["composition"] == delivered.answer["composition"]
        assert body["prompt_sha256"] == delivered.answer["prompt_sha256"]
        assert rows[delivered.delivery_id] == delivered.row


def wren_with_history(team: Team, reviewer: User) -> Wren:
    """Wren holding a memory of each state: composed, approved, pending and rejected."""
    wren = Wren(create_agent(team, "wren", memory_config()), Actor.for_user(reviewer))
    wren.save("profile", "name")
    wren.save("preference", "drink")
    wren.save("preference", "theme")
    wren.save("preference", "music")
    drink, theme, music = wren.rows(PromotionStatus.PENDING)
    decide(drink, True, wren.reviewer)
    decide(music, False, wren.reviewer)
    return wren


STEP = st.tuples(st.sampled_from(STEPS), st.integers(min_value=0, max_value=11))


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=st.lists(STEP, min_size=1, max_size=6))
def test_no_later_change_alters_a_recorded_delivery(
    api: ApiClient, team: Team, reviewer: User, steps: list[tuple[str, int]]
) -> None:
    # Each example starts from nothing: its writes are rolled back at the end.
    with transaction.atomic():
        wren = wren_with_history(team, reviewer)
        recorded = [record(api, "s0")]
        for index, (name, pick) in enumerate(steps, start=1):
            wren.step(name, pick)
            assert_unchanged(api, recorded)
            recorded.append(record(api, f"s{index}"))
        assert_unchanged(api, recorded)
        transaction.set_rollback(True)


def test_every_kind_of_change_leaves_the_first_delivery_as_it_was(
    api: ApiClient, team: Team, reviewer: User
) -> None:
    wren = wren_with_history(team, reviewer)
    first = record(api, "first")
    for name, pick in [
        ("save_auto", 1),  # city: composes
        ("save_guarded", 2),  # music again: pending
        ("approve", 0),
        ("reject", 0),
        ("revoke", 0),
        ("reopen", 0),
        ("supersede", 0),
        ("declare", 1),  # preferences become auto
        ("author", 2),  # the authored name wins over the memory's
        ("declare", 3),  # preferences no longer declared
    ]:
        wren.step(name, pick)
        assert_unchanged(api, [first])
    live = api_composition(api)
    assert live != first.answer["composition"]  # the agent did change meanwhile
    assert api_prompt_text(live) != api_prompt_text(first.answer["composition"])
    assert first.answer["prompt_sha256"] == first.row["prompt_sha256"]
