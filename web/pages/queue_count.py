"""How much waits for a reviewer in a team: the number the navigation's Approvals badge
shows, and the queue's htmx answers refresh out of band."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce

from lens.models import Proposal, ProposalStatus, Team
from memory.models import Promotion, PromotionStatus


def _counted(rows: QuerySet[Any]) -> Coalesce:
    """``rows`` of the outer team, counted in a subquery (0 for none)."""
    counted = rows.order_by().values("agent__team").annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)


def queue_count(team: Team) -> int:
    """Memories waiting for approval plus proposed changes waiting to be published or
    rejected: both are the queue's work. One query, as the memories' count alone was
    (every page's top bar shows it)."""
    # Earning memories (SPEC §19.1) wait for sightings, not for a person: not counted.
    memories = Promotion.objects.filter(
        agent__team=OuterRef("pk"), status=PromotionStatus.PENDING
    ).exclude(reason="earning")
    proposals = Proposal.objects.filter(agent__team=OuterRef("pk"), status=ProposalStatus.PENDING)
    found = (
        Team.objects.filter(pk=team.pk)
        .annotate(memories=_counted(memories), proposals=_counted(proposals))
        .values_list("memories", "proposals")
        .first()
    )
    return 0 if found is None else int(found[0]) + int(found[1])
