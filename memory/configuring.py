"""Operations on an agent's configuration that involve memory: storing a config (it
names a routing spec) and applying a preset (a spec plus the sections it expects).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.db.models import Max

from lens.actors import SYSTEM, Actor
from lens.agents import check_slug, config_of, with_config, write_config
from lens.core.config import AgentConfig
from lens.models import Agent, Proposal, ProposalStatus, Revision, SectionDeclaration, Team, Via
from lens.proposals import (
    Recorded,
    decide,
    lock_for_decision,
    proposed_config,
    start_change,
)
from lens.revisions import (
    RevisionConflict,
    current_number,
    get_revision,
    newest_revision,
    record_revision,
    stale_reason,
    stored_config,
)
from memory.core.presets import Preset
from memory.registry import check_spec_key


@dataclass(frozen=True)
class Stored:
    """What storing a config left: the agent, whether it was created, its config as it
    now reads and the number of its newest revision, all read in the change's
    transaction (so none of them can be a later writer's)."""

    agent: Agent
    created: bool
    config: AgentConfig
    revision: int
    recorded: Revision | None  # None: the config was already this one, or is proposed
    proposal: Proposal | None = None  # the agent is protected: the change waits in it


def store_agent(
    team: Team,
    slug: str,
    config: AgentConfig,
    *,
    actor: Actor = SYSTEM,
    via: Via = Via.API,
    if_revision: int | None = None,
) -> tuple[Agent, bool]:
    """Create or replace ``team``'s agent ``slug`` with ``config``, all or nothing, and
    record the revision it makes (none when nothing changed). Returns the agent and
    whether it was created.

    Raises InvalidSlug or UnknownRoutingSpec, or RevisionConflict when ``if_revision``
    is not the agent's newest revision (0: the agent must not exist yet), having
    written nothing. On a protected agent nothing changes: the change is proposed
    (``store_config`` says which proposal).
    """
    stored = store_config(team, slug, config, actor=actor, via=via, if_revision=if_revision)
    return stored.agent, stored.created


@transaction.atomic
def store_config(
    team: Team,
    slug: str,
    config: AgentConfig,
    *,
    actor: Actor = SYSTEM,
    via: Via = Via.API,
    if_revision: int | None = None,
) -> Stored:
    """``store_agent``, answering with the config as stored and its revision number as
    well (what ``PUT /api/agents/{slug}`` answers), so they need not be read again."""
    check_slug(slug)
    check_spec_key(config.routing_spec)
    existing = Agent.objects.select_for_update().filter(team=team, slug=slug).first()
    if if_revision is not None:
        current = current_number(existing) if existing is not None else 0
        if current != if_revision:
            raise RevisionConflict(if_revision, current)
    changing = start_change(existing, locked=True)
    agent, created = write_config(team, slug, config)
    if if_revision == 0 and not created:
        # Another creator committed the agent while this one waited for its row: the
        # check above found no row to lock. Undone with this transaction.
        raise RevisionConflict(0, current_number(agent))
    stored = config_of(with_config(Agent.objects.filter(pk=agent.pk)).get())
    recorded = changing.record(agent, actor, via, config=stored)
    if recorded.proposal is not None or changing.protected:
        # Undone: the agent reads as before, at the revision it stays at.
        agent.refresh_from_db()
        revised = newest_revision(agent)
        assert revised is not None  # a protected agent has been stored before
        return Stored(agent, False, stored_config(revised), revised.number, None, recorded.proposal)
    number = recorded.revision.number if recorded.revision is not None else current_number(agent)
    return Stored(agent, created, stored, number, recorded.revision)


@transaction.atomic
def restore_revision(agent: Agent, number: int, actor: Actor) -> Stored:
    """Make ``agent``'s config revision ``number``'s again, as a new revision (``via``
    restore; ``recorded`` None when the config is already that one), or as a proposal
    on a protected agent.

    Raises RevisionNotFound, or UnknownRoutingSpec when the revision names a spec this
    deployment no longer offers, having written nothing.
    """
    config = stored_config(get_revision(agent, number))
    return store_config(agent.team, agent.slug, config, actor=actor, via=Via.RESTORE)


@transaction.atomic
def publish_proposal(team: Team, proposal_id: int, reviewer: Actor) -> Proposal:
    """A reviewer other than the proposer applies the proposal: its config becomes the
    agent's next revision (``via`` proposal, ``actor`` the proposer, ``approved_by``
    the reviewer). When the agent has moved past the revision it was made on, the
    proposal is marked stale instead and the agent is unchanged (the answer says which).

    Raises ProposalNotFound, ProposalDecided, TokenDecides, OwnProposal (the proposer,
    in a page or with a token of theirs), or UnknownRoutingSpec when
    its spec is no longer offered, having changed nothing.
    """
    proposal = lock_for_decision(team, proposal_id, reviewer)
    agent = proposal.agent
    current = current_number(agent)
    if current != proposal.base_revision:
        decide(proposal, ProposalStatus.STALE, None, stale_reason(current))
        return proposal
    config = proposed_config(proposal)
    check_spec_key(config.routing_spec)
    decide(proposal, ProposalStatus.PUBLISHED, reviewer, "")
    write_config(team, agent.slug, config)
    proposer = Actor(label=proposal.proposed_by, user=proposal.proposer)
    record_revision(agent, proposer, Via.PROPOSAL, approved_by=reviewer.label)
    return proposal


@dataclass(frozen=True)
class PresetApplied:
    added: list[str]  # the ids of the sections added (or proposed)
    recorded: Recorded


@transaction.atomic
def apply_preset(agent: Agent, spec: Preset, actor: Actor = SYSTEM) -> PresetApplied:
    """Select ``spec`` for ``agent`` and declare the preset's sections it lacks (on a
    protected agent: propose it).

    Sections the agent already declares are left as they are (their tiers are the
    developer's decision); new ones are appended.
    """
    # The agent's row first, as every writer of its declarations takes it: two presets
    # applied at once then add the missing sections once.
    changing = start_change(agent)
    existing = set(agent.sections.values_list("section_id", flat=True))
    position = (agent.sections.aggregate(top=Max("position"))["top"] or 0) + 1
    added = []
    for declaration in spec.sections:
        if declaration.id in existing:
            continue
        SectionDeclaration.objects.create(
            agent=agent,
            section_id=declaration.id,
            title=declaration.title,
            promotion=declaration.promotion,
            position=position,
        )
        position += 1
        added.append(declaration.id)
    agent.routing_spec = spec.key
    agent.save(update_fields=["routing_spec", "updated_at"])
    recorded = changing.record(agent, actor, Via.ADMIN)
    return PresetApplied(added, recorded)
