"""``/api/agents/{slug}/routing-cases`` and ``/routing-eval`` (SPEC §18.1): a person's
cases for the agent's routing, replaced as a whole, and the current spec's score on
them. For people and CI, never for the model (SPEC §5.1: no MCP tool reads these)."""

from __future__ import annotations

from typing import Literal

from ninja import Router
from pydantic import BaseModel, ConfigDict, Field

from lens.actors import Actor
from lens.agents import get_agent
from memory.core.routing_eval import CaseInput, Expect
from memory.routing_cases import eval_agent, replace_cases, stored_cases
from web.api.auth import ApiRequest, team_of, token_of

router = Router(tags=["routing"])


class CasesIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # At most 1,000: the operation says so with its own code (too_many_routing_cases).
    cases: list[CaseInput]


class CasesPut(BaseModel):
    cases: int


class CaseOut(BaseModel):
    name: str
    kind: str
    content: str
    tags: list[str]
    label: str | None
    expect: Expect


class CasesOut(BaseModel):
    cases: list[CaseOut]


class SectionScoreOut(BaseModel):
    section: str | None = Field(description="A section id, or null for declined")
    precision: float | None
    recall: float | None
    support: int


class FailureOut(BaseModel):
    name: str
    expected: str | None
    got: str | None
    reason: Literal["spec-declined", "undeclared-section", "wrong-section"]


class CellOut(BaseModel):
    expected: str | None
    got: str | None
    count: int


class EvalOut(BaseModel):
    spec: str | None
    spec_version: str | None
    cases: int
    correct: int
    accuracy: float | None = Field(description="0 to 1; null with no cases")
    sections: list[SectionScoreOut]
    failures: list[FailureOut]
    # Beyond SPEC §18.1's fields: every (expected, got) pair that occurs, with its count.
    confusion: list[CellOut]


@router.put("/{slug}/routing-cases", response=CasesPut)
def put_cases(request: ApiRequest, slug: str, body: CasesIn) -> CasesPut:
    """Replace the agent's routing cases (at most 1,000, names unique): all or nothing."""
    agent = get_agent(team_of(request), slug, full=False)
    return CasesPut(cases=replace_cases(agent, body.cases, Actor.for_token(token_of(request))))


@router.get("/{slug}/routing-cases", response=CasesOut)
def get_cases(request: ApiRequest, slug: str) -> CasesOut:
    agent = get_agent(team_of(request), slug, full=False)
    return CasesOut.model_validate({"cases": [case.answer() for case in stored_cases(agent)]})


@router.get("/{slug}/routing-eval", response=EvalOut)
def routing_eval(request: ApiRequest, slug: str) -> EvalOut:
    """The agent's current spec scored on its cases, judged against its current
    declarations. Writes nothing."""
    found = eval_agent(get_agent(team_of(request), slug, full=False))
    return EvalOut.model_validate(found.answer())
