"""Routing cases and the routing eval (SPEC §18.1): replace an agent's cases, add one,
list them, score the agent's current spec on them, and the recorded scores that show a
spec's score before and after its version changed.

Writing cases is one transaction with one audit event, ``routing_cases.changed``, and a
recorded score (the cases' score under the spec of the moment). Reading the eval writes
nothing. The model never sees any of this: routing is never taught (SPEC §5.1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Subquery
from django.utils import timezone
from pydantic import ValidationError

from lens.actors import Actor
from lens.audit import Entry, append
from lens.core.errors import DomainError, InvalidInput, invalid_input, pydantic_problems
from lens.models import Agent
from memory.core.routing import DeclaredSection, RoutingContext
from memory.core.routing_eval import (
    CASES_MAX,
    Case,
    CaseInput,
    RoutingEval,
    cases_sha256,
    duplicate_names,
    evaluate_cases,
)
from memory.models import RoutingCase, RoutingScore
from memory.registry import get_spec

CHANGED = "routing_cases.changed"


class TooManyCases(DomainError):
    code = "too_many_routing_cases"

    def __init__(self, given: int) -> None:
        super().__init__(
            f"An agent holds at most {CASES_MAX:,} routing cases; {given:,} were given.",
            limit=CASES_MAX,
            given=given,
        )


class DuplicateCaseName(DomainError):
    code = "duplicate_case_name"

    def __init__(self, names: Sequence[str]) -> None:
        shown = ", ".join(repr(name) for name in names[:5])
        super().__init__(
            f"Each routing case needs a name of its own; given more than once: {shown}.",
            names=list(names[:20]),
        )


def parse_cases(raw: Sequence[Mapping[str, Any]]) -> list[CaseInput]:
    """Cases from plain values (a bundle, a command), validated exactly as the API's
    body is: InvalidInput naming each problem as ``cases.<i>.<field>``."""
    if not isinstance(raw, Sequence) or isinstance(raw, str | bytes):
        raise InvalidInput("cases must be a list", errors=[{"loc": "cases", "message": "list"}])
    if len(raw) > CASES_MAX:
        raise TooManyCases(len(raw))
    parsed, problems = [], []
    for i, item in enumerate(raw):
        try:
            parsed.append(CaseInput.model_validate(item))
        except ValidationError as exc:
            problems += [(f"cases.{i}.{loc}", msg) for loc, msg in pydantic_problems(exc.errors())]
    if problems:
        raise invalid_input(problems)
    return parsed


def _checked(cases: Sequence[Case]) -> list[Case]:
    if len(cases) > CASES_MAX:
        raise TooManyCases(len(cases))
    if repeated := duplicate_names(case.name for case in cases):
        raise DuplicateCaseName(repeated)
    return list(cases)


def replace_cases(agent: Agent, cases: Sequence[CaseInput], actor: Actor) -> int:
    """Make ``cases`` the agent's routing cases, in order, or refuse and change nothing
    (TooManyCases, DuplicateCaseName). One transaction: the rows, the audit event and
    the score of the spec of the moment on them."""
    checked = _checked([case.case() for case in cases])
    with transaction.atomic():
        # The agent's row lock: two replacements of one agent's cases never interleave.
        locked = Agent.objects.select_for_update().get(pk=agent.pk)
        before = RoutingCase.objects.filter(agent=locked).count()
        RoutingCase.objects.filter(agent=locked).delete()
        _write(locked, checked, start=0)
        _changed(locked, actor, checked, before=before, how="replaced")
    return len(checked)


def import_cases(agent: Agent, cases: Sequence[CaseInput]) -> None:
    """A bundle's cases for the agent it creates, in the import's transaction. No event
    of their own: the import's one event (``agent.created``) counts them."""
    checked = _checked([case.case() for case in cases])
    _write(agent, checked, start=0)
    found = evaluate_cases(get_spec(agent.routing_spec), declared(agent), checked)
    record_score(agent, found, cases_sha256(checked))


def add_case(agent: Agent, case: CaseInput, actor: Actor) -> int:
    """Append one case after the agent's others (a memory's page, the admin), with the
    same checks and event as a replacement. Returns the number of cases now."""
    with transaction.atomic():
        locked = Agent.objects.select_for_update().get(pk=agent.pk)
        existing = stored_cases(locked)
        checked = _checked([*existing, case.case()])
        _write(locked, checked[-1:], start=len(existing))
        _changed(locked, actor, checked, before=len(existing), how="added")
    return len(checked)


