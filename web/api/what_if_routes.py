"""``/api/agents/{slug}/what-if``: what a change would do before it is made (SPEC §18.2):
a new config, a decision on one memory, another order of the Background sections or
another routing spec, compared with the prompt now and replayed over the last
deliveries. It writes nothing; a change that would be refused gets the same error."""

from __future__ import annotations

from typing import Any

from ninja import Query, Router
from pydantic import BaseModel, ConfigDict, Field, StrictStr, model_validator

from lens.agents import get_agent
from memory.core.what_if import Change, OrderChange, SpecChange, WhatIf
from memory.what_if import (
    LAST_DEFAULT,
    LAST_MAX,
    config_change,
    decision_change,
    what_if,
)
from web.api.auth import ApiRequest, team_of
from web.costly import costly

router = Router(tags=["what-if"])

KINDS = ("config", "decide", "order", "spec")


class WhatIfParams(BaseModel):
    last: int = Field(LAST_DEFAULT, ge=1, le=LAST_MAX)


# An id longer than any record's is still asked about (and not found, 404, as deciding
# on it is), up to a bound that keeps a body small.
MEMORY_ID_MAX = 200


class DecideIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    memory_id: StrictStr = Field(min_length=1, max_length=MEMORY_ID_MAX)
    decision: StrictStr


class WhatIfIn(BaseModel):
    """Exactly one of the four changes. ``config`` is checked as storing it checks it
    (by the operation, so its errors carry the same codes as ``PUT``'s); ``spec`` may
    be null (no routing spec)."""

    model_config = ConfigDict(extra="forbid")

    config: dict[str, Any] | None = None
    decide: DecideIn | None = None
    order: list[StrictStr] | None = Field(None, max_length=1000)
    spec: StrictStr | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> WhatIfIn:
        given = [kind for kind in KINDS if kind in self.model_fields_set]
        if len(given) != 1:
            raise ValueError(f"give exactly one of {', '.join(KINDS)}")
        kind = given[0]
        if kind != "spec" and getattr(self, kind) is None:
            raise ValueError(f"{kind} must not be null")
        return self

    def change(self) -> Change:
        if "config" in self.model_fields_set and self.config is not None:
            return config_change(self.config)
        if self.decide is not None:
            return decision_change(self.decide.memory_id, self.decide.decision)
        if self.order is not None:
            return OrderChange(tuple(self.order))
        return SpecChange(self.spec)


class FiguresOut(BaseModel):
    tokens: int
    prompt_sha256: str


class FateOut(BaseModel):
    memory_id: str
    before: str
    after: str


class NowOut(BaseModel):
    before: FiguresOut
    after: FiguresOut
    diff: str
    memories: list[FateOut]


class ReplayOut(BaseModel):
    deliveries: int
    changed: int
    tokens_delta_mean: float | None
    prefix_tokens_mean_before: float | None
    prefix_tokens_mean_after: float | None


class WhatIfOut(BaseModel):
    now: NowOut
    replay: ReplayOut

    @classmethod
    def of(cls, found: WhatIf) -> WhatIfOut:
        now = found.now
        return cls(
            now=NowOut(
                before=FiguresOut(**vars(now.before)),
                after=FiguresOut(**vars(now.after)),
                diff=now.diff,
                memories=[FateOut(**vars(fate)) for fate in now.memories],
            ),
            replay=ReplayOut(**vars(found.replay)),
        )


@router.post("/{slug}/what-if", response=WhatIfOut)
@costly
def agent_what_if(
    request: ApiRequest, slug: str, body: WhatIfIn, params: Query[WhatIfParams]
) -> WhatIfOut:
    agent = get_agent(team_of(request), slug)
    return WhatIfOut.of(what_if(agent, body.change(), params.last))
