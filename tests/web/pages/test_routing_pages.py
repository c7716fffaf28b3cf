"""The routing page (SPEC §18.1): the score, failures in words, precision and recall per
section, the confusion and the cases; who may see it; its query count; the lens's
"Routing: … of … cases" line and the score before and after a spec's version changed;
and "Add as a routing case" on a memory's page."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from django.test import Client

from lens.actors import SYSTEM
from lens.models import Agent, AuditEvent, Team
from memory.core.presets import USER_BACKGROUND
from memory.core.routing_eval import CaseInput
from memory.models import RoutingCase
from memory.routing_cases import replace_cases
from tests.api_calls import db_snapshot
from tests.factories import remember

pytestmark = pytest.mark.django_db
PAGE = "/agents/wren/routing/"
LENS = "/agents/wren/"


def case(name: str, kind: str, expect: str | None, content: str = "") -> CaseInput:
    return CaseInput.model_validate(
        {
            "name": name,
            "kind": kind,
            "content": content or f"{name}.",
            "expect": {"section": expect},
        }
    )


STORY = [
    case("the name", "profile", "user_profile"),
    case("the editor", "preference", "user_preferences"),
    case("a fact", "fact", None),
    case("an episode a person would place", "episode", "user_profile"),
    case("a profile expected elsewhere", "profile", "user_preferences"),
]


@pytest.fixture
def cased(wren: Agent) -> Agent:
    replace_cases(wren, STORY, SYSTEM)
    return wren


def test_a_member_sees_the_score_failures_and_confusion(
    member_client: Client, cased: Agent
) -> None:
    response = member_client.get(PAGE)
    assert response.status_code == 200
    text = response.content.decode()
    assert 'data-routing-score="3/5"' in text
    assert "3 of 5 cases land where expected" in text
    assert ">60%<" in text
    assert "user-background@1" in text
    assert "Expected in “About the User”, but the spec declines it." in text
    assert "Expected in “User Preferences”; the spec places it in “About the User”." in text
    assert text.count('data-failure="') == 2
    assert "data-routing-confusion" in text
    assert 'class="num is-miss"' in text
    assert text.count('data-case="') == 5


def test_without_cases_the_page_says_how_to_add_them(member_client: Client, wren: Agent) -> None:
    response = member_client.get(PAGE)
    assert response.status_code == 200
    assert b"data-routing-empty" in response.content
    assert b"Routing:" not in member_client.get(LENS).content


def test_strangers_get_404_and_anonymous_visitors_log_in(
    stranger_client: Client, client: Client, cased: Agent
) -> None:
    assert stranger_client.get(PAGE).status_code == 404
    response = client.get(PAGE)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_the_page_reads_a_fixed_number_of_queries(
    member_client: Client, wren: Agent, django_assert_max_num_queries: Any
) -> None:
    replace_cases(wren, STORY[:2], SYSTEM)
    member_client.get(PAGE)
    with django_assert_max_num_queries(12) as few:
        member_client.get(PAGE)
    many = [case(f"case {i}", "profile" if i % 3 else "fact", None) for i in range(300)]
    replace_cases(wren, many, SYSTEM)
    with django_assert_max_num_queries(len(few.captured_queries)):
        response = member_client.get(PAGE)
    assert response.content.decode().count('data-case="') == 50  # one page of cases
    assert b"Pages of cases" in response.content


def test_the_lens_says_the_routing_score_and_links_to_the_page(
    member_client: Client, cased: Agent, django_assert_max_num_queries: Any
) -> None:
    member_client.get(LENS)  # settle the session
    with django_assert_max_num_queries(15):  # as without cases: one query for the line
        text = member_client.get(LENS).content.decode()
    assert 'href="/agents/wren/routing/" data-routing-link>Routing: 3 of 5 cases (60%)</a>' in text


def test_a_new_spec_version_shows_the_score_before_and_after(
    member_client: Client, cased: Agent, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert b"data-routing-before" not in member_client.get(PAGE).content
    # The spec's next version, deployed: episodes now land in About the User.
    newer = replace(
        USER_BACKGROUND, version="2", routes={**USER_BACKGROUND.routes, "episode": "user_profile"}
    )
    monkeypatch.setattr("memory.registry.specs", lambda: {"user-background": newer})
    before = db_snapshot()
    words = "before (user-background@1): 3 of 5 → now (user-background@2): 4 of 5"
    assert words in member_client.get(PAGE).content.decode()
    assert words in member_client.get(LENS).content.decode()
    assert db_snapshot() == before  # reading pages records nothing


def test_a_memory_page_offers_it_as_a_case_prefilled(member_client: Client, wren: Agent) -> None:
    record = remember(wren, "preference", "Prefers dark mode.", label="theme", tags=["ui"])
    text = member_client.get(f"/memories/{record}/").content.decode()
    assert "Add as a routing case" in text
    assert 'value="preference: theme"' in text
    assert '<option value="user_preferences" selected>' in text
    assert "Prefers dark mode.</textarea>" in text


def test_adding_a_memory_as_a_case_appends_one_audited(
    member_client: Client, wren: Agent, team: Team
) -> None:
    replace_cases(wren, STORY[:1], SYSTEM)
    record = remember(wren, "fact", "Lives in Kraków.")
    form = {
        "team": "acme",
        "name": "lives in Kraków",
        "expect": "user_profile",
        "kind": "fact",
        "content": "Lives in Kraków.",
        "label": "",
        "tags": "",
    }
    response = member_client.post(f"/memories/{record}/routing-case/", form)
    assert response.status_code == 302
    assert response["Location"] == PAGE
    cases = list(RoutingCase.objects.filter(agent=wren).values_list("name", "expect_section"))
    assert cases == [("the name", "user_profile"), ("lives in Kraków", "user_profile")]
    assert AuditEvent.objects.filter(action="routing_cases.changed").count() == 2
    # The same name again is refused on the memory's page, and nothing changes.
    before = db_snapshot()
    again = member_client.post(f"/memories/{record}/routing-case/", form)
    assert again.status_code == 400
    assert "given more than once" in again.content.decode()
    assert db_snapshot() == before
    # Declined is a choice, and a case that would not save is refused.
    assert (
        member_client.post(
            f"/memories/{record}/routing-case/", {**form, "name": "declined", "expect": "declined"}
        ).status_code
        == 302
    )
    assert RoutingCase.objects.get(name="declined").expect_section is None
    bad = member_client.post(
        f"/memories/{record}/routing-case/", {**form, "name": "bad", "kind": "Not A Kind"}
    )
    assert bad.status_code == 400
    assert not RoutingCase.objects.filter(name="bad").exists()


def test_strangers_cannot_add_a_case(stranger_client: Client, wren: Agent) -> None:
    record = remember(wren, "fact", "Lives in Kraków.")
    form = {"team": "globex", "name": "x", "expect": "declined", "kind": "fact", "content": "x"}
    assert stranger_client.post(f"/memories/{record}/routing-case/", form).status_code == 404
    assert not RoutingCase.objects.exists()
