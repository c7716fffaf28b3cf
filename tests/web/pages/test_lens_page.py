"""The lens for big agents: one card per Background section, the outline of jump links,
the "memory only" filter, the memory budget, and fragment tooltips that tell provenance.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from lens.actors import Actor
from lens.models import Agent, ApiToken, Team
from memory.decisions import decide
from memory.models import MemoryRecord, Promotion
from tests.factories import (
    Story,
    composed,
    create_agent,
    fill_memories,
    many_sections,
    memory_config,
    remember,
)
from tests.pages import Dom, Element, dom

pytestmark = pytest.mark.django_db


def lens(client: Client, query: str = "") -> Dom:
    return dom(client.get(f"/agents/wren/{query}"))


def cards(page: Dom) -> list[Element]:
    return page.all("data-block", "background")


def filter_links(page: Dom) -> dict[str, Element]:
    (switch,) = [e for e in page.elements if e.get("class") == "lens-filter"]
    return {str(a.get("data-filter-link")): a for a in switch.descendants() if a.tag == "a"}


def in_a_section(element: Element) -> bool:
    node = element.parent
    while node is not None:
        if "data-section-text" in node.attrs or node.tag == "pre":
            return True
        node = node.parent
    return False


def utc(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC")


# --- access ----------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["", "?only=memory"])
def test_members_see_the_lens_and_others_do_not(
    member_client: Client, stranger_client: Client, wren: Agent, query: str
) -> None:
    assert member_client.get(f"/agents/wren/{query}").status_code == 200
    assert stranger_client.get(f"/agents/wren/{query}").status_code == 404
    response = Client().get(f"/agents/wren/{query}")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=/agents/wren/")


# --- one card per Background section ---------------------------------------------------


def test_each_background_section_with_entries_is_a_collapsible_card(
    member_client: Client, story: Story
) -> None:
    page = lens(member_client)
    shown = cards(page)
    assert [c.get("data-section-id") for c in shown] == ["user_profile", "user_preferences"]
    for card in shown:
        section_id = card.get("data-section-id")
        assert card.tag == "details"
        assert "open" in card.attrs
        assert card.get("id") == f"section-{section_id}"
        summary = card.children[0]
        assert summary.tag == "summary"
        assert [e.tag for e in summary.descendants() if e.tag.startswith("h")] == ["h3"]
    profile, preferences = shown
    assert profile.children[0].squashed.startswith("About the User user_profile auto 3 entries")
    memories = {
        c.get("data-section-id"): next(
            e.get("data-block-memories")
            for e in c.descendants()
            if "data-block-memories" in e.attrs
        )
        for c in shown
    }
    assert memories == {"user_profile": "2", "user_preferences": "1"}
    assert "1 entry" in preferences.children[0].squashed


def test_the_cards_hold_exactly_the_composition_s_fragments_in_order(
    member_client: Client, story: Story
) -> None:
    composition = composed(story.agent)
    page = lens(member_client)
    shown = page.all("data-source")
    expected = [f for s in composition.prompt.sections for f in s.fragments]
    assert [(e.get("data-source"), e.text) for e in shown] == [(f.source, f.text) for f in expected]
    # The Context element holds the whole section: its fragments join to its text.
    context = page.one("data-section", "Context")
    assert "data-section-text" in context.attrs
    text = "".join(e.text for e in context.descendants() if "data-source" in e.attrs)
    assert text == next(s.text for s in composition.prompt.sections if s.name == "Context")
    # No card's text starts with a line break (the HTML parser would drop it).
    for pre in (e for e in context.descendants() if e.tag == "pre"):
        assert pre.text
        assert not pre.text.startswith("\n")


def test_the_outline_links_to_each_card_and_names_empty_sections(
    member_client: Client, wren: Agent
) -> None:
    page = lens(member_client)
    items = page.all("data-declared-section")
    assert [i.get("data-declared-section") for i in items] == ["user_profile", "user_preferences"]
    profile, preferences = items
    links = [e for e in profile.descendants() if e.tag == "a"]
    assert [a.get("href") for a in links] == ["#section-user_profile"]
    assert page.one("id", "section-user_profile").get("data-block") == "background"
    assert "auto" in profile.squashed
    assert "1 entry" in profile.squashed
    # Declared without entries: listed, but there is no card to jump to.
    assert [e for e in preferences.descendants() if e.tag == "a"] == []
    assert "no entries · not rendered" in preferences.squashed
    assert page.all("id", "section-user_preferences") == []
    # The declarations table is gone: the outline replaces it.
    assert page.all("class", "decl") == []


# --- the "memory only" filter ----------------------------------------------------------


def test_memory_only_shows_only_the_cards_holding_memories(
    member_client: Client, team: Team, member: User
) -> None:
    agent = create_agent(team, "wren", many_sections(3, 2))
    remember(agent, "profile", "Mira", label="name")
    full = lens(member_client)
    assert len(cards(full)) == 4
    switch = filter_links(full)
    assert switch["memory"].get("href") == "/agents/wren/?only=memory"
    assert switch["all"].get("aria-current") == "page"
    assert switch["memory"].get("aria-current") is None

    page = lens(member_client, "?only=memory")
    assert [c.get("data-section-id") for c in cards(page)] == ["user_profile"]
    assert page.all("data-section", "Persona") == []
    assert page.all("data-section-text") == []  # no element claims to be a whole section
    assert page.all("data-copy-prompt") == []
    note = page.one("data-filter-note")
    assert note.squashed.startswith("Showing only the 1 Background section holding memories")
    assert [a.get("href") for a in note.descendants() if a.tag == "a"] == ["/agents/wren/"]
    assert filter_links(page)["memory"].get("aria-current") == "page"
    # The memory fragment is still a link to its memory, with the contract hooks.
    (fragment,) = page.all("data-source", "memory")
    assert fragment.text == "- **name**: Mira\n"
    # Outline links to cards not shown lead to the whole page.
    hrefs = [a.get("href") for a in page.all("class", "outline-link") if a.tag == "a"]
    assert hrefs == ["#section-user_profile"] + [
        f"/agents/wren/#section-section_{s}" for s in range(3)
    ]


def test_memory_only_says_so_when_no_section_holds_a_memory(
    member_client: Client, wren: Agent
) -> None:
    page = lens(member_client, "?only=memory")
    assert cards(page) == []
    assert page.one("data-no-memory-sections").squashed == (
        "No Background section holds a memory right now."
    )


def test_without_the_filter_the_prompt_appears_once(member_client: Client, story: Story) -> None:
    response = member_client.get("/agents/wren/")
    composition = composed(story.agent)
    assert response.content.decode().count("data-section-text") == len(composition.prompt.sections)
    page = dom(response)
    for fragment in (f for s in composition.prompt.sections for f in s.fragments):
        if fragment.source == "memory":
            assert [e.tag for e in page.elements if e.text == fragment.text] == ["a"]
            assert not any(fragment.text in (e.get("data-tip") or "") for e in page.elements)


# --- the budget ------------------------------------------------------------------------


def test_the_budget_meter_shows_memory_chars_used_of_the_budget(
    member_client: Client, story: Story, settings: Any
) -> None:
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 12345
    used = composed(story.agent).report.stats.chars_used["background"]
    page = lens(member_client)
    meter = page.one("id", "budget-meter")
    assert meter.tag == "meter"
    assert (meter.get("min"), meter.get("max"), meter.get("value")) == ("0", "12345", str(used))
    words = page.one("id", "budget-words")
    assert words.squashed == f"{used:,} of 12,345 chars of memory"
    assert meter.get("aria-labelledby") == "budget-words"
    assert page.one("data-memories-in-prompt").text == "3"


def test_numbers_get_thousands_separators(member_client: Client, team: Team) -> None:
    create_agent(team, "wren", many_sections(4, 40))
    page = lens(member_client)
    length = page.one("data-prompt-length")
    assert re.fullmatch(r"\d{1,3}(,\d{3})+", length.text)
    assert length.text.replace(",", "") == length.get("data-prompt-length")


# --- tooltips: provenance, heard by screen readers ------------------------------------


def test_memory_fragment_tooltips_tell_who_saved_and_approved_it(
    member_client: Client, team: Team, wren: Agent, reviewer: User
) -> None:
    token, _raw = ApiToken.objects.issue(team, name="runtime")
    name = remember(wren, "profile", "Mira", label="name", actor=Actor.for_token(token))
    drink = remember(wren, "preference", "Tea, never coffee.", label="drink")
    decide(drink, True, Actor.for_user(reviewer))
    page = lens(member_client)

    tips = {}
    for fragment in page.all("data-source", "memory"):
        tip_id = fragment.get("aria-describedby")
        assert tip_id
        tip = page.one("id", tip_id)
        assert tip.get("role") == "tooltip"
        assert "hidden" in tip.attrs  # shown by tips.js on hover and focus
        assert not in_a_section(tip)  # never inside a fragment, a <pre> or a section
        assert tip.text == fragment.get("data-tip")  # the CSS tooltip without scripts
        tips[fragment.get("data-memory-ids")] = tip.text

    saved_name = MemoryRecord.objects.get(pk=name).created_at
    assert tips[name] == (
        f"profile “name” · memory {name}\n"
        f"Saved {utc(saved_name)} by token {token.prefix}… (runtime)\n"
        "Approved automatically (auto tier)"
    )
    saved_drink = MemoryRecord.objects.get(pk=drink).created_at
    approved = Promotion.objects.get(pk=drink).decided_at
    assert approved is not None
    assert tips[drink] == (
        f"preference “drink” · memory {drink}\n"
        f"Saved {utc(saved_drink)} by system\n"
        f"Tier guarded · approved by mira on {utc(approved)}"
    )
    # Provenance, not the visible text again.
    assert "Tea, never coffee." not in tips[drink]


# --- the agents list -------------------------------------------------------------------


def test_the_pending_pill_opens_the_approval_queue_for_the_agent(
    member_client: Client, wren: Agent
) -> None:
    remember(wren, "preference", "Prefers a dark theme.", label="theme")
    page = dom(member_client.get("/"))
    pill = page.one("data-pending-count")
    assert pill.get("href") == "/approvals/?agent=wren"
    assert pill.squashed == "1 pending"


# --- query counts ----------------------------------------------------------------------


def test_the_lens_query_count_is_the_same_for_a_small_and_a_big_agent_with_memories(
    member_client: Client, team: Team, member: User, django_assert_max_num_queries: Any
) -> None:
    small = create_agent(team, "small", memory_config())
    fill_memories(small, member, 5)
    big = create_agent(team, "big", many_sections(38, 50))
    fill_memories(big, member, 60)
    assert composed(big).counts.sections == 40
    member_client.get("/agents/small/")  # settle the session
    # The lens counts the migration plan again after memories change (one query more
    # on that first view, whatever their number): settled, it costs the same.
    member_client.get("/agents/big/")
    for path in ("/agents/small/", "/agents/small/?only=memory"):
        with django_assert_max_num_queries(20) as captured:
            assert member_client.get(path).status_code == 200
        few = len(captured)
        big_path = path.replace("small", "big")
        with django_assert_max_num_queries(few, info=f"{big_path}: 40 sections, 60 memories"):
            assert member_client.get(big_path).status_code == 200


@pytest.mark.django_db(transaction=True)
def test_a_lens_of_a_kept_composition_reads_no_declarations(
    member_client: Client, team: Team, member: User
) -> None:
    # The composition kept for the agent's stamp needs nothing more: the agent is read
    # with its stamp, and the declared sections come from the composition.
    big = create_agent(team, "big", many_sections(38, 50))
    fill_memories(big, member, 60)
    first = member_client.get("/agents/big/")
    with CaptureQueriesContext(connection) as captured:
        again = member_client.get("/agents/big/")
    read = {table for query in captured.captured_queries for table in tables_read(query["sql"])}
    assert not read & {
        "lens_sectiondeclaration",
        "lens_authoredentry",
        "lens_capability",
        "lens_awarenesssource",
    }
    assert without_tokens(again.content) == without_tokens(first.content)


def tables_read(sql: str) -> set[str]:
    return set(re.findall(r'(?:FROM|JOIN)\s+"?(\w+)"?', sql))


def without_tokens(page: bytes) -> bytes:
    return re.sub(rb'(csrfmiddlewaretoken" value=|"X-CSRFToken": )"[^"]*"', rb"\1", page)
