"""Search and recall in the real Chromium: the memories list narrowing as you type,
matches highlighted, and the recall preview the lens links to (SPEC §6.2, §6.4, §9)."""

from __future__ import annotations

import os
from pathlib import Path
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


SCREENSHOTS = Path(os.environ.get("SCREENSHOT_DIR", "var/screenshots"))


@pytest.mark.parametrize("width", [1440, 390])
def test_the_recall_preview_labels_each_line_with_its_tier(
    live_server: Any, browser: Any, width: int, settings: Any
) -> None:
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 60  # one preference line in the prompt
    team = Team.objects.create(slug="acme", name="Acme")
    make_user("mira", team)
    ada = create_agent(team, "ada", memory_config(preferences="auto"))
    # The newest preference takes the prompt's one line; the rest spill (the profile
    # memory too, recalled in its own tier first).
    remember(ada, "profile", "Name is Ada Lovelace, mathematician and writer.", label="name")
    for n, drink in enumerate(("green tea", "black coffee", "mint tea", "cocoa")):
        remember(ada, "preference", f"Prefers {drink} in the afternoon.", label=f"drink{n}")
    remember(ada, "episode", "Walked by the sea with Charles and talked about engines.")
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        login(page, live_server.url, "mira")
        page.goto(f"{live_server.url}/agents/ada/try/?recall=sea#recall")
        labels = page.locator("[data-recall-tier-label]")
        labels.first.wait_for()
        assert labels.all_inner_texts() == ["profile", "spilled", "spilled", "spilled", "hits"]
        for label in labels.all():
            assert label.is_visible()
        # The label sits beside its line: the line's box starts right of the label's.
        first = page.locator("[data-recall-line]").first.bounding_box()
        tag = labels.first.bounding_box()
        assert first is not None
        assert tag is not None
        assert first["x"] >= tag["x"] + tag["width"]
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.locator("#recall").screenshot(path=SCREENSHOTS / f"recall-tiers-{width}.png")
        assert errors == []
    finally:
        context.close()
