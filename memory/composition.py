"""Composing an agent's prompt from what is stored: the thin shell over the pure core."""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from lens.agents import config_of, load_entry_values
from lens.core.config import AgentConfig
from lens.core.counts import Counts
from lens.core.prompt import Prompt, PromptTokens
from lens.core.render import render_sections, render_text
from lens.models import Agent
from lens.tracing import (
    PROMPT_SHA256,
    PROMPT_TOKENS,
    TEAM,
    Attributes,
    agent_attributes,
    span,
)
from memory.core.composition import Composition, SpecRef
from memory.core.deliveries import sha256_hex
from memory.core.overlay import apply_memory_overlay
from memory.core.report import PromotionState, routing_report
from memory.core.routing import PlacedRecord
from memory.queries import placed_records, promotion_states
from memory.registry import get_spec


def compose(
    agent: Agent, states: list[PromotionState] | None = None, now: datetime | None = None
) -> Composition:
    """Compose ``agent`` (load it with ``lens.agents.with_config`` to stay query-flat).

    ``states`` may be passed when the caller already read the promotion states; ``now``
    is the time validity windows are judged at (SPEC §19.2; default: the clock's now).
    """
    preloaded = None if states is None else {agent.pk: states}
    return compose_many([agent], preloaded, now)[agent.pk]


def compose_many(
    agents: Sequence[Agent],
    states: dict[int, list[PromotionState]] | None = None,
    now: datetime | None = None,
) -> dict[int, Composition]:
    """Compose several agents with a fixed number of queries, whatever their sizes."""
    with span("lens.compose") as current:
        composed = _compose_many(agents, states, now or timezone.now())
        if current.is_recording():
            current.set_attributes(_composed(agents, composed))
        return composed


def _compose_many(
    agents: Sequence[Agent], states: dict[int, list[PromotionState]] | None, now: datetime
) -> dict[int, Composition]:
    ids = [agent.pk for agent in agents]
    load_entry_values(agents)
    placed = placed_records(ids)
    if states is None:
        states = promotion_states(ids)
    return {
        agent.pk: compose_from(
            agent,
            placed.of(agent.pk),
            states.get(agent.pk, []),
            placed.unreadable.get(agent.pk, set()),
            now=now,
        )
        for agent in agents
    }


@dataclass(frozen=True)
class ComposedNow:
    """``compose_current``'s answer."""

    composition: Composition
    # When it stops being true by itself: the earliest validity window open (SPEC §19.2).
    due: datetime | None
    memories: int  # every memory the agent has saved (one promotion row each)


def compose_current(agent: Agent, now: datetime, config: AgentConfig) -> ComposedNow:
    """``agent`` composed with ``config`` (its declarations) at ``now``, with the moment
    that composition stops being true by itself: the earliest validity window still open
    at ``now`` (None: none is), when that memory leaves the prompt or the report (SPEC
    §19.2) with no write at all."""
    with span("lens.compose") as current:
        placed = placed_records([agent.pk])
        states = promotion_states([agent.pk]).get(agent.pk, [])
        composition = compose_from(
            agent,
            placed.of(agent.pk),
            states,
            placed.unreadable.get(agent.pk, set()),
            config,
            now=now,
        )
        if current.is_recording():
            current.set_attributes(_composed([agent], {agent.pk: composition}))
    closing = (s.valid_until for s in states if s.valid_until is not None)
    due = min((at for at in closing if at > now), default=None)
    return ComposedNow(composition, due, len(states))


def _composed(agents: Sequence[Agent], composed: dict[int, Composition]) -> Attributes:
    """A lens.compose span's attributes: the agent and its prompt's identity when one was
    composed; the team when several of one team were (a list page)."""
    if len(agents) == 1:
        return {**agent_attributes(agents[0]), **traced_prompt(composed[agents[0].pk])}
    if agents and len({agent.team_id for agent in agents}) == 1:
        return {TEAM: agents[0].team.slug}
    return {}


def traced_prompt(composition: Composition) -> Attributes:
    """What a span says of a composed prompt: its SHA-256 (as a delivery records it)
    and its token count, never its text."""
    return {
        PROMPT_SHA256: sha256_hex(composition.prompt.text),
        PROMPT_TOKENS: composition.tokens.total,
    }


def compose_configs(agent: Agent, configs: Sequence[AgentConfig]) -> list[Composition]:
    """``agent``'s memories as they are now, composed with each of ``configs`` in place of
    its stored declarations (a revision's, a proposal's), reading the memories once."""
    memories = memories_of([agent])[agent.pk]
    return [memories.compose(config) for config in configs]


