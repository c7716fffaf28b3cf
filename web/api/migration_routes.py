"""``/api/agents/{slug}/migration``: the placements the agent's current routing spec and
declarations would change, and applying that plan (SPEC §18.3).

Through the API a move into a guarded section waits for a person (``pending``): tokens
never approve. A migration never runs by itself.
"""

from __future__ import annotations

from typing import Literal

from ninja import Router
from pydantic import BaseModel, ConfigDict, Field

from lens.actors import Actor
from lens.agents import get_agent
from memory.core.migration import Move
from memory.migration import APPLY_MAX, apply_migration, migration_plan
from web.api.auth import ApiRequest, team_of, token_of

router = Router(tags=["migration"])


class AddressOut(BaseModel):
    section: str
    key: str


class MoveOut(BaseModel):
    memory_id: str
    from_: AddressOut | None = Field(serialization_alias="from")
    to: AddressOut | None
    tier: str | None
    outcome: Literal["approved", "pending", "declined", "conflict"]

    @classmethod
    def of(cls, move: Move, outcome: str | None = None) -> MoveOut:
        return cls(
            memory_id=move.memory_id,
            from_=None if move.source is None else AddressOut(**move.source.as_json()),
            to=None if move.target is None else AddressOut(**move.target.as_json()),
            tier=move.tier,
            outcome=outcome or move.outcome,
        )


class PlanOut(BaseModel):
    spec: str | None
    spec_version: str | None
    moves: list[MoveOut]
    plan_sha256: str


class ApplyIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    plan_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    memory_ids: list[str] | None = Field(None, min_length=1, max_length=APPLY_MAX)


class AppliedOut(BaseModel):
    moved: list[MoveOut]
    # The plan's moves that stayed: its conflicts, and those not chosen.
    stayed: list[MoveOut]
    plan_sha256: str


@router.get("/{slug}/migration", response=PlanOut, by_alias=True)
def agent_migration(request: ApiRequest, slug: str) -> PlanOut:
    found = migration_plan(get_agent(team_of(request), slug, full=False))
    return PlanOut(
        spec=found.spec_key or None,
        spec_version=found.spec_version or None,
        moves=[MoveOut.of(move) for move in found.moves],
        plan_sha256=found.sha256,
    )


@router.post("/{slug}/migration", response=AppliedOut, by_alias=True)
def apply_agent_migration(request: ApiRequest, slug: str, body: ApplyIn) -> AppliedOut:
    agent = get_agent(team_of(request), slug, full=False)
    applied = apply_migration(
        agent, body.plan_sha256, body.memory_ids, actor=Actor.for_token(token_of(request))
    )
    return AppliedOut(
        moved=[MoveOut.of(move, applied.outcomes[move.memory_id]) for move in applied.moved],
        stayed=[MoveOut.of(move) for move in applied.stayed],
        plan_sha256=migration_plan(agent).sha256,
    )