def _write(agent: Agent, cases: Sequence[Case], start: int) -> None:
    RoutingCase.objects.bulk_create(
        RoutingCase(
            agent=agent,
            position=start + i,
            name=case.name,
            kind=case.kind,
            content=case.content,
            tags=list(case.tags),
            label=case.label,
            expect_section=case.expect,
        )
        for i, case in enumerate(cases)
    )


def _changed(agent: Agent, actor: Actor, cases: Sequence[Case], *, before: int, how: str) -> None:
    digest = cases_sha256(cases)
    append(
        agent.team_id,
        actor,
        [
            Entry(
                CHANGED,
                "agent",
                agent.slug,
                agent.slug,
                {"how": how, "before": before, "cases": len(cases), "cases_sha256": digest},
            )
        ],
    )
    found = evaluate_cases(get_spec(agent.routing_spec), declared(agent), cases)
    record_score(agent, found, digest)


def stored_cases(agent: Agent) -> list[Case]:
    """The agent's cases in order: one query, bounded by CASES_MAX."""
    rows = RoutingCase.objects.filter(agent=agent).order_by("position")
    fields = ("name", "kind", "content", "tags", "label", "expect_section")
    return [
        Case(name, kind, content, tuple(tags or ()), label, expect)
        for name, kind, content, tags, label, expect in rows.values_list(*fields)[:CASES_MAX]
    ]


def declared(agent: Agent) -> RoutingContext:
    """The agent's section declarations (never their entries): the prefetched ones when
    the agent was read with its config, else one query."""
    return RoutingContext(
        sections=tuple(
            DeclaredSection(id=row.section_id, title=row.title, promotion=row.promotion)
            for row in agent.sections.all()
        )
    )


def eval_agent(
    agent: Agent, cases: Sequence[Case] | None = None, ctx: RoutingContext | None = None
) -> RoutingEval:
    """The agent's current spec scored on its cases against its current declarations
    (``ctx`` when the caller has them already). Writes nothing."""
    found = stored_cases(agent) if cases is None else cases
    return evaluate_cases(
        get_spec(agent.routing_spec), ctx if ctx is not None else declared(agent), found
    )


def record_score(agent: Agent, found: RoutingEval, cases_digest: str) -> None:
    """Remember ``found``'s score (only for a spec with cases: nothing else compares)."""
    if found.spec is None or found.spec_version is None or not found.cases:
        return
    RoutingScore.objects.create(
        agent=agent,
        spec_key=found.spec,
        spec_version=found.spec_version,
        cases_sha256=cases_digest,
        correct=found.correct,
        cases=found.cases,
        recorded_at=timezone.now(),
    )


def score_and_record(agent: Agent) -> RoutingEval:
    """``eval_agent``, then its score recorded (``eval_routing``, the demo)."""
    cases = stored_cases(agent)
    found = eval_agent(agent, cases)
    record_score(agent, found, cases_sha256(cases))
    return found


@dataclass(frozen=True)
class Before:
    """The newest recorded score of the agent's spec under another version."""

    spec_version: str
    correct: int
    cases: int
    same_cases: bool  # recorded on the cases the agent holds now


@dataclass(frozen=True)
class Scored:
    """What the lens and the routing page show: the eval now, the cases it scored, and
    the spec's score before its version changed (when one was recorded)."""

    found: RoutingEval
    cases: list[Case]
    before: Before | None


def scored(agent: Agent, ctx: RoutingContext | None = None) -> Scored | None:
    """The agent's routing score now, or None when it has no cases: one query (the
    cases, each row carrying the spec's earlier score as subqueries the database runs
    once). An agent read with its config has its declarations loaded already; ``ctx``
    gives them when the caller has them otherwise (the composition of now)."""
    spec = get_spec(agent.routing_spec)
    rows = RoutingCase.objects.filter(agent=agent).order_by("position")
    fields = ["name", "kind", "content", "tags", "label", "expect_section"]
    if spec is not None:
        earlier = (
            RoutingScore.objects.filter(agent=agent, spec_key=spec.key)
            .exclude(spec_version=spec.version)
            .order_by("-recorded_at", "-id")
        )
        columns = ("spec_version", "correct", "cases", "cases_sha256")
        rows = rows.annotate(**{f"before_{c}": Subquery(earlier.values(c)[:1]) for c in columns})
        fields += [f"before_{c}" for c in columns]
    found = list(rows.values_list(*fields)[:CASES_MAX])
    if not found:
        return None
    cases = [Case(n, k, c, tuple(t or ()), lb, e) for n, k, c, t, lb, e, *_ in found]
    before = None
    if spec is not None and found[0][6] is not None:
        version, correct, total, digest = found[0][6:10]
        before = Before(version, correct, total, digest == cases_sha256(cases))
    return Scored(eval_agent(agent, cases, ctx), cases, before)
