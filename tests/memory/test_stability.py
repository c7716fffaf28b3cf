"""Prompt-cache stability over an agent's deliveries (SPEC §17): how often each section
changed, the mean cached prefix as delivered, a measured better order, and applying it
as one revision of moves (a proposal on a protected agent)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from lens.actors import Actor
from lens.agents import config_of
from lens.core.config import AgentConfig
from lens.core.errors import InvalidInput
from lens.core.provider_caches import anthropic_cached, openai_cached
from lens.core.token_counts import count_tokens, token_ids
from lens.core.token_prefix import common_prefix
from lens.models import Agent, Proposal, Revision, Team
from lens.revisions import RevisionConflict, current_number
from memory.configuring import store_config
from memory.deliveries.ledger import deliver, delivered_prompt
from memory.models import Delivery
from memory.stability import apply_order, stability
from tests.api_calls import ApiClient, assert_error, db_snapshot
from tests.factories import create_agent, make_user

pytestmark = pytest.mark.django_db
IDS = ["now", "prefs", "about", "people"]


def config(values: dict[str, str], order: list[str] = IDS, **extra: Any) -> dict[str, Any]:
    sections = [
        {
            "id": section_id,
            "title": section_id.title(),
            "entries": [
                {
                    "key": f"{section_id}-{n}",
                    "value": f"{values.get(section_id, 'steady')} {n} "
                    + "words that make the section long enough to matter " * 4,
                }
                for n in range(6)
            ],
        }
        for section_id in order
    ]
    return {
        "name": "Wren",
        "persona": "You help. " * 40,
        "background": {"sections": sections},
        **extra,
    }


def history(team: Team, edits: list[dict[str, str]], **extra: Any) -> Agent:
    """Wren delivered once per set of values, in order."""
    agent = create_agent(team, "wren", config(edits[0], **extra))
    actor = Actor.for_user(make_user("dev", team))
    for values in edits:
        store_config(team, "wren", config_of_values(values, **extra), actor=actor)
        deliver(Agent.objects.get(pk=agent.pk), actor)
    return Agent.objects.get(pk=agent.pk)


def config_of_values(values: dict[str, str], **extra: Any) -> AgentConfig:
    return AgentConfig.model_validate(config(values, **extra))


def test_a_volatile_first_section_is_moved_last_and_the_gain_is_measured(team: Team) -> None:
    agent = history(team, [{"now": f"tick {n}"} for n in range(8)])
    found = stability(agent, 50)
    assert found.deliveries == 8
    changed = {(s.section, s.background_section): s.changed_in for s in found.sections}
    assert changed[("Context", "now")] == 7
    assert changed[("Context", "prefs")] == 0
    assert changed[("Persona", None)] == 0
    assert found.current_order == IDS
    assert found.suggested_order == ["prefs", "about", "people", "now"]
    assert found.prefix_tokens_mean is not None
    assert found.suggested_prefix_tokens_mean is not None
    assert found.suggested_prefix_tokens_mean > found.prefix_tokens_mean
    # As delivered: measured independently, prompt by prompt.
    assert found.prefix_tokens_mean == pytest.approx(independent_mean(delivered_texts(agent)))


def delivered_texts(agent: Agent) -> list[str]:
    rows = Delivery.objects.filter(agent=agent).order_by("delivered_at")
    return [delivered_prompt(row) for row in rows]


def independent_mean(texts: list[str]) -> float:
    ids = [token_ids(text) for text in texts]
    prefixes = [common_prefix(a, b) for a, b in zip(ids, ids[1:], strict=False)]
    return sum(prefixes) / len(prefixes)


def test_each_providers_rule_is_applied_to_the_measured_prefixes(team: Team) -> None:
    # Authored sections past Anthropic's minimum, a volatile first Background section,
    # and a last delivery that repeats the one before (served whole by both).
    edits = [{"now": f"tick {n}"} for n in range(4)] + [{"now": "tick 3"}]
    agent = history(team, edits, persona="You help with care. " * 300)
    found = stability(agent, 50)
    texts = delivered_texts(agent)
    ids = [token_ids(text) for text in texts]
    prefixes = [common_prefix(a, b) for a, b in zip(ids, ids[1:], strict=False)]
    authored = [count_tokens(text[: text.index("## Context")]) for text in texts]
    assert authored[0] >= 1024
    anthropic = [
        anthropic_cached(prefix, (head, len(whole)))
        for prefix, head, whole in zip(prefixes, authored[1:], ids[1:], strict=True)
    ]
    assert anthropic == [authored[1], authored[2], authored[3], len(ids[4])]
    assert found.anthropic_cached_mean == pytest.approx(sum(anthropic) / len(anthropic))
    openai = [openai_cached(prefix) for prefix in prefixes]
    assert found.openai_cached_mean == pytest.approx(sum(openai) / len(openai))
    # Moving the volatile section last keeps more than the authored sections cached.
    assert found.suggested_anthropic_cached_mean is not None
    assert found.anthropic_cached_mean is not None
    assert found.suggested_anthropic_cached_mean >= found.anthropic_cached_mean


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_the_suggestion_never_measures_worse_than_the_current_order(team: Team, seed: int) -> None:
    pick = random.Random(seed)
    edits = [
        {section_id: f"v{pick.randrange(3)}" for section_id in pick.sample(IDS, 2)}
        for _ in range(10)
    ]
    found = stability(history(team, edits), 50)
    assert found.suggested_prefix_tokens_mean is not None
    assert found.current_prefix_tokens_mean is not None
    assert found.suggested_prefix_tokens_mean >= found.current_prefix_tokens_mean


def test_fewer_than_two_deliveries_have_no_means(team: Team) -> None:
    found = stability(history(team, [{}]), 50)
    assert found.deliveries == 1
    assert found.prefix_tokens_mean is None
    assert found.suggested_order == IDS


def test_applying_the_order_writes_one_revision_of_moves(team: Team) -> None:
    agent = history(team, [{"now": f"tick {n}"} for n in range(4)])
    found = stability(agent, 50)
    before = Revision.objects.filter(agent=agent).count()
    stored = apply_order(
        agent,
        found.suggested_order,
        Actor.for_user(make_user("rhea", team)),
        if_revision=current_number(agent),
    )
    assert stored.recorded is not None
    assert Revision.objects.filter(agent=agent).count() == before + 1
    assert {change["change"] for change in stored.recorded.summary} == {"section_moved"}
    assert [s.id for s in config_of(Agent.objects.get(pk=agent.pk)).background.sections] == (
        found.suggested_order
    )


def test_on_a_protected_agent_the_order_is_proposed(team: Team) -> None:
    agent = history(team, [{"now": f"tick {n}"} for n in range(3)], protected=True)
    before = Revision.objects.filter(agent=agent).count()
    proposals = Proposal.objects.filter(agent=agent).count()
    stored = apply_order(
        agent,
        ["prefs", "about", "people", "now"],
        Actor.for_user(make_user("rhea", team)),
        if_revision=current_number(agent),
    )
    assert stored.proposal is not None
    assert Revision.objects.filter(agent=agent).count() == before
    assert Proposal.objects.filter(agent=agent).count() == proposals + 1


def test_a_bad_or_stale_order_changes_nothing(team: Team) -> None:
    agent = history(team, [{}, {}])
    actor = Actor.for_user(make_user("rhea", team))
    snapshot = db_snapshot()
    for order in (["now", "prefs"], [*IDS, "now"], ["x", *IDS[1:]]):
        with pytest.raises(InvalidInput):
            apply_order(agent, order, actor, if_revision=current_number(agent))
    with pytest.raises(RevisionConflict):
        apply_order(agent, list(reversed(IDS)), actor, if_revision=current_number(agent) - 1)
    assert db_snapshot() == snapshot


def test_the_api_answers_for_the_tokens_team_only(
    team: Team, api: ApiClient, other_api: ApiClient
) -> None:
    agent = history(team, [{"now": f"tick {n}"} for n in range(3)])
    answer = api.get("/api/agents/wren/stability?last=50").json()
    found = stability(agent, 50)
    assert answer["openai_cached_tokens_mean"] == found.openai_cached_mean
    assert answer["anthropic_cached_tokens_mean"] == found.anthropic_cached_mean
    assert answer["suggested_anthropic_cached_tokens_mean"] == found.suggested_anthropic_cached_mean
    assert set(answer) >= {
        "deliveries",
        "sections",
        "current_order",
        "prefix_tokens_mean",
        "suggested_order",
        "suggested_prefix_tokens_mean",
    }
    assert answer["deliveries"] == 3
    assert {"section", "background_section", "changed_in", "tokens"} == set(answer["sections"][0])
    assert_error(other_api.get("/api/agents/wren/stability"), 404, "agent_not_found")
    assert_error(api.get("/api/agents/wren/stability?last=1"), 422)
    assert_error(api.get("/api/agents/wren/stability?last=201"), 422)
    assert api.get("/api/agents/wren/stability?last=200").status_code == 200
