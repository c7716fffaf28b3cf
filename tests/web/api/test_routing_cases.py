"""``/api/agents/{slug}/routing-cases`` and ``/routing-eval`` (SPEC §18.1): replace and
read an agent's routing cases, all or nothing, within the limits, and score them."""

from __future__ import annotations

from typing import Any

import pytest

from lens.models import Agent, AuditEvent
from memory.models import RoutingCase, RoutingScore
from tests.api_calls import ApiClient, assert_error, db_snapshot

pytestmark = pytest.mark.django_db

URL = "/api/agents/wren/routing-cases"
EVAL = "/api/agents/wren/routing-eval"


def one(name: str = "name", **changes: Any) -> dict[str, Any]:
    return {
        "name": name,
        "kind": "profile",
        "content": "The user's name is Ada.",
        "label": "name",
        "expect": {"section": "user_profile"},
        **changes,
    }


def story() -> list[dict[str, Any]]:
    return [
        one("profile lands in About the User"),
        one("a preference waits", kind="preference", label="editor",
            expect={"section": "user_preferences"}),
        one("facts are declined", kind="fact", label=None, expect={"section": None}),
        one("an episode a person would place", kind="episode", label=None),
        one("a profile expected elsewhere", expect={"section": "user_preferences"}),
    ]  # fmt: skip


def test_put_replaces_the_cases_and_get_lists_them(wren: Agent, api: ApiClient) -> None:
    response = api.put(URL, {"cases": story()})
    assert response.status_code == 200, response.content
    assert response.json() == {"cases": 5}
    listed = api.get(URL).json()["cases"]
    assert [case["name"] for case in listed] == [case["name"] for case in story()]
    assert listed[2] == {
        "name": "facts are declined",
        "kind": "fact",
        "content": "The user's name is Ada.",
        "tags": [],
        "label": None,
        "expect": {"section": None},
    }
    assert api.put(URL, {"cases": story()[:1]}).json() == {"cases": 1}
    assert len(api.get(URL).json()["cases"]) == 1


def test_a_change_is_audited_once_and_scored(wren: Agent, api: ApiClient) -> None:
    api.put(URL, {"cases": story()})
    events = list(AuditEvent.objects.filter(action="routing_cases.changed"))
    assert len(events) == 1
    assert events[0].agent == "wren"
    assert events[0].details["cases"] == 5
    score = RoutingScore.objects.get()
    assert (score.spec_key, score.spec_version, score.correct, score.cases) == (
        "user-background",
        "1",
        3,
        5,
    )


def test_the_eval_scores_the_current_spec_and_writes_nothing(wren: Agent, api: ApiClient) -> None:
    api.put(URL, {"cases": story()})
    before = db_snapshot()
    answer = api.get(EVAL).json()
    assert db_snapshot() == before
    assert (answer["spec"], answer["spec_version"]) == ("user-background", "1")
    assert (answer["cases"], answer["correct"], answer["accuracy"]) == (5, 3, 0.6)
    assert answer["failures"] == [
        {"name": "an episode a person would place", "expected": "user_profile", "got": None,
         "reason": "spec-declined"},
        {"name": "a profile expected elsewhere", "expected": "user_preferences",
         "got": "user_profile", "reason": "wrong-section"},
    ]  # fmt: skip
    assert [s["section"] for s in answer["sections"]] == [
        "user_profile",
        "user_preferences",
        None,
    ]
    assert {"expected": None, "got": None, "count": 1} in answer["confusion"]


def test_the_eval_judges_against_the_current_declarations(wren: Agent, api: ApiClient) -> None:
    api.put(URL, {"cases": story()[1:2]})
    config = api.get("/api/agents/wren").json()
    config["background"]["sections"] = config["background"]["sections"][:1]
    config.pop("revision")
    assert api.put("/api/agents/wren", config).status_code == 200
    failure = api.get(EVAL).json()["failures"][0]
    assert (failure["got"], failure["reason"]) == (None, "undeclared-section")


def test_no_cases_has_a_null_accuracy(wren: Agent, api: ApiClient) -> None:
    answer = api.get(EVAL).json()
    assert (answer["cases"], answer["accuracy"], answer["sections"]) == (0, None, [])


def test_a_thousand_cases_are_taken_and_one_more_is_refused(wren: Agent, api: ApiClient) -> None:
    cases = [one(f"case {i}", content=f"c{i}") for i in range(1000)]
    assert api.put(URL, {"cases": cases}).json() == {"cases": 1000}
    before = db_snapshot()
    error = assert_error(
        api.put(URL, {"cases": [*cases, one("case 1000")]}), 422, "too_many_routing_cases"
    )
    assert error["limit"] == 1000
    assert db_snapshot() == before
    assert api.get(EVAL).json()["cases"] == 1000


