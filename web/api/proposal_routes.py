"""Proposals: changes to a protected agent waiting for a second person (SPEC §14). The
API reads them; publishing and rejecting are a reviewer's, on the approvals page (a
token never decides one)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ninja import Query, Router
from ninja.params.functions import Path
from pydantic import BaseModel, Field

from lens.agents import get_agent
from lens.core.config import AgentConfig
from lens.models import Proposal, ProposalStatus
from lens.proposals import get_proposal, proposals_of, proposed_config
from web.api.auth import ApiRequest, team_of
from web.api.params import INT_MAX


class ProposalOut(BaseModel):
    proposal_id: int
    agent: str
    base_revision: int
    proposed_by: str
    created_at: datetime
    summary: list[dict[str, Any]]
    status: str
    decided_by: str | None
    decided_at: datetime | None
    reason: str
    config: AgentConfig

    @classmethod
    def of(cls, row: Proposal, slug: str) -> ProposalOut:
        return cls(
            proposal_id=row.pk,
            agent=slug,
            base_revision=row.base_revision,
            proposed_by=row.proposed_by,
            created_at=row.created_at,
            summary=row.summary,
            status=row.status,
            decided_by=row.decided_by,
            decided_at=row.decided_at,
            reason=row.reason,
            config=proposed_config(row),
        )


class ProposalList(BaseModel):
    proposals: list[ProposalOut]
    total: int
    limit: int
    offset: int
    next_offset: int | None


class ProposalParams(BaseModel):
    status: ProposalStatus | None = None
    # 1–200 as every list's (SPEC §8); each proposal carries its whole config, so a page
    # is 20 unless asked for more.
    limit: int = Field(20, ge=1, le=200)
    offset: int = Field(0, ge=0, le=INT_MAX)


agent_proposals = Router(tags=["proposals"])
proposals = Router(tags=["proposals"])


@agent_proposals.get("/{slug}/proposals", response=ProposalList)
def list_proposals(request: ApiRequest, slug: str, params: Query[ProposalParams]) -> ProposalList:
    """Newest first, of one status or all."""
    agent = get_agent(team_of(request), slug, full=False)
    found = proposals_of(agent, params.status)
    total = found.count()
    rows = list(found.select_related("config")[params.offset : params.offset + params.limit])
    after = params.offset + len(rows)
    return ProposalList(
        proposals=[ProposalOut.of(row, agent.slug) for row in rows],
        total=total,
        limit=params.limit,
        offset=params.offset,
        next_offset=after if after < total else None,
    )


@proposals.get("/{proposal_id}", response=ProposalOut)
def read_proposal(
    request: ApiRequest, proposal_id: int = Path(..., ge=0, le=INT_MAX)
) -> ProposalOut:
    found = get_proposal(team_of(request), proposal_id)
    return ProposalOut.of(found, found.agent.slug)
