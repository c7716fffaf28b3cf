"""Every page fits a 390-pixel phone without scrolling sideways, and a 1440-pixel desktop
(SPEC §9), with the demo's data and with long unbroken strings as real data holds them
(``tests.long_strings``): long words wrap, wide tables and diffs scroll inside their own
box, never the page.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.core.management import call_command

from kvstore.models import Key
from memory.models import Delivery, MemoryRecord
from tests.factories import login
from tests.long_strings import seed_long_strings
from tools.tour import seed_proposal, seed_webhooks
from webhooks.models import Endpoint

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def demo_pages() -> list[str]:
    call_command("seed_demo", "--force", verbosity=0)
    proposal = seed_proposal()
    seed_webhooks()
    wren_deliveries = list(
        Delivery.objects.filter(agent__slug="wren")
        .order_by("delivered_at")
        .values_list("pk", flat=True)
    )
    memory = MemoryRecord.objects.filter(agent__slug="wren").values_list("pk", flat=True)[0]
    key = Key.objects.values_list("key", flat=True)[0]
    return [
        "/",
        "/agents/wren/",
        "/agents/wren/try/?recall=coffee",
        "/agents/wren/drops/awaiting-approval/",
        "/agents/sentinel/",
        "/agents/wren/routing/",
        "/agents/sentinel/routing/",
        "/approvals/",
        f"/proposals/{proposal}/",
        "/memories/",
        "/memories/?q=coffee",
        f"/memories/{memory}/",
        "/kv/",
        f"/kv/{key}/",
        "/audit/",
        "/audit/?action=agent.revised",
        "/agents/wren/deliveries/",
        f"/deliveries/{wren_deliveries[2]}/",
        f"/deliveries/{wren_deliveries[3]}/diff/",
        f"/deliveries/{wren_deliveries[-1]}/live/",
        "/agents/wren/revisions/",
        "/agents/wren/revisions/1/",
        "/agents/wren/revisions/1/restore/",
        "/settings/webhooks/",
        *(f"/settings/webhooks/{pk}/" for pk in Endpoint.objects.values_list("pk", flat=True)),
    ]


@pytest.mark.parametrize("width", [390, 1440])
def test_every_page_fits_the_screen(live_server: Any, browser: Any, width: int) -> None:
    pages = demo_pages()
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    try:
        login(page, live_server.url, "demo", "demo")
        too_wide = {}
        for path in pages:
            response = page.goto(f"{live_server.url}{path}")
            assert response is not None
            assert response.status == 200, path
            scroll_width = page.evaluate("document.documentElement.scrollWidth")
            if scroll_width > width:
                too_wide[path] = scroll_width
        assert too_wide == {}
    finally:
        context.close()


# The innermost elements that stick out past the right edge of the screen, outside any
# box that scrolls sideways on its own: what makes the page wider, for the failure message.
OVERFLOWING = """() => {
  const width = document.documentElement.clientWidth;
  const clipped = el => {
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      if (getComputedStyle(p).overflowX !== "visible") return true;
    }
    return false;
  };
  const wide = [...document.body.querySelectorAll("*")].filter(el => {
    const box = el.getBoundingClientRect();
    return box.width > 0 && box.right > width + 0.5 && !clipped(el);
  });
  return wide.filter(el => !wide.some(other => other !== el && el.contains(other)))
    .slice(0, 5)
    .map(el => `${el.tagName.toLowerCase()}${[...el.classList].map(c => "." + c).join("")}`
      + ` ${Math.round(el.getBoundingClientRect().right)}px`);
}"""


@pytest.mark.parametrize("width", [390, 1440])
def test_every_page_fits_the_screen_with_long_unbroken_strings(
    live_server: Any, browser: Any, width: int
) -> None:
    call_command("seed_demo", "--force", verbosity=0)
    pages = seed_long_strings().pages()
    context = browser.new_context(
        viewport={"width": width, "height": 844 if width < 1000 else 900},
        is_mobile=width < 1000,
        has_touch=width < 1000,
    )
    page = context.new_page()
    try:
        login(page, live_server.url, "demo", "demo")
        too_wide = {}
        for path in pages:
            response = page.goto(f"{live_server.url}{path}")
            assert response is not None
            assert response.status == 200, path
            scroll_width = page.evaluate("document.documentElement.scrollWidth")
            if scroll_width > width:
                too_wide[path] = (scroll_width, page.evaluate(OVERFLOWING))
        assert too_wide == {}
    finally:
        context.close()


# Tables whose box (or the box that scrolls them) is narrower than what they hold: on a
# desktop, a column cut off at the card's edge or a scroll bar under the table.
CLIPPED_TABLES = """() => [...document.querySelectorAll("table")].flatMap(table => {
  const box = table.parentElement.classList.contains("table-scroll") ? table.parentElement : table;
  const overflow = box.scrollWidth - box.clientWidth;
  const card = table.closest(".card") || table;
  const past = [...table.querySelectorAll("td:last-child, th:last-child")]
    .filter(cell => cell.getBoundingClientRect().right > card.getBoundingClientRect().right + 0.5);
  return overflow > 0 || past.length
    ? [`${table.className}: ${overflow}px hidden, ${past.length} last cells past the card`] : [];
})"""


def test_the_audit_log_and_the_timeline_show_every_column_on_a_desktop(
    live_server: Any, browser: Any
) -> None:
    call_command("seed_demo", "--force", verbosity=0)
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    try:
        login(page, live_server.url, "demo", "demo")
        clipped = {}
        for path in ("/audit/", "/agents/wren/deliveries/"):
            page.goto(f"{live_server.url}{path}")
            if found := page.evaluate(CLIPPED_TABLES):
                clipped[path] = found
        assert clipped == {}
    finally:
        context.close()


@pytest.mark.parametrize("width", [390, 1440])
def test_the_routing_report_is_reached_by_the_page_s_own_scroll(
    live_server: Any, browser: Any, width: int
) -> None:
    """No column scrolling inside the scrolling page; on a phone, a link jumps to it."""
    call_command("seed_demo", "--force", verbosity=0)
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    try:
        login(page, live_server.url, "demo", "demo")
        page.goto(f"{live_server.url}/agents/wren/")
        side = page.locator(".lens-layout > .side")
        assert side.evaluate("el => getComputedStyle(el).overflowY") == "visible"
        jump = page.locator("[data-jump-report]")
        assert jump.is_visible() == (width < 1000)
        if width < 1000:
            jump.click()
            page.wait_for_url("**#drops")
            assert page.locator("#drops-h").is_visible()
        waiting = page.locator('[data-drop-group="awaiting-approval"]')
        assert waiting.get_attribute("open") is not None
    finally:
        context.close()
