"""Spill into recall (SPEC §19.3): approved memories the overlay budget left out are
recalled in the ``spilled`` tier, newest first, within their own sub-budget; nothing
dropped for another reason, superseded or erased spills; the prompt's memories are never
recalled and a spilled one is not repeated in hits; one fold per recall."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from lens.actors import Actor
from lens.core.config import AgentConfig
from lens.models import Agent, Team
from memory.composition import compose
from memory.configuring import store_agent
from memory.decisions import decide
from memory.erasure import erase_memory
from memory.models import MemoryRecord
from memory.recall import recall
from tests.api_calls import ApiClient
from tests.factories import create_agent, memory_config, remember

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def ada(team: Team, settings: Any) -> Agent:
    # Room for one preference line of the ones below ("- **sN**: Prefers …\n").
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 40
    settings.MEMORY_RECALL_SPILL_CHARS = 1000
    return create_agent(team, "ada", memory_config(preferences="auto"))


def prefer(agent: Agent, n: int, content: str, label: str | None = None) -> str:
    """An auto-approved preference saved ``n`` minutes after T0 (so newest is certain)."""
    record_id = remember(agent, "preference", content, label=label or f"s{n}")
    MemoryRecord.objects.filter(pk=record_id).update(created_at=T0 + timedelta(minutes=n))
    return record_id


def in_prompt(agent: Agent) -> set[str]:
    return {mid for section in compose(agent).prompt.sections for mid in section.memory_ids}


def tiers(agent: Agent, message: str) -> dict[str, tuple[str, ...]]:
    return dict(recall(agent, message).tiers)


def test_over_budget_memories_spill_newest_first_and_the_prompts_never_do(ada: Agent) -> None:
    oldest = prefer(ada, 1, "Prefers green tea.")
    older = prefer(ada, 2, "Prefers window seats.")
    newest = prefer(ada, 3, "Prefers short answers.")
    assert in_prompt(ada) == {newest}
    found = tiers(ada, "anything about short answers?")
    assert found == {"profile": (), "pinned": (), "spilled": (older, oldest), "hits": ()}
    assert recall(ada, "x").text == (
        "### Recalled Memories\n- Prefers window seats.\n- Prefers green tea.\n"
    )


def test_spill_comes_after_profile_and_pinned_and_is_not_repeated_in_hits(
    team: Team, settings: Any
) -> None:
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 40
    agent = create_agent(team, "ada", memory_config(recall_pinned_candidates=True))
    spilled = prefer(agent, 1, "Prefers green tea.")
    composed = prefer(agent, 2, "Prefers short answers.")
    waiting = prefer(agent, 3, "Prefers mint tea.")
    for approved in (spilled, composed):
        decide(approved, True, Actor(label="alice"))
    name = remember(agent, "profile", "Name is Ada Lovelace, mathematician.", label="name")
    episode = remember(agent, "episode", "Drank tea with Charles.")
    assert in_prompt(agent) >= {composed}
    found = recall(agent, "tea")
    # The over-budget memory is placed and not composed, like a pinned candidate, but is
    # recalled once, as spilled (the tier that says why).
    assert dict(found.tiers) == {
        "profile": (name,),
        "pinned": (waiting,),
        "spilled": (spilled,),
        "hits": (episode,),
    }


def test_spill_stays_within_its_sub_budget_so_hits_still_fit(ada: Agent, settings: Any) -> None:
    settings.MEMORY_RECALL_SPILL_CHARS = 30  # one spilled line ("- Prefers …\n")
    oldest = prefer(ada, 1, "Prefers green tea.")
    older = prefer(ada, 2, "Prefers window seats.")
    prefer(ada, 3, "Prefers short answers.")
    episode = remember(ada, "episode", "Walked by the sea.")
    found = tiers(ada, "sea")
    assert found["spilled"] == (older,)
    assert oldest not in recall(ada, "sea").memory_ids
    assert found["hits"] == (episode,)
    settings.MEMORY_RECALL_SPILL_CHARS = 0
    assert tiers(ada, "sea")["spilled"] == ()


def test_superseded_and_erased_memories_never_spill(ada: Agent) -> None:
    replaced = prefer(ada, 1, "Prefers green tea.")
    erased = prefer(ada, 2, "Prefers window seats.")
    prefer(ada, 3, "Prefers short answers.")
    # The replacement is newer, so it wins the line; the memory it replaced is gone.
    replacement = remember(ada, "preference", "Prefers black tea.", label="s1", supersedes=replaced)
    MemoryRecord.objects.filter(pk=replacement).update(created_at=T0 + timedelta(minutes=4))
    erase_memory(erased, Actor(label="operator"), "request")
    found = recall(ada, "green tea window seats")
    assert replaced not in found.memory_ids
    assert erased not in found.memory_ids


def test_a_memory_dropped_for_another_reason_never_spills(ada: Agent, team: Team) -> None:
    left_out = prefer(ada, 1, "Prefers green tea.")
    prefer(ada, 2, "Prefers short answers.")
    assert tiers(ada, "nothing")["spilled"] == (left_out,)
    # The preferences section is no longer declared: its memories leave the prompt for
    # that reason, not the budget's, and recall does not bring them back.
    store_agent(team, "ada", AgentConfig.model_validate(memory_config(preferences=None)))
    reasons = {d.memory_id: d.reason for d in compose(ada).report.drops}
    assert reasons[left_out] == "undeclared-section"
    assert tiers(ada, "nothing")["spilled"] == ()


def test_the_api_answers_every_tier_in_order(api: ApiClient, team: Team, settings: Any) -> None:
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 40
    agent = create_agent(team, "ada", memory_config(preferences="auto"))
    spilled = prefer(agent, 1, "Prefers green tea.")
    prefer(agent, 2, "Prefers short answers.")
    answer = api.get("/api/agents/ada/recall?message=zebra").json()
    assert answer["memory_ids"] == [spilled]
    assert answer["tiers"] == [
        {"tier": "profile", "memory_ids": []},
        {"tier": "pinned", "memory_ids": []},
        {"tier": "spilled", "memory_ids": [spilled]},
        {"tier": "hits", "memory_ids": []},
    ]


def queries_of_recall(agent: Agent) -> int:
    with CaptureQueriesContext(connection) as captured:
        recall(agent, "tea by the sea")
    return len(captured.captured_queries)


def test_recall_costs_the_same_queries_however_many_memories_spill(ada: Agent) -> None:
    prefer(ada, 0, "Prefers short answers.")
    few = queries_of_recall(ada)
    for n in range(1, 30):
        prefer(ada, n, f"Prefers tea number {n}.")
    assert len(tiers(ada, "x")["spilled"]) > 10
    assert queries_of_recall(ada) == few


def test_a_memory_both_expired_and_over_budget_never_spills(ada: Agent) -> None:
    expired = prefer(ada, 1, "Prefers green tea.")
    spilled = prefer(ada, 2, "Prefers window seats.")
    composed = prefer(ada, 3, "Prefers short answers.")
    # Its window closed an hour ago; the budget would have left it out as well.
    MemoryRecord.objects.filter(pk=expired).update(
        valid_until=datetime.now(UTC) - timedelta(hours=1)
    )
    assert in_prompt(ada) == {composed}
    reasons = {d.memory_id: d.reason for d in compose(ada).report.drops}
    assert reasons == {expired: "expired", spilled: "over-budget"}
    found = recall(ada, "green tea window seats")
    assert dict(found.tiers)["spilled"] == (spilled,)
    assert expired not in found.memory_ids
