"""``/api/agents/{slug}/revisions``: an agent's history of declarations (SPEC §14): list,
read one with its config, compare two, restore one."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ninja import Query, Router, Status
from ninja.params.functions import Path
from pydantic import BaseModel, Field

from lens.actors import Actor
from lens.agents import get_agent
from lens.core.config import AgentConfig
from lens.models import Revision
from lens.revisions import get_revision, newest_revision, revision_page, stored_config
from memory.configuring import restore_revision
from memory.revision_diffs import revision_diff
from web.answers.proposal_answers import ProposedOut
from web.api.auth import ApiRequest, team_of, token_of
from web.api.params import INT_MAX
from web.costly import costly

router = Router(tags=["revisions"])


class RevisionOut(BaseModel):
    revision: int
    created_at: datetime
    actor: str
    via: str
    approved_by: str | None
    config_sha256: str
    summary: list[dict[str, Any]]

    @classmethod
    def of(cls, row: Revision) -> RevisionOut:
        return cls(
            revision=row.number,
            created_at=row.created_at,
            actor=row.actor,
            via=row.via,
            approved_by=row.approved_by,
            config_sha256=row.config_id,
            summary=row.summary,
        )


class RevisionWithConfig(RevisionOut):
    config: AgentConfig


class RevisionList(BaseModel):
    revisions: list[RevisionOut]
    total: int
    limit: int
    offset: int
    next_offset: int | None


class PageParams(BaseModel):
    limit: int = Field(50, ge=1, le=200)
    offset: int = Field(0, ge=0, le=INT_MAX)


class DiffParams(BaseModel):
    against: int | None = Field(None, ge=0, le=INT_MAX)


class TokensOut(BaseModel):
    from_: int = Field(serialization_alias="from")
    to: int


class RevisionDiffOut(BaseModel):
    from_: int = Field(serialization_alias="from")
    to: int
    summary: list[dict[str, Any]]
    config_diff: str
    prompt_diff: str
    tokens: TokensOut


# 0 is a number no revision has: 404, as any unknown one.
Number = Path(..., ge=0, le=INT_MAX)


@router.get("/{slug}/revisions", response=RevisionList, by_alias=True)
def list_revisions(request: ApiRequest, slug: str, params: Query[PageParams]) -> RevisionList:
    """Newest first."""
    agent = get_agent(team_of(request), slug, full=False)
    page = revision_page(agent, params.limit, params.offset)
    after = params.offset + len(page.revisions)
    return RevisionList(
        revisions=[RevisionOut.of(row) for row in page.revisions],
        total=page.total,
        limit=params.limit,
        offset=params.offset,
        next_offset=after if after < page.total else None,
    )


@router.get("/{slug}/revisions/{n}", response=RevisionWithConfig)
def read_revision(request: ApiRequest, slug: str, n: int = Number) -> RevisionWithConfig:
    row = get_revision(get_agent(team_of(request), slug, full=False), n)
    return RevisionWithConfig(**RevisionOut.of(row).model_dump(), config=stored_config(row))


@router.get("/{slug}/revisions/{n}/diff", response=RevisionDiffOut, by_alias=True)
@costly
def diff_revisions(
    request: ApiRequest, slug: str, params: Query[DiffParams], n: int = Number
) -> RevisionDiffOut:
    """Against ``against`` (default: the revision before; revision 1 against nothing)."""
    # The revisions' configs are composed, not the agent's own: it is not loaded.
    found = revision_diff(get_agent(team_of(request), slug, full=False), n, params.against)
    return RevisionDiffOut(
        from_=found.from_number,
        to=found.to_number,
        summary=found.summary,
        config_diff=found.config_diff,
        prompt_diff=found.prompt_diff,
        tokens=TokensOut(from_=found.tokens_from, to=found.tokens_to),
    )


@router.post(
    "/{slug}/revisions/{n}/restore",
    response={200: RevisionOut, 201: RevisionOut, 202: ProposedOut},
)
def restore(request: ApiRequest, slug: str, n: int = Number) -> Status[RevisionOut | ProposedOut]:
    """201 with the new revision; 200 with the newest when the config already is that
    one; 202 when the agent is protected and the restore was proposed."""
    agent = get_agent(team_of(request), slug)
    restored = restore_revision(agent, n, Actor.for_token(token_of(request)))
    if restored.proposal is not None:
        return Status(202, ProposedOut.of(restored.proposal))
    if restored.recorded is not None:
        return Status(201, RevisionOut.of(restored.recorded))
    newest = newest_revision(agent)
    assert newest is not None  # revision n exists, so the agent has a newest one
    return Status(200, RevisionOut.of(newest))
