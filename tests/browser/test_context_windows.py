"""The context-window figure in the real Chromium: with the demo's prompts pushed past
half and past the whole of their windows, the lens, a delivery and the timelines say
"Warning" and "Alarm" in words, and axe-core finds no serious or critical violation in
light or dark mode (the warning and alarm colours included), nor at 390 pixels."""

from __future__ import annotations

from typing import Any

import pytest

from lens.models import Agent
from memory.composition import compose
from memory.models import Delivery
from tests.browser.axe import Problems, axe_context, check, report
from tools.tour import log_in, seed

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def tight_windows(settings: Any) -> None:
    """Wren (gpt-4o) at two thirds of its window, Sentinel (Claude) over its own."""
    tokens = {
        slug: compose(Agent.objects.get(slug=slug)).tokens.total for slug in ("wren", "sentinel")
    }
    settings.MODEL_CONTEXT_WINDOWS = {
        "gpt-4o": tokens["wren"] * 3 // 2,
        "claude-": tokens["sentinel"] * 9 // 10,
    }


@pytest.mark.parametrize(("scheme", "width"), [("light", 1440), ("dark", 1440), ("light", 390)])
def test_warnings_and_alarms_are_said_in_words_and_pass_axe(
    live_server: Any, browser: Any, settings: Any, scheme: str, width: int
) -> None:
    seed()
    tight_windows(settings)
    sentinel_delivery = Delivery.objects.filter(agent__slug="sentinel").latest("delivered_at")
    options = axe_context(scheme)
    options["viewport"] = {"width": width, "height": 844 if width < 1000 else 900}
    context = browser.new_context(**options)
    problems: Problems = {}
    try:
        page = context.new_page()
        page.set_default_timeout(20_000)
        log_in(page, live_server.url, "demo")
        # The newest prompt (the lens, a timeline's first row) is the one at that level;
        # older deliveries held fewer memories.
        for path, level in (
            ("/agents/wren/", "warning"),
            ("/agents/sentinel/", "alarm"),
            ("/agents/wren/deliveries/", "warning"),
            ("/agents/sentinel/deliveries/", "alarm"),
            (f"/deliveries/{sentinel_delivery.id}/", "alarm"),
        ):
            response = page.goto(f"{live_server.url}{path}")
            assert response is not None
            assert response.status == 200, path
            figures = page.locator("[data-context-window]")
            assert figures.first.get_attribute("data-context-level") == level, path
            word = {"warning": "Warning:", "alarm": "Alarm:"}[level]
            assert word in figures.first.inner_text(), path
            # Nothing sideways: the page itself never scrolls horizontally.
            assert page.evaluate("document.documentElement.scrollWidth") <= width, path
            check(page, f"{width} px {scheme} {path}", problems)
    finally:
        context.close()
    assert not problems, report(scheme, problems)
