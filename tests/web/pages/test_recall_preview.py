"""The "Preview recall" box (SPEC §6.4, §9) on the agent's tools page, linked from the
lens: the block a message would add, each line linked to its memory with its tier; with
and without htmx; access; older lens links land on it."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from lens.models import Agent, Team
from memory.models import MemoryEvent, MemoryRecord
from tests.factories import HTMX, create_agent, memory_config, remember
from tests.pages import dom

pytestmark = pytest.mark.django_db


@pytest.fixture
def wren(team: Team, settings: Any) -> Agent:
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 0  # nothing composed, so everything may recall
    return create_agent(team, "wren", memory_config())


def recalled(page: Any) -> list[tuple[str, str, str]]:
    return [
        (e.get("data-memory-id") or "", e.get("data-tier") or "", e.text)
        for e in page.all("data-recall-line")
    ]


def test_the_block_shows_each_line_linked_with_its_tier(member_client: Client, wren: Agent) -> None:
    name = remember(wren, "profile", "Name is Doug.", label="name")
    tea = remember(wren, "episode", "Had tea with Anna.")
    page = dom(member_client.get("/agents/wren/try/?recall=tea+with+Anna"))
    assert recalled(page) == [
        (name, "profile", "- Name is Doug.\n"),
        (tea, "hits", "- Had tea with Anna.\n"),
    ]
    links = [e.get("href") for e in page.all("data-recall-line")]
    assert links == [f"/memories/{name}/", f"/memories/{tea}/"]
    block = page.one("data-recall-result")
    assert block.text.strip().startswith("### Recalled Memories")
    # The preview is not the prompt: no fragment hooks inside it.
    assert not [e for e in block.descendants() if e.get("data-source")]


def test_htmx_gets_the_block_alone_and_nothing_is_recorded(
    member_client: Client, wren: Agent
) -> None:
    remember(wren, "episode", "Had tea with Anna.")
    before = (MemoryRecord.objects.count(), MemoryEvent.objects.count())
    page = dom(member_client.get("/agents/wren/try/?recall=tea", headers=HTMX))
    assert page.one("id", "recall-result")
    assert not page.all("data-prompt")
    assert len(recalled(page)) == 1
    assert (MemoryRecord.objects.count(), MemoryEvent.objects.count()) == before


def test_a_message_that_cannot_be_read_is_explained(member_client: Client, wren: Agent) -> None:
    page = dom(member_client.get("/agents/wren/try/?recall=" + "x" * 4001))
    assert "at most 4000 characters" in page.one("data-recall-result").squashed


def test_nothing_to_recall_says_so(member_client: Client, wren: Agent) -> None:
    page = dom(member_client.get("/agents/wren/try/?recall=zebra"))
    assert "Nothing would be recalled" in page.one("data-recall-result").squashed


def test_strangers_get_404_and_anonymous_people_the_login(
    client: Client, stranger_client: Client, wren: Agent
) -> None:
    assert stranger_client.get("/agents/wren/try/?recall=tea", headers=HTMX).status_code == 404
    response = client.get("/agents/wren/try/?recall=tea")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_other_agents_memories_are_never_recalled(
    member_client: Client, team: Team, wren: Agent
) -> None:
    other = create_agent(team, "atlas", memory_config())
    remember(other, "episode", "Had tea with Anna.")
    page = dom(member_client.get("/agents/wren/try/?recall=tea"))
    assert recalled(page) == []


def test_the_form_asks_the_tools_page_with_and_without_htmx(
    member_client: Client, wren: Agent
) -> None:
    page = dom(member_client.get("/agents/wren/try/"))
    form = page.one("name", "recall", tag="input").ancestor("form")
    assert form is not None
    assert (form.get("method"), form.get("action")) == ("get", "/agents/wren/try/#recall")
    assert form.get("hx-get") == "/agents/wren/try/"
    assert form.get("hx-target") == "#recall-result"


def test_a_recall_link_to_the_lens_lands_on_the_tools_page(
    member_client: Client, stranger_client: Client, wren: Agent
) -> None:
    response = member_client.get("/agents/wren/?recall=tea+time&team=acme")
    assert response.status_code == 302
    assert response["Location"] == "/agents/wren/try/?recall=tea+time&team=acme"
    assert stranger_client.get("/agents/wren/?recall=tea").status_code == 404


def spill_story(team: Team, settings: Any, spilled: int) -> Agent:
    """Ada: one preference in the prompt and ``spilled`` more the budget left out, a
    profile memory, and an episode the message finds."""
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 40  # one preference line
    agent = create_agent(team, "ada", memory_config(preferences="auto"))
    for n in range(spilled + 1):
        remember(agent, "preference", f"Prefers tea number {n}.", label=f"tea{n}")
    remember(agent, "profile", "Name is Ada Lovelace, mathematician.", label="name")
    remember(agent, "episode", "Walked by the sea.")
    return agent


def test_each_line_says_its_tier_beside_the_exact_line(
    member_client: Client, team: Team, settings: Any
) -> None:
    spill_story(team, settings, 2)
    page = dom(member_client.get("/agents/ada/try/?recall=sea"))
    rows = [
        (label.text, line.get("data-tier"))
        for label, line in zip(
            page.all("data-recall-tier-label"), page.all("data-recall-line"), strict=True
        )
    ]
    assert rows == [
        ("profile", "profile"),
        ("spilled", "spilled"),
        ("spilled", "spilled"),
        ("hits", "hits"),
    ]
    # The label sits beside the line, not in it: each line is still the prompt's text.
    assert [line.text for line in page.all("data-recall-line")][-1] == "- Walked by the sea.\n"
    spilled = page.all("data-tier", "spilled")
    assert "budget had no room" in (spilled[0].get("title") or "")
    assert "by tier: profile 1, spilled 2, hits 1" in page.one("data-recall-result").squashed


def test_the_preview_costs_the_same_queries_however_many_memories_spill(
    member_client: Client, team: Team, settings: Any
) -> None:
    spill_story(team, settings, 2)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert member_client.get("/agents/ada/try/?recall=sea").status_code == 200
        return len(captured.captured_queries)

    queries()  # the first request of a session reads a few things once
    few = queries()
    for n in range(3, 40):
        remember(Agent.objects.get(slug="ada"), "preference", f"Prefers tea {n}.", label=f"t{n}")
    assert queries() == few
