"""The lens as of a moment in the real Chromium (SPEC §14 "As of"): from a delivery's
link to the past view and back, the time control with and without JavaScript, at 390
and 1440 pixels, with no console error and no sideways scrolling."""

from __future__ import annotations

from typing import Any

import pytest

from lens.actors import SYSTEM
from lens.agents import get_agent
from lens.models import Team
from memory.deliveries.ledger import deliver
from tests.factories import create_agent, login, make_user, memory_config, remember

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def set_up() -> str:
    """Wren, protected, delivered once; a memory saved after: the delivery's id."""
    team = Team.objects.create(slug="acme", name="Acme")
    make_user("mira", team, is_staff=True)
    wren = create_agent(team, "wren", memory_config(protected=True))
    remember(wren, "profile", "The user's name is Doug.", label="name")
    delivery = deliver(get_agent(team, "wren"), SYSTEM).delivery
    remember(wren, "profile", "Doug moved to Lisbon.", label="city")
    return delivery.id


@pytest.mark.parametrize("width", [390, 1440])
def test_from_a_delivery_to_the_lens_at_its_moment_and_back(
    live_server: Any, browser: Any, width: int
) -> None:
    delivery = set_up()
    height = 844 if width < 1000 else 900
    context = browser.new_context(viewport={"width": width, "height": height})
    try:
        page = context.new_page()
        page.set_default_timeout(10_000)
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        base = live_server.url
        login(page, base, "mira")
        page.goto(f"{base}/deliveries/{delivery}/")
        page.get_by_role("link", name="The lens at this moment").click()
        page.wait_for_selector("[data-past-view]")
        # Said first, in view without scrolling.
        banner = page.locator("[data-past-view]")
        assert banner.inner_text().startswith("Past view")
        box = banner.bounding_box()
        assert box is not None
        assert box["y"] < height
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        prompt = page.locator("[data-prompt]").inner_text()
        assert "Doug" in prompt
        assert "Lisbon" not in prompt
        for hidden in (
            "[data-agent-tools-links]",
            "[data-edit-link]",
            "#stability",
            "[data-protected]",
        ):
            assert page.locator(hidden).count() == 0, hidden

        # The time control: a bad time is an error at the field, the lens now below it.
        field = page.get_by_label("The lens as of")
        field.fill("yesterday")
        page.get_by_role("button", name="Show", exact=True).click()
        page.wait_for_selector("[data-as-of-error]")
        assert page.get_by_label("The lens as of").get_attribute("aria-invalid") == "true"
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        # Empty is now: every action is back.
        page.get_by_label("The lens as of").fill("")
        page.get_by_role("button", name="Show", exact=True).click()
        page.wait_for_selector("[data-agent-tools-links]")
        assert page.locator("[data-past-view]").count() == 0
        assert "Lisbon" in page.locator("[data-prompt]").inner_text()
        # The 400 of the bad time is the only error the console saw (the browser reports
        # a document's error status).
        assert [e for e in errors if "400" not in e] == []
    finally:
        context.close()


def test_the_time_control_works_without_javascript(live_server: Any, browser: Any) -> None:
    set_up()
    context = browser.new_context(
        java_script_enabled=False, viewport={"width": 1280, "height": 900}
    )
    try:
        page = context.new_page()
        page.set_default_timeout(10_000)
        base = live_server.url
        login(page, base, "mira")
        page.goto(f"{base}/agents/wren/")
        page.get_by_label("The lens as of").fill("2000-01-01T00:00:00Z")
        page.get_by_role("button", name="Show", exact=True).click()
        # Before the agent existed: the not-found page.
        page.wait_for_selector('[data-error-page="404"]')
        page.goto(f"{base}/agents/wren/")
        page.get_by_label("The lens as of").fill("2999-01-01T00:00:00Z")
        page.get_by_role("button", name="Show", exact=True).click()
        page.wait_for_selector("[data-past-view]")
        assert "as_of=2999-01-01T00%3A00%3A00Z" in page.url
        page.get_by_role("link", name="Back to the prompt now").click()
        page.wait_for_selector("[data-agent-tools-links]")
    finally:
        context.close()
