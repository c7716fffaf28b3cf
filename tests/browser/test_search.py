"""Search and recall in the real Chromium: the memories list narrowing as you type,
matches highlighted, and the recall preview the lens links to (SPEC §6.2, §6.4, §9)."""

from __future__ import annotations

from typing import Any

import pytest

from lens.models import Team
from tests.factories import create_agent, login, make_user, memory_config, remember

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def memory_ids(page: Any) -> list[str]:
    return [
        str(i)
        for i in page.locator("tr[data-memory-id]").evaluate_all(
            "els => els.map(el => el.dataset.memoryId)"
        )
    ]


def test_the_memories_list_searches_as_you_type(live_server: Any, page: Any) -> None:
    team = Team.objects.create(slug="acme", name="Acme")
    make_user("mira", team)
    wren = create_agent(team, "wren", memory_config())
    cafe = remember(wren, "episode", "Met Anna at the Café on Friday.")
    remember(wren, "episode", "Went cycling along the river.")
    base = live_server.url

    login(page, base, "mira")
    page.goto(f"{base}/memories/")
    assert len(memory_ids(page)) == 2
    page.evaluate("window.__marker = 1")

    page.get_by_label("Search").press_sequentially("CAFE", delay=40)
    page.wait_for_function("() => document.querySelectorAll('tr[data-memory-id]').length === 1")
    assert memory_ids(page) == [cafe]
    assert page.locator("mark").all_inner_texts() == ["Café"]
    # htmx swapped the results: no reload, the address follows, focus stays in the box.
    assert page.evaluate("window.__marker") == 1
    assert "q=CAFE" in page.url
    assert page.evaluate("document.activeElement.name") == "q"


def test_the_lens_previews_recall_for_a_message(live_server: Any, page: Any) -> None:
    team = Team.objects.create(slug="acme", name="Acme")
    make_user("mira", team)
    wren = create_agent(team, "wren", memory_config())
    tea = remember(wren, "episode", "Had tea with Anna.")
    base = live_server.url

    login(page, base, "mira")
    page.goto(f"{base}/agents/wren/")
    # The lens's head links to the preview's own card.
    page.get_by_role("link", name="Preview recall").click()
    page.wait_for_url(f"{base}/agents/wren/try/#recall")
    page.evaluate("window.__marker = 1")
    page.get_by_label("Message").fill("Any tea plans?")
    page.get_by_role("button", name="Preview").click()
    line = page.locator("[data-recall-line]")
    line.wait_for()
    assert line.get_attribute("data-memory-id") == tea
    assert line.get_attribute("data-tier") == "hits"
    assert line.evaluate("el => el.textContent") == "- Had tea with Anna.\n"
    # htmx swapped the block in: no reload.
    assert page.evaluate("window.__marker") == 1
    line.click()
    page.wait_for_url(f"{base}/memories/{tea}/")
