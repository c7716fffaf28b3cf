"""What-if in the real Chromium (SPEC §18.2): each queue row loads what approving it
would do once it comes into view, on a wide screen and a phone's, with no console
error; without JavaScript the row links to the same answer as a page."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission

from lens.actors import SYSTEM, Actor
from lens.agents import get_agent
from lens.models import Team
from memory.core.records import MemoryInput
from memory.deliveries.ledger import deliver
from memory.saving import Saved, save_memory
from tests.factories import create_agent, login, make_user, memory_config

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def set_up() -> list[str]:
    """Wren, delivered a few times, and three preferences waiting in the queue."""
    team = Team.objects.create(slug="acme", name="Acme")
    user = make_user("rhea", team)
    user.user_permissions.add(Permission.objects.get(codename="approve_promotion"))
    agent = create_agent(team, "wren", memory_config())
    runtime = Actor(label="runtime")
    ids = []
    for label, content in (
        ("theme", "Dark theme, always."),
        ("units", "Metric units."),
        ("greeting", "No small talk before 9."),
    ):
        deliver(get_agent(team, "wren"), runtime)
        saved = save_memory(
            agent, MemoryInput(kind="preference", content=content, label=label), SYSTEM
        )
        assert isinstance(saved, Saved)
        ids.append(saved.id)
    deliver(get_agent(team, "wren"), runtime)
    return ids


@pytest.mark.parametrize("width", [1440, 390])
def test_each_queue_row_shows_what_approving_would_do(
    live_server: Any, browser: Any, width: int
) -> None:
    ids = set_up()
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.set_default_timeout(20_000)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        base: str = live_server.url
        login(page, base, "rhea")
        page.goto(f"{base}/approvals/")
        first = page.locator(f'li[data-promotion-id="{ids[0]}"] [data-what-if]')
        first.wait_for()
        text = " ".join(first.inner_text().split())
        assert text.startswith("If approving: +")
        # Saved before the last three deliveries: each of them would have held it.
        assert "3 of the last 4 prompts would change" in text
        assert first.get_attribute("data-changed") == "3"
        # Loaded once it comes into view.
        page.locator(f'li[data-promotion-id="{ids[2]}"]').scroll_into_view_if_needed()
        last = page.locator(f'li[data-promotion-id="{ids[2]}"] [data-what-if]')
        last.wait_for()
        assert "1 of the last 4 prompts would change" in last.inner_text()
        assert page.locator("[data-what-if-pending]").count() == 0
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        page.screenshot(path=f"/tmp/what-if-queue-{width}.png", full_page=True)
        assert errors == []
    finally:
        context.close()


def test_without_javascript_a_row_links_to_its_answer(live_server: Any, browser: Any) -> None:
    ids = set_up()
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        base: str = live_server.url
        login(page, base, "rhea")
        page.goto(f"{base}/approvals/")
        row = page.locator(f'li[data-promotion-id="{ids[1]}"]')
        row.get_by_role("link", name="What approving would do").click()
        page.wait_for_url(f"{base}/approvals/{ids[1]}/what-if/")
        assert "2 of the last 4 prompts would change" in page.locator("[data-what-if]").inner_text()
    finally:
        context.close()