def prompt_texts(agent: Agent, configs: Sequence[AgentConfig]) -> list[str]:
    """The prompts ``compose_configs`` gives for ``configs``, as their text alone: no
    routing report (so no promotion states read) and no token counted."""
    placed = placed_records([agent.pk]).of(agent.pk)
    now = timezone.now()
    texts = []
    for config in configs:
        background, _fold = apply_memory_overlay(
            config.background,
            placed,
            get_spec(config.routing_spec),
            settings.MEMORY_OVERLAY_BUDGET_CHARS,
            now=now,
        )
        texts.append(render_text(config, background))
    return texts


@dataclass(frozen=True)
class Memories:
    """What composing reads of one agent's memories as they are now, read once so that
    several configs (revisions, proposals) compose from the same memories."""

    agent: Agent
    placed: list[PlacedRecord]  # the approved, placed records the fold may compose
    states: list[PromotionState]
    unreadable: set[str]
    # When they were read: the time validity windows are judged at.
    now: datetime

    def compose(self, config: AgentConfig) -> Composition:
        """The agent composed with ``config`` in place of its stored declarations."""
        return compose_from(
            self.agent, self.placed, self.states, self.unreadable, config, now=self.now
        )


def memories_of(agents: Sequence[Agent]) -> dict[int, Memories]:
    """The memories of ``agents``, by agent id: two queries however many agents."""
    ids = [agent.pk for agent in agents]
    if not ids:
        return {}
    placed = placed_records(ids)
    states = promotion_states(ids)
    now = timezone.now()
    return {
        agent.pk: Memories(
            agent,
            placed.of(agent.pk),
            states.get(agent.pk, []),
            placed.unreadable.get(agent.pk, set()),
            now,
        )
        for agent in agents
    }


def compose_from(
    agent: Agent,
    placed: list[PlacedRecord],
    states: list[PromotionState],
    unreadable: set[str],
    config: AgentConfig | None = None,
    *,
    now: datetime,
) -> Composition:
    """``agent`` composed from what was read of it: its approved placed records, every
    record's promotion state, the approved rows that did not read, and its declarations
    (``config``; its stored ones when None), at ``now`` (validity windows close by it)."""
    if config is None:
        config = config_of(agent)
    spec = get_spec(config.routing_spec)
    background, fold = apply_memory_overlay(
        config.background, placed, spec, settings.MEMORY_OVERLAY_BUDGET_CHARS, now=now
    )
    prompt = Prompt(sections=render_sections(config, background))
    return Composition(
        agent=agent.slug,
        spec=SpecRef(key=spec.key, version=spec.version) if spec is not None else None,
        background=background,
        prompt=prompt,
        report=routing_report(states, fold, unreadable, now),
        counts=Counts.of(config.background, background),
        tokens=PromptTokens.of(prompt),
    )


@dataclass(frozen=True)
class RecallFold:
    """What recall takes from the agent's Background as composed now (one fold)."""

    composed_ids: frozenset[str]  # in the prompt: never recalled
    spilled: list[PlacedRecord]  # approved but left out by the budget, newest first


def recall_fold(agent: Agent, spill_limit: int, now: datetime | None = None) -> RecallFold:
    """The memories the agent's Background holds now and the newest ``spill_limit`` of
    those its budget left out: the fold alone, without the routing report (which would
    read every record's promotion state). Validity is judged at ``now`` (default: now).
    """
    placed = placed_records([agent.pk]).of(agent.pk)
    background, fold = apply_memory_overlay(
        config_of(agent).background,
        placed,
        get_spec(agent.routing_spec),
        settings.MEMORY_OVERLAY_BUDGET_CHARS,
        now=now or timezone.now(),
    )
    composed = frozenset(
        memory_id
        for section in background.sections
        for entry in section.entries
        for memory_id in entry.memory_ids
    )
    # Only `over-budget` spills: a memory the fold dropped for any other reason (an
    # address another memory won, a section now locked, a validity window that has
    # passed: `expired`) is out of the prompt on purpose, and recall must not bring it
    # back. Superseded and erased memories are not placed at all, so they never get here.
    over_budget = {drop.memory_id for drop in fold.drops if drop.reason == "over-budget"}
    # The newest ``spill_limit``, ties by id: a heap, not a sort of every record the
    # budget left out (an agent can have thousands; few lines fit the sub-budget).
    spilled = heapq.nsmallest(
        spill_limit,
        (record for record in placed if record.id in over_budget),
        key=lambda record: (-record.created_at.timestamp(), record.id),
    )
    return RecallFold(composed, spilled)


def summarise(composition: Composition) -> dict[str, object]:
    """The one-line facts the agents list shows: counts, then each memory once: in the
    prompt, pending, or dropped for any other reason (a pending memory is a drop too,
    so ``dropped`` leaves those out: the card adds the three up to every memory)."""
    by_reason = composition.report.stats.drops_by_reason
    pending = by_reason.get("awaiting-approval", 0)
    return {
        "counts": composition.counts,
        "pending": pending,
        "dropped": sum(by_reason.values()) - pending,
        "composed": composition.report.stats.composed,
    }
