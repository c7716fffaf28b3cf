"""Routing cases and the routing eval (SPEC §18.1). Pure.

A routing case is a memory as the model might save it, named, with the section a person
expects it to land in (``None``: the spec should decline it). The eval routes each case
with the agent's current spec against its current declarations, through the same two
functions a save uses (``routing.evaluate``, ``outcome.route_outcome``), so a case's
``got`` is what saving it now would place.

``got`` is the section the spec places the case in when that section is declared, else
None with the reason: ``spec-declined`` (the spec returned no placement, or the agent
names no spec: a save then places nothing either) or ``undeclared-section``. A section
whose tier refuses memory (``locked``) still counts as placed there: the eval measures
where routing sends a memory, not whether promotion lets it in. A case placed in another
section than the one expected (or placed when it should be declined) fails with the
reason ``wrong-section``.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictStr

from lens.core.background import SECTION_ID_MAX, SECTION_ID_PATTERN
from lens.core.identity import bidi_problem
from memory.core.outcome import route_outcome
from memory.core.records import Content, Kind, NewLabel, Tags, forbidden_char
from memory.core.routing import RoutableRecord, RoutingContext, RoutingSpec, evaluate

CASES_MAX = 1_000
NAME_MAX = 64

FailReason = Literal["spec-declined", "undeclared-section", "wrong-section"]

# Each failure reason in words, for pages and the command.
FAIL_REASON_WORDS: Mapping[str, str] = {
    "spec-declined": "the spec declines it",
    "undeclared-section": "the spec places it in a section the agent does not declare",
    "wrong-section": "the spec places it in another section",
}


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a routing case, or None: 1 to 64 code points, not blank,
    no control character, line break or bidi control (a name is shown as a heading)."""
    if not 1 <= len(name) <= NAME_MAX:
        return f"name must be 1 to {NAME_MAX} code points, got {len(name)}"
    if not name.strip():
        return "name must not be blank"
    if (bad := forbidden_char(name)) is not None:
        return f"name must not contain control characters or line breaks (found U+{ord(bad):04X})"
    return bidi_problem(name, "name")


def _check_name(name: str) -> str:
    if (problem := name_problem(name)) is not None:
        raise ValueError(problem)
    return name


CaseName = Annotated[StrictStr, AfterValidator(_check_name)]
SectionId = Annotated[
    StrictStr, Field(min_length=1, max_length=SECTION_ID_MAX, pattern=SECTION_ID_PATTERN)
]


