"""How much waits for a reviewer in a team: the number the navigation's Approvals badge
shows, and the queue's htmx answers refresh out of band."""

from __future__ import annotations

from typing import Any

from django.db.models import F, Func, IntegerField, QuerySet, Subquery

from lens.models import Agent, Proposal, ProposalStatus, Team
from memory.models import Promotion, PromotionStatus


def _counted(rows: QuerySet[Any]) -> Subquery:
    """``rows`` counted in a scalar subquery (no GROUP BY: one row, 0 for none)."""
    counted = rows.order_by().annotate(n=Func(F("pk"), function="COUNT")).values("n")
    return Subquery(counted, output_field=IntegerField())


def queue_count(team: Team) -> int:
    """Memories waiting for approval plus proposed changes waiting to be published or
    rejected: both are the queue's work. One query, as the memories' count alone was
    (every page's top bar shows it)."""
    # The team's agents by id, not a join on the team: each agent's pending rows are a
    # range of the (agent, status) index, so the badge reads this team's queue only,
    # whatever the size of every other team's.
    agents = Agent.objects.filter(team_id=team.pk).values("pk")
    # Earning memories (SPEC §19.1) wait for sightings, not for a person: not counted.
    memories = Promotion.objects.filter(
        agent_id__in=agents, status=PromotionStatus.PENDING
    ).exclude(reason="earning")
    proposals = Proposal.objects.filter(agent_id__in=agents, status=ProposalStatus.PENDING)
    found = (
        Team.objects.filter(pk=team.pk)
        .annotate(memories=_counted(memories), proposals=_counted(proposals))
        .values_list("memories", "proposals")
        .first()
    )
    return 0 if found is None else int(found[0] or 0) + int(found[1] or 0)
