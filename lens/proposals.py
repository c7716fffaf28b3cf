"""Proposals: changes to a protected agent, waiting for a second person (SPEC §14).

Every path that changes an agent's declarations does so between ``start_change`` and
``Changing.record``: on an unprotected agent the change stays and its revision is
written; on a protected one the change is undone (to a savepoint taken at the start)
and the config it would have left is kept as a pending proposal instead. So the admin,
the API and a restore propose exactly what they would have applied, through the same
writes. Whether the agent is protected is read before the change: turning protection
off is itself proposed, turning it on takes effect at once.

Publishing writes the config (``memory.configuring.publish_proposal``, which checks the
routing spec); rejecting and withdrawing change only the proposal. Who may decide is
checked once, here (``lock_for_decision``), by every path that decides: a person, never
a token, and never the proposal's proposer, whether they proposed it in a page or with
an API token of theirs (SPEC §14 "Whose token").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Count, QuerySet
from django.utils import timezone

from lens.actors import Actor
from lens.agents import config_of, with_config
from lens.audit import append_one
from lens.core.config import AgentConfig
from lens.core.errors import DomainError
from lens.core.revisions import canonical_config, config_sha256, summarise
from lens.models import Agent, Proposal, ProposalStatus, Revision, Team, Via
from lens.revisions import (
    keep_config,
    newest_revision,
    proposal_entry,
    record_revision,
    remember_parsed,
    stored_config,
)

# A reviewer's reason for a rejection, in code points.
REASON_MAX = 2000


class ProposalNotFound(DomainError):
    code = "proposal_not_found"


class OwnProposal(DomainError):
    """Four eyes: the person who proposed a change does not decide it."""

    code = "own_proposal"


class TokenDecides(DomainError):
    """Tokens never publish (SPEC §14): a decision is a person's, made in the pages."""

    code = "token_decides"


class NotProposer(DomainError):
    """Only the person who proposed a change withdraws it."""

    code = "not_proposer"


class ProposalDecided(DomainError):
    code = "proposal_decided"

    def __init__(self, proposal: Proposal) -> None:
        super().__init__(
            f"Proposal {proposal.pk} is {proposal.status} already: nothing was changed.",
            status=proposal.status,
        )


class InvalidReason(DomainError):
    code = "invalid_request"


@dataclass(frozen=True)
class Recorded:
    """What a change left: the revision it wrote, or the proposal it became (both None:
    it changed nothing)."""

    revision: Revision | None = None
    proposal: Proposal | None = None


class Changing:
    """A change of one agent's declarations in progress (``start_change``)."""

    def __init__(self, protected: bool, locked: bool = True) -> None:
        self.protected = protected
        # Whether this transaction holds the agent's row lock (not yet when the agent
        # is being created: ``record_revision`` takes it then).
        self._locked = locked
        self._savepoint = transaction.savepoint() if protected else None

    def record(
        self,
        agent: Agent,
        actor: Actor,
        via: Via,
        *,
        config: AgentConfig | None = None,
    ) -> Recorded:
        """Write the change's revision, or undo the change and propose it.

        ``config`` is the agent's config as the change left it (read from the rows when
        not given).
        """
        if config is None:
            config = config_of(with_config(Agent.objects.filter(pk=agent.pk)).get())
        if self._savepoint is None:
            return Recorded(
                revision=record_revision(agent, actor, via, config=config, locked=self._locked)
            )
        transaction.savepoint_rollback(self._savepoint)
        self._savepoint = None
        return Recorded(proposal=propose(agent, actor, via, config))


def start_change(agent: Agent | None, *, locked: bool = False) -> Changing:
    """Begin a change of ``agent``'s declarations (None: an agent being created, which
    takes effect at once) in the caller's transaction. Locks the agent's row, as every
    writer of its declarations does, so its protection cannot change meanwhile;
    ``locked``: the caller read ``agent`` FOR UPDATE in this transaction already."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("a change of declarations runs in a transaction")
    if agent is None or agent.pk is None:
        return Changing(protected=False, locked=False)
    if locked:
        return Changing(protected=agent.protected)
    row = Agent.objects.select_for_update().only("pk", "protected").get(pk=agent.pk)
    return Changing(protected=row.protected)


def propose(agent: Agent, actor: Actor, via: Via, config: AgentConfig) -> Proposal | None:
    """Keep ``config`` as a pending proposal for ``agent``, made on its newest revision;
    None when it is that revision's config already (a change of nothing)."""
    text = canonical_config(config)
    digest = config_sha256(text)
    newest = newest_revision(agent)
    if newest is not None and newest.config_id == digest:
        return None
    keep_config(digest, text)
    remember_parsed(digest, text, config)
    before = stored_config(newest) if newest is not None else None
    user = actor.user if actor.user is not None and actor.user.is_authenticated else None
    proposal = Proposal.objects.create(
        agent=agent,
        base_revision=newest.number if newest is not None else 0,
        proposed_by=actor.label,
        proposer=user,
        token=actor.token,
        via=via,
        created_at=timezone.now(),
        config_id=digest,
        summary=[change.as_json() for change in summarise(before, config)],
    )
    append_one(
        agent.team_id,
        actor,
        proposal_entry(
            "proposal.created",
            agent,
            proposal.pk,
            base_revision=proposal.base_revision,
            via=via,
            config_sha256=digest,
            changes=len(proposal.summary),
        ),
    )
    return proposal


def proposals_of(agent: Agent, status: str | None = None) -> QuerySet[Proposal]:
    """``agent``'s proposals, newest first, of one status or all."""
    found = Proposal.objects.filter(agent=agent)
    if status:
        found = found.filter(status=status)
    return found.order_by("-id")