class Expect(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    section: SectionId | None = Field(
        description="The section the case should land in; null: the spec should decline it"
    )


class CaseInput(BaseModel):
    """One routing case as a person writes it: the memory validated exactly as a save
    validates it (SPEC §3.2: the same field types), a name and what is expected."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: CaseName
    kind: Kind
    content: Content
    tags: Tags = Field(default_factory=tuple)
    label: NewLabel = None
    expect: Expect

    def case(self) -> Case:
        return Case(
            self.name, self.kind, self.content, tuple(self.tags), self.label, self.expect.section
        )


@dataclass(frozen=True, slots=True)
class Case:
    """A stored routing case, as the eval reads it."""

    name: str
    kind: str
    content: str
    tags: tuple[str, ...]
    label: str | None
    expect: str | None

    def answer(self) -> dict[str, Any]:
        """As the API writes a case (the shape it is put with)."""
        return {
            "name": self.name,
            "kind": self.kind,
            "content": self.content,
            "tags": list(self.tags),
            "label": self.label,
            "expect": {"section": self.expect},
        }


def duplicate_names(names: Iterable[str]) -> list[str]:
    """Names given more than once, in first-repeat order (compared as written)."""
    seen: set[str] = set()
    repeated: dict[str, None] = {}
    for name in names:
        if name in seen:
            repeated[name] = None
        seen.add(name)
    return list(repeated)


def cases_sha256(cases: Sequence[Case]) -> str:
    """The SHA-256 of the cases' canonical JSON, in order: which cases a score was for."""
    text = json.dumps(
        [case.answer() for case in cases], sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Judged:
    case: Case
    got: str | None
    why: Literal["spec-declined", "undeclared-section"] | None  # why got is None

    @property
    def correct(self) -> bool:
        return self.got == self.case.expect

    @property
    def reason(self) -> FailReason | None:
        if self.correct:
            return None
        return self.why or "wrong-section"


def judge(spec: RoutingSpec | None, ctx: RoutingContext, case: Case) -> Judged:
    """Where saving ``case`` now would place it: the section, or None and why."""
    if spec is None:
        return Judged(case, None, "spec-declined")
    record = RoutableRecord(kind=case.kind, content=case.content, tags=case.tags, label=case.label)
    placement = evaluate(spec, record, ctx)
    reason = route_outcome(placement, ctx).reason
    if placement is None or reason in ("spec-declined", "undeclared-section"):
        return Judged(case, None, "undeclared-section" if placement else "spec-declined")
    return Judged(case, placement.section, None)


@dataclass(frozen=True, slots=True)
class SectionScore:
    section: str | None  # None: declined
    precision: float | None  # None when nothing was placed there
    recall: float | None  # None when no case expects it
    support: int  # cases that expect it


@dataclass(frozen=True, slots=True)
class Failure:
    name: str
    expected: str | None
    got: str | None
    reason: FailReason


@dataclass(frozen=True, slots=True)
class Cell:
    expected: str | None
    got: str | None
    count: int


@dataclass(frozen=True, slots=True)
class RoutingEval:
    spec: str | None
    spec_version: str | None
    cases: int
    correct: int
    sections: tuple[SectionScore, ...]
    failures: tuple[Failure, ...]
    confusion: tuple[Cell, ...]  # every (expected, got) pair that occurs, with its count

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.cases if self.cases else None

    def answer(self) -> dict[str, Any]:
        """As the API answers it (SPEC §18.1, with the confusion beside)."""
        return {
            "spec": self.spec,
            "spec_version": self.spec_version,
            "cases": self.cases,
            "correct": self.correct,
            "accuracy": self.accuracy,
            "sections": [vars_of(score) for score in self.sections],
            "failures": [vars_of(failure) for failure in self.failures],
            "confusion": [vars_of(cell) for cell in self.confusion],
        }


def vars_of(value: SectionScore | Failure | Cell) -> dict[str, Any]:
    return {name: getattr(value, name) for name in value.__slots__}


def label_order(labels: Iterable[str | None], ctx: RoutingContext) -> list[str | None]:
    """Declared sections in their order, then other ids in plain string order, then
    None (declined) last."""
    declared = {section.id: i for i, section in enumerate(ctx.sections)}
    unique = set(labels)
    named = sorted(
        (label for label in unique if label is not None),
        key=lambda label: (declared.get(label, len(declared)), label),
    )
    return [*named, *([None] if None in unique else [])]


def evaluate_cases(
    spec: RoutingSpec | None, ctx: RoutingContext, cases: Sequence[Case]
) -> RoutingEval:
    """Route every case and score the spec: accuracy, per-section precision and recall,
    the failures in the cases' order, and the confusion between sections."""
    judged = [judge(spec, ctx, case) for case in cases]
    pairs = Counter((j.case.expect, j.got) for j in judged)
    expected = Counter(j.case.expect for j in judged)
    placed = Counter(j.got for j in judged)
    order = label_order([*expected, *placed], ctx)
    rank = {label: i for i, label in enumerate(order)}
    sections = tuple(
        SectionScore(
            section=label,
            precision=pairs[label, label] / placed[label] if placed[label] else None,
            recall=pairs[label, label] / expected[label] if expected[label] else None,
            support=expected[label],
        )
        for label in order
    )
    failures = tuple(
        Failure(j.case.name, j.case.expect, j.got, reason)
        for j in judged
        if (reason := j.reason) is not None
    )
    confusion = tuple(
        Cell(e, g, n)
        for (e, g), n in sorted(
            pairs.items(), key=lambda item: (rank[item[0][0]], rank[item[0][1]])
        )
    )
    return RoutingEval(
        spec=spec.key if spec is not None else None,
        spec_version=spec.version if spec is not None else None,
        cases=len(judged),
        correct=sum(1 for j in judged if j.correct),
        sections=sections,
        failures=failures,
        confusion=confusion,
    )
