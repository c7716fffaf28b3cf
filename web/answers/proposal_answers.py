"""The answer of a change that waits as a proposal (SPEC §14): ``PUT
/api/agents/{slug}`` and a revision's restore answer it with 202 when the agent is
protected."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from lens.models import Proposal


class ProposedOut(BaseModel):
    """The 202 answer of a change to a protected agent: nothing changed yet."""

    status: Literal["proposed"] = "proposed"
    proposal_id: int
    base_revision: int

    @classmethod
    def of(cls, proposal: Proposal) -> ProposedOut:
        return cls(proposal_id=proposal.pk, base_revision=proposal.base_revision)
