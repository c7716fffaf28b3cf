"""The "Preview recall" box (SPEC §6.4, §9) on the agent's tools page, linked from the
lens: the block a message would add, each line linked to its memory with its tier; with
and without htmx; access; older lens links land on it."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

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
