"""Everything a reviewer reads before deciding a proposal (SPEC §14): what it changes in
words, the config diff, the diff of the prompts the two configs compose with the agent's
memories as they are now, the prompt's size in tokens before and after, and every memory
whose fate changes (``memory.core.fate_changes``).

A pending proposal is compared with the agent's newest revision, the one publishing
would replace (it is the proposal's base revision: a newer revision marks older
proposals stale). A decided one is compared with the revision it was made on, so its
page still shows what it proposed.

Several proposals are reviewed together in a fixed number of queries, whatever their
number and their agents' sizes: the approval queue shows a page of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import OuterRef, Q, Subquery

from lens.agents import config_of, with_config
from lens.core.config import AgentConfig
from lens.core.diffs import unified_diff
from lens.core.revisions import indented_config
from lens.models import Agent, Proposal, ProposalStatus, Revision
from lens.proposals import proposed_config
from lens.revisions import stored_config
from memory.composition import Memories, memories_of
from memory.core.composition import Composition
from memory.core.fate_changes import Fates, Side, fate_changes
from memory.registry import get_spec

# Fate changes put in words for one proposal; past this many they are only counted.
FATES_SHOWN = 100


@dataclass(frozen=True)
class ProposalReview:
    proposal: Proposal
    # The revision the proposal is compared with (0: the agent had none, and it is
    # compared with the declarations as stored).
    from_number: int
    from_label: str  # "revision 7"
    to_label: str  # "proposal 3"
    summary: list[dict[str, Any]]
    # Section titles by id, as either config has them (the newer winning), for the words.
    titles: dict[str, str]
    config_diff: str
    prompt_diff: str
    tokens_from: int
    tokens_to: int
    fates: Fates


def review_proposal(proposal: Proposal, limit: int = FATES_SHOWN) -> ProposalReview:
    """``proposal`` (read with its agent and config, as ``lens.proposals.get_proposal``
    reads it) against the revision it would replace."""
    return review_proposals([proposal], limit)[proposal.pk]


def review_proposals(
    proposals: Sequence[Proposal], limit: int = FATES_SHOWN
) -> dict[int, ProposalReview]:
    """Each of ``proposals`` (read with their agents and configs), by id: three queries
    however many there are, each agent's memories read once."""
    if not proposals:
        return {}
    compared = _compared_revisions(proposals)
    agents = list({proposal.agent_id: proposal.agent for proposal in proposals}.values())
    memories = memories_of(agents)
    composed: dict[tuple[int, str], Composition] = {}

    def composition(memories: Memories, digest: str, config: AgentConfig) -> Composition:
        # Proposals of one agent share the revision they are compared with: it is
        # composed once.
        key = (memories.agent.pk, digest)
        if key not in composed:
            composed[key] = memories.compose(config)
        return composed[key]

    found = {}
    for proposal in proposals:
        revision = compared.get(proposal.pk)
        if revision is not None:
            old, old_digest = stored_config(revision), revision.config_id
            from_number, from_label = revision.number, f"revision {revision.number}"
        else:
            # An agent whose declarations predate revisions: what is stored now.
            old = config_of(with_config(Agent.objects.filter(pk=proposal.agent_id)).get())
            old_digest, from_number, from_label = "", 0, "the stored declarations"
        new = proposed_config(proposal)
        to_label = f"proposal {proposal.pk}"
        mine = memories[proposal.agent_id]
        before = composition(mine, old_digest, old)
        after = composition(mine, proposal.config_id, new)
        titles = {section.id: section.title for section in old.background.sections}
        titles.update({section.id: section.title for section in new.background.sections})
        found[proposal.pk] = ProposalReview(
            proposal=proposal,
            from_number=from_number,
            from_label=from_label,
            to_label=to_label,
            summary=list(proposal.summary),
            titles=titles,
            config_diff=unified_diff(
                indented_config(old), indented_config(new), from_label, to_label
            ),
            prompt_diff=unified_diff(before.prompt.text, after.prompt.text, from_label, to_label),
            tokens_from=before.tokens.total,
            tokens_to=after.tokens.total,
            fates=fate_changes(
                Side(before, get_spec(old.routing_spec)),
                Side(after, get_spec(new.routing_spec)),
                mine.placed,
                agent=proposal.agent.slug,
                budget=settings.MEMORY_OVERLAY_BUDGET_CHARS,
                limit=limit,
            ),
        )
    return found


def _compared_revisions(proposals: Sequence[Proposal]) -> dict[int, Revision]:
    """The revision each proposal is compared with, by proposal id (one query): the
    agent's newest for a pending one, its base revision for a decided one."""
    pending = {p.agent_id for p in proposals if p.status == ProposalStatus.PENDING}
    newest = Revision.objects.filter(agent_id=OuterRef("agent_id")).order_by("-number")
    wanted = Q(agent_id__in=pending, number=Subquery(newest.values("number")[:1]))
    for proposal in proposals:
        if proposal.status != ProposalStatus.PENDING:
            wanted |= Q(agent_id=proposal.agent_id, number=proposal.base_revision)
    rows = Revision.objects.filter(wanted).select_related("config")
    by_agent: dict[int, dict[int, Revision]] = {}
    for row in rows:
        by_agent.setdefault(row.agent_id, {})[row.number] = row
    found = {}
    for proposal in proposals:
        numbers = by_agent.get(proposal.agent_id, {})
        if proposal.status == ProposalStatus.PENDING:
            revision = max(numbers.items())[1] if numbers else None
        else:
            revision = numbers.get(proposal.base_revision)
        if revision is not None:
            found[proposal.pk] = revision
    return found