@pytest.mark.parametrize(
    "name", ["x" * 64, "é" * 64, "😀" * 64, "e\u0301" * 32, "名前" * 32, "a b", "☃"]
)
def test_names_up_to_64_code_points_are_taken(wren: Agent, api: ApiClient, name: str) -> None:
    assert api.put(URL, {"cases": [one(name)]}).json() == {"cases": 1}
    assert api.get(URL).json()["cases"][0]["name"] == name


@pytest.mark.parametrize(
    "name", ["x" * 65, "😀" * 65, "", "  ", "a\nb", "a\x00b", "a\u2029b", "\u202eabc"]
)
def test_other_names_are_refused(wren: Agent, api: ApiClient, name: str) -> None:
    api.put(URL, {"cases": [one("kept")]})
    before = db_snapshot()
    error = assert_error(api.put(URL, {"cases": [one("fine"), one(name)]}), 422)
    assert error["errors"][0]["loc"] == "cases.1.name"
    assert db_snapshot() == before


def test_duplicate_names_are_refused_and_nothing_changes(wren: Agent, api: ApiClient) -> None:
    api.put(URL, {"cases": [one("kept")]})
    before = db_snapshot()
    error = assert_error(
        api.put(URL, {"cases": [one("twice"), one("other"), one("twice")]}),
        422,
        "duplicate_case_name",
    )
    assert error["names"] == ["twice"]
    assert db_snapshot() == before
    # Two names that only look alike are two names.
    assert api.put(URL, {"cases": [one("é"), one("e\u0301")]}).json() == {"cases": 2}


@pytest.mark.parametrize(
    ("bad", "code", "loc"),
    [
        ({"kind": "Profile"}, "invalid_kind", "cases.1.kind"),
        ({"content": ""}, "invalid_content", "cases.1.content"),
        ({"content": "x" * 10_001}, "invalid_content", "cases.1.content"),
        ({"label": "a\nb"}, "invalid_label", "cases.1.label"),
        ({"tags": ["ok", ""]}, "invalid_tags", "cases.1.tags"),
        ({"expect": {"section": "Not an id"}}, "invalid_request", "cases.1.expect.section"),
        ({"expect": None}, "invalid_request", "cases.1.expect"),
        ({"surprise": 1}, "invalid_request", "cases.1.surprise"),
    ],
)
def test_a_case_that_would_not_save_is_refused_with_the_code_a_save_gets(
    wren: Agent, api: ApiClient, bad: dict[str, Any], code: str, loc: str
) -> None:
    api.put(URL, {"cases": [one("kept")]})
    before = db_snapshot()
    error = assert_error(api.put(URL, {"cases": [one("fine"), one(**bad)]}), 422, code)
    assert error["errors"][0]["loc"] == loc
    assert error["message"].startswith(f"{loc}: ")
    assert db_snapshot() == before
    # Each is validated as a save (SPEC §18.1, §3.2): the memory's own fields answer
    # the code saving it would.
    field = loc.split(".")[2]
    if field in ("kind", "content", "label", "tags"):
        memory = {"kind": "profile", "content": "Ada", **bad}
        assert_error(api.post("/api/agents/wren/memories", memory), 422, code)


def test_the_body_needs_its_cases(wren: Agent, api: ApiClient) -> None:
    assert_error(api.put(URL, {}), 422)
    assert_error(api.put(URL, {"cases": "no"}), 422)
    assert RoutingCase.objects.count() == 0


def test_another_teams_agent_is_not_found(
    wren: Agent, api: ApiClient, other_api: ApiClient
) -> None:
    api.put(URL, {"cases": story()})
    before = db_snapshot()
    assert_error(other_api.get(URL), 404, "agent_not_found")
    assert_error(other_api.put(URL, {"cases": []}), 404, "agent_not_found")
    assert_error(other_api.get(EVAL), 404, "agent_not_found")
    assert db_snapshot() == before


def test_no_token_is_unauthorised(wren: Agent, anon_api: ApiClient) -> None:
    assert_error(anon_api.get(URL), 401)
    assert_error(anon_api.put(URL, {"cases": []}), 401)
    assert_error(anon_api.get(EVAL), 401)


def test_the_eval_reads_a_fixed_number_of_queries(
    wren: Agent, api: ApiClient, django_assert_max_num_queries: Any
) -> None:
    api.put(URL, {"cases": [one(f"case {i}", content=f"c{i}") for i in range(200)]})
    with django_assert_max_num_queries(6):
        assert api.get(EVAL).json()["cases"] == 200
    with django_assert_max_num_queries(6):
        assert len(api.get(URL).json()["cases"]) == 200
