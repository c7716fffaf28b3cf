"""The routing cases' operations (``memory.routing_cases``): replace and add, all or
nothing, one audit event each, a score recorded; the eval writes nothing; the score
before a spec's new version."""

from __future__ import annotations

from dataclasses import replace

import pytest

from lens.actors import SYSTEM
from lens.core.errors import InvalidInput
from lens.models import Agent, AuditEvent
from memory.core.presets import USER_BACKGROUND
from memory.core.routing_eval import CASES_MAX, CaseInput
from memory.models import RoutingCase, RoutingScore
from memory.routing_cases import (
    DuplicateCaseName,
    TooManyCases,
    add_case,
    eval_agent,
    parse_cases,
    replace_cases,
    score_and_record,
    scored,
    stored_cases,
)
from tests.api_calls import db_snapshot

pytestmark = pytest.mark.django_db


def case(name: str, kind: str = "profile", expect: str | None = "user_profile") -> CaseInput:
    return CaseInput.model_validate(
        {"name": name, "kind": kind, "content": f"{name}.", "expect": {"section": expect}}
    )


def test_replacing_writes_the_cases_in_order_with_one_event_and_a_score(wren: Agent) -> None:
    assert replace_cases(wren, [case("b"), case("a", "fact", None)], SYSTEM) == 2
    assert [c.name for c in stored_cases(wren)] == ["b", "a"]
    assert AuditEvent.objects.filter(action="routing_cases.changed").count() == 1
    score = RoutingScore.objects.get()
    assert (score.correct, score.cases, score.spec_version) == (2, 2, "1")


def test_a_refused_replacement_changes_nothing(wren: Agent) -> None:
    replace_cases(wren, [case("kept")], SYSTEM)
    before = db_snapshot()
    with pytest.raises(DuplicateCaseName):
        replace_cases(wren, [case("x"), case("x")], SYSTEM)
    with pytest.raises(TooManyCases):
        replace_cases(wren, [case(f"c{i}") for i in range(CASES_MAX + 1)], SYSTEM)
    assert db_snapshot() == before


def test_adding_appends_after_the_others_and_checks_the_name(wren: Agent) -> None:
    replace_cases(wren, [case("one")], SYSTEM)
    assert add_case(wren, case("two", "fact", None), SYSTEM) == 2
    assert list(RoutingCase.objects.filter(agent=wren).values_list("name", "position")) == [
        ("one", 0),
        ("two", 1),
    ]
    before = db_snapshot()
    with pytest.raises(DuplicateCaseName):
        add_case(wren, case("one"), SYSTEM)
    assert db_snapshot() == before


def test_adding_the_1001st_case_is_refused(wren: Agent) -> None:
    replace_cases(wren, [case(f"c{i}") for i in range(CASES_MAX)], SYSTEM)
    with pytest.raises(TooManyCases):
        add_case(wren, case("one more"), SYSTEM)
    assert RoutingCase.objects.filter(agent=wren).count() == CASES_MAX


def test_the_eval_writes_nothing(wren: Agent) -> None:
    replace_cases(wren, [case("one"), case("two", "episode")], SYSTEM)
    before = db_snapshot()
    found = eval_agent(wren)
    assert (found.correct, found.cases) == (1, 2)
    assert scored(Agent.objects.get(pk=wren.pk)) is not None
    assert db_snapshot() == before


def test_an_agent_without_cases_has_no_score(wren: Agent) -> None:
    assert scored(wren) is None


def test_the_score_before_a_new_spec_version(wren: Agent, monkeypatch: pytest.MonkeyPatch) -> None:
    replace_cases(wren, [case("one"), case("an episode", "episode")], SYSTEM)
    first = scored(wren)
    assert first is not None
    assert first.before is None
    newer = replace(
        USER_BACKGROUND, version="2", routes={**USER_BACKGROUND.routes, "episode": "user_profile"}
    )
    monkeypatch.setattr("memory.registry.specs", lambda: {"user-background": newer})
    now = scored(wren)
    assert now is not None
    assert now.before is not None
    assert (now.before.spec_version, now.before.correct, now.before.cases) == ("1", 1, 2)
    assert now.before.same_cases
    assert (now.found.spec_version, now.found.correct) == ("2", 2)
    # Recording the new version's score keeps the comparison with the version before.
    score_and_record(wren)
    again = scored(wren)
    assert again is not None
    assert again.before is not None
    assert again.before.spec_version == "1"
    # Other cases since: said so.
    add_case(wren, case("three"), SYSTEM)
    latest = scored(wren)
    assert latest is not None
    assert latest.before is not None
    assert not latest.before.same_cases


def test_cases_from_plain_values_are_checked_as_the_api_checks_them() -> None:
    with pytest.raises(InvalidInput) as refused:
        parse_cases([{"name": "ok", "kind": "Bad", "content": "x", "expect": {"section": None}}])
    assert refused.value.details["errors"][0]["loc"] == "cases.0.kind"
    with pytest.raises(TooManyCases):
        parse_cases([{}] * (CASES_MAX + 1))