def pending_proposals(team: Team, agent_slug: str = "") -> QuerySet[Proposal]:
    """``team``'s proposals waiting for a decision, oldest first (as the queue's memories)."""
    found = Proposal.objects.filter(agent__team=team, status=ProposalStatus.PENDING)
    if agent_slug:
        found = found.filter(agent__slug=agent_slug)
    return found.select_related("agent", "config", "token").order_by("id")


def pending_counts(agents: Sequence[Agent]) -> dict[int, int]:
    """How many proposals wait for each of ``agents`` that has any, by agent id: one
    query (none for no agents)."""
    if not agents:
        return {}
    rows = (
        Proposal.objects.filter(agent__in=list(agents), status=ProposalStatus.PENDING)
        .order_by()
        .values_list("agent_id")
        .annotate(waiting=Count("pk"))
    )
    return dict(rows)


def get_proposal(team: Team, proposal_id: int) -> Proposal:
    """``team``'s proposal ``proposal_id``, with its agent and config; another team's is
    not found, as an unknown one."""
    found = (
        Proposal.objects.filter(pk=proposal_id, agent__team=team)
        .select_related("agent", "agent__team", "config", "token")
        .first()
    )
    if found is None:
        raise ProposalNotFound(f"No proposal {proposal_id} in this team.")
    return found


def proposed_config(proposal: Proposal) -> AgentConfig:
    """The whole config ``proposal`` would leave."""
    return stored_config(proposal)


def is_proposer(proposal: Proposal, actor: Actor) -> bool:
    """Whether ``actor`` is the person who proposed ``proposal``: in a page, or with an
    API token of theirs (the proposal records them as its proposer, and the token)."""
    if actor.user is None or actor.user.pk is None:
        return False
    if proposal.proposer_id == actor.user.pk:
        return True
    # The proposer column is the person; the token's person is the same one. Read both,
    # so that the check stands on the token too.
    token = proposal.token if proposal.token_id is not None else None
    return token is not None and token.user_id == actor.user.pk


def lock_pending(team: Team, proposal_id: int, actor: Actor) -> Proposal:
    """``team``'s proposal ``proposal_id``, its agent's row locked (the lock every change
    of the agent takes, so decisions and changes are ordered), still pending. Raises
    ProposalNotFound or ProposalDecided, having changed nothing."""
    found = get_proposal(team, proposal_id)
    Agent.objects.select_for_update().only("pk").get(pk=found.agent_id)
    found.refresh_from_db(fields=["status", "decided_by", "decided_at", "reason"])
    if found.status != ProposalStatus.PENDING:
        raise ProposalDecided(found)
    return found


def check_decider(proposal: Proposal, actor: Actor) -> None:
    """Four eyes (SPEC §14): a person decides, never a token (theirs or a service's),
    and never the person who proposed the change, by whatever path it was proposed.
    Raises TokenDecides or OwnProposal."""
    if actor.token is not None or actor.user is None:
        raise TokenDecides(
            "A proposal is published or rejected by a reviewer in the pages, never with an "
            "API token: nothing was changed."
        )
    if is_proposer(proposal, actor):
        raise OwnProposal(
            f"You proposed this change: another reviewer of team {proposal.agent.team.slug} "
            "publishes or rejects it. Nothing was changed."
        )


def lock_for_decision(team: Team, proposal_id: int, reviewer: Actor) -> Proposal:
    """``lock_pending``, then ``check_decider``: what every path that publishes or
    rejects a proposal goes through, so that none can skip the four-eyes check. Raises
    ProposalNotFound, ProposalDecided, TokenDecides or OwnProposal, having changed
    nothing."""
    proposal = lock_pending(team, proposal_id, reviewer)
    check_decider(proposal, reviewer)
    return proposal


def decide(proposal: Proposal, status: ProposalStatus, actor: Actor | None, reason: str) -> None:
    """Close ``proposal`` (locked and pending) with ``status``; ``actor`` None: the
    system (a stale one)."""
    proposal.status = status
    proposal.decided_by = actor.label[:150] if actor is not None else None
    proposal.decided_at = timezone.now()
    proposal.reason = reason
    proposal.save(update_fields=["status", "decided_by", "decided_at", "reason"])
    append_one(
        proposal.agent.team_id,
        actor or "system",
        # The reason is a person's words: the event holds its length, not its text.
        proposal_entry(f"proposal.{status}", proposal.agent, proposal.pk, reason_chars=len(reason)),
    )


def _checked_reason(reason: str) -> str:
    reason = reason.strip()
    if len(reason) > REASON_MAX:
        raise InvalidReason(f"A reason is at most {REASON_MAX} characters ({len(reason)} given).")
    return reason


@transaction.atomic
def reject_proposal(team: Team, proposal_id: int, reviewer: Actor, reason: str = "") -> Proposal:
    """A reviewer (not the proposer) turns the proposal down; the agent is unchanged."""
    reason = _checked_reason(reason)
    proposal = lock_for_decision(team, proposal_id, reviewer)
    decide(proposal, ProposalStatus.REJECTED, reviewer, reason)
    return proposal


@transaction.atomic
def withdraw_proposal(team: Team, proposal_id: int, proposer: Actor) -> Proposal:
    """The proposer takes their own proposal back."""
    proposal = lock_pending(team, proposal_id, proposer)
    if not is_proposer(proposal, proposer):
        raise NotProposer(f"Only {proposal.proposed_by} can withdraw proposal {proposal.pk}.")
    decide(proposal, ProposalStatus.WITHDRAWN, proposer, "")
    return proposal
