"""Searching at ``/memories/?q=`` (SPEC §6.2, §9): whole words, the agent and kind
filters, matches highlighted, superseded memories marked, htmx partials, access."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest
from django.test import Client

from lens.models import Agent, Team
from tests.factories import HTMX, create_agent, memory_config, remember
from tests.pages import dom

pytestmark = pytest.mark.django_db


@pytest.fixture
def wren(team: Team) -> Agent:
    return create_agent(team, "wren", memory_config())


def found(client: Client, query: str) -> list[str]:
    page = dom(client.get(f"/memories/?{query}"))
    return [e.get("data-memory-id") or "" for e in page.all("data-memory-id")]


def test_search_finds_whole_words_with_case_and_accents_folded(
    member_client: Client, wren: Agent
) -> None:
    cafe = remember(wren, "fact", "Meets friends at the Café.")
    remember(wren, "fact", "My name is Doug.")
    assert found(member_client, "q=cafe") == [cafe]
    assert found(member_client, "q=CAFÉ") == [cafe]
    assert found(member_client, "q=am") == []


def test_the_words_that_matched_are_highlighted(member_client: Client, wren: Agent) -> None:
    remember(wren, "fact", "Meets friends at the Café on Fridays.")
    page = dom(member_client.get("/memories/?q=cafe+fridays"))
    marked = [e.text for e in page.elements if e.tag == "mark"]
    assert marked == ["Café", "Fridays"]
    snippet = page.one("data-memory-snippet")
    assert snippet.text == "Meets friends at the Café on Fridays."


def test_search_keeps_the_agent_and_kind_filters(member_client: Client, team: Team) -> None:
    wren = create_agent(team, "wren", memory_config())
    atlas = create_agent(team, "atlas", memory_config())
    mine = remember(wren, "fact", "Tea at four.")
    remember(wren, "episode", "Tea spilled.")
    remember(atlas, "fact", "Tea at five.")
    assert found(member_client, "q=tea&agent=wren&kind=fact") == [mine]
    assert len(found(member_client, "q=tea")) == 3


def test_a_superseded_memory_is_found_and_marked(member_client: Client, wren: Agent) -> None:
    old = remember(wren, "profile", "Lives in Denver.", label="city")
    new = remember(wren, "profile", "Lives in Lisbon.", label="city", supersedes=old)
    page = dom(member_client.get("/memories/?q=lives"))
    assert {e.get("data-memory-id") for e in page.all("data-superseded")} == {old}
    assert {e.get("data-memory-id") for e in page.all("data-memory-id")} == {old, new}


def test_htmx_gets_only_the_results_and_the_answer_varies_on_it(
    member_client: Client, wren: Agent
) -> None:
    remember(wren, "fact", "Tea at four.")
    response = member_client.get("/memories/?q=tea", headers=HTMX)
    assert "HX-Request" in response["Vary"]
    page = dom(response)
    assert page.one("id", "memory-results")
    assert not [e for e in page.elements if e.tag == "form"]


@pytest.mark.parametrize(
    ("query", "message"),
    [("x" * 4001, "at most 4000 characters")],
)
def test_a_query_that_will_not_run_is_explained(
    member_client: Client, wren: Agent, query: str, message: str
) -> None:
    page = dom(member_client.get(f"/memories/?q={query}"))
    assert message in page.one("data-search-error").text
    assert page.all("data-memory-id") == []


@pytest.mark.parametrize("query", ['"', "*", "(", "NEAR", "%", "_", "\\"])
def test_query_syntax_is_never_an_error(member_client: Client, wren: Agent, query: str) -> None:
    remember(wren, "fact", "Near the sea.")
    response = member_client.get(f"/memories/?q={quote(query)}")
    assert response.status_code == 200
    assert found(member_client, f"q={quote(query)}") == (
        [] if query != "NEAR" else found(member_client, "q=near")
    )


def test_strangers_and_anonymous_people_find_nothing(
    client: Client, stranger_client: Client, member_client: Client, wren: Agent
) -> None:
    remember(wren, "fact", "Secret tea.")
    assert found(stranger_client, "q=tea") == []
    assert stranger_client.get("/memories/?q=tea&team=acme").status_code == 404
    response = client.get("/memories/?q=tea")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_a_search_page_costs_the_same_queries_for_5_or_120_matches(
    member_client: Client, wren: Agent, django_assert_max_num_queries: Any
) -> None:
    for n in range(5):
        remember(wren, "fact", f"Tea note {n}.")
    with django_assert_max_num_queries(15) as small:
        member_client.get("/memories/?q=tea")
    few = len(small.captured_queries)
    for n in range(115):
        remember(wren, "fact", f"More tea {n}.")
    with django_assert_max_num_queries(few):
        page = dom(member_client.get("/memories/?q=tea"))
    assert len(page.all("data-memory-id")) == 50


def test_a_matching_label_is_highlighted_too(member_client: Client, wren: Agent) -> None:
    remember(wren, "preference", "Oat flat whites.", label="coffee")
    page = dom(member_client.get("/memories/?q=coffee"))
    assert [e.text for e in page.elements if e.tag == "mark"] == ["coffee"]
