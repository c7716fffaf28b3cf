"""Recall for a message (``memory.recall`` and ``GET /api/agents/{slug}/recall``,
SPEC §6.4): tiers, dedupe against the prompt, superseded memories, the opt-in pinned
tier, bad input, access."""

from __future__ import annotations

from typing import Any

import pytest

from lens.models import Agent, Team
from memory.composition import compose
from memory.core.recall import HEADING
from memory.recall import InvalidMessage, recall
from tests.api_calls import ApiClient, assert_error
from tests.factories import create_agent, memory_config, remember

pytestmark = pytest.mark.django_db


def in_prompt(agent: Agent) -> set[str]:
    return {mid for section in compose(agent).prompt.sections for mid in section.memory_ids}


def test_profile_memories_in_the_prompt_are_not_repeated(wren: Agent, settings: Any) -> None:
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 60  # room for one profile entry: the newer
    first = remember(wren, "profile", "Name is Doug.", label="name")
    second = remember(wren, "profile", "Lives in Lisbon, by the river.", label="city")
    assert in_prompt(wren) == {second}
    found = recall(wren, "anything")
    assert found.memory_ids == (first,)
    assert found.text == HEADING + "- Name is Doug.\n"


def test_hits_follow_the_profile_tier_and_superseded_memories_never_appear(
    wren: Agent, settings: Any
) -> None:
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 0  # nothing composed: every tier shows
    old = remember(wren, "episode", "Had tea with Anna on Monday.")
    remember(wren, "episode", "Had tea with Anna on Tuesday.", supersedes=old)
    profile = remember(wren, "profile", "Name is Doug.", label="name")
    unrelated = remember(wren, "episode", "Went cycling.")
    found = recall(wren, "Any news about tea?")
    assert found.memory_ids[0] == profile
    assert old not in found.memory_ids
    assert unrelated not in found.memory_ids
    assert [line.tier for line in found.lines] == ["profile", "hits"]


def test_pinned_candidates_are_recalled_only_when_the_agent_opts_in(team: Team) -> None:
    plain = create_agent(team, "plain", memory_config())
    pinned = create_agent(team, "pinned", memory_config(recall_pinned_candidates=True))
    for agent in (plain, pinned):
        remember(agent, "preference", "Prefers short answers.", label="answers")
    assert recall(plain, "hello").memory_ids == ()
    found = recall(pinned, "hello")
    assert [line.tier for line in found.lines] == ["pinned"]


def test_a_message_of_many_words_is_answered(wren: Agent) -> None:
    tea = remember(wren, "episode", "Tea.")
    message = " ".join(f"word{n}" for n in range(300)) + " tea"
    assert tea not in recall(wren, message).memory_ids  # beyond the first 64 words
    assert recall(wren, "tea " + message).memory_ids == (tea,)


@pytest.mark.parametrize("message", ["x" * 4001, "tea\x00", "tea\ud800"])
def test_a_message_that_cannot_be_read_is_refused(wren: Agent, message: str) -> None:
    with pytest.raises(InvalidMessage) as raised:
        recall(wren, message)
    assert raised.value.code == "invalid_message"


def test_the_api_answers_text_and_ids(api: ApiClient, wren: Agent) -> None:
    episode = remember(wren, "episode", "Had tea with Anna.")
    answer = api.get("/api/agents/wren/recall?message=tea%3F")
    assert answer.status_code == 200
    assert answer.json() == {
        "text": HEADING + "- Had tea with Anna.\n",
        "memory_ids": [episode],
        "tiers": [
            {"tier": "profile", "memory_ids": []},
            {"tier": "pinned", "memory_ids": []},
            {"tier": "spilled", "memory_ids": []},
            {"tier": "hits", "memory_ids": [episode]},
        ],
    }


@pytest.mark.parametrize("query", ["", "?message=" + "x" * 4001, "?message=tea%00"])
def test_the_api_refuses_a_missing_or_bad_message(api: ApiClient, wren: Agent, query: str) -> None:
    assert_error(api.get(f"/api/agents/wren/recall{query}"), 422)


def test_recall_is_team_scoped(
    api: ApiClient, other_api: ApiClient, anon_api: ApiClient, wren: Agent
) -> None:
    remember(wren, "episode", "Secret tea.")
    assert_error(other_api.get("/api/agents/wren/recall?message=tea"), 404, "agent_not_found")
    assert_error(api.get("/api/agents/nobody/recall?message=tea"), 404, "agent_not_found")
    assert_error(anon_api.get("/api/agents/wren/recall?message=tea"), 401, "unauthorized")
