"""Accessibility in the real Chromium: axe-core (``tests.browser.axe``) finds no serious
or critical violation on any page of the product, in light and in dark mode, nor with
long unbroken strings (``tests.long_strings``) that make boxes scroll; every page starts
with a skip link; keyboard focus is always visible.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from lens.models import Membership, Team
from tests.browser.axe import Problems, axe_context, check, report
from tests.factories import login
from tests.long_strings import seed_long_strings
from tools.tour import log_in, seed, stops, walk

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_no_page_has_a_serious_or_critical_axe_violation(
    live_server: Any, browser: Any, scheme: str
) -> None:
    options = axe_context(scheme)
    seed()
    tour = stops()
    problems: Problems = {}
    for stop, page in walk(browser, live_server.url, tour, **options):
        check(page, f"{stop.name} {stop.path}", problems)
    assert not problems, report(scheme, problems)


# Boxes that scroll on their own at 1440 x 900 with the long strings: each must be
# reachable by the keyboard (axe's scrollable-region-focusable), so each must scroll here.
SCROLLING = """() => [...document.querySelectorAll("[data-diff], [data-memory-content]")]
  .filter(el => el.scrollHeight > el.clientHeight).length"""


@pytest.mark.parametrize("width", [390, 1440])
def test_pages_with_long_unbroken_strings_have_no_serious_or_critical_axe_violation(
    live_server: Any, browser: Any, width: int
) -> None:
    seed()
    seeded = seed_long_strings()
    options = axe_context("light")
    options["viewport"] = {"width": width, "height": 844 if width < 1000 else 900}
    context = browser.new_context(**options, is_mobile=width < 1000)
    problems: Problems = {}
    try:
        page = context.new_page()
        page.set_default_timeout(20_000)
        login(page, live_server.url, "demo", "demo")
        for path in seeded.pages():
            response = page.goto(f"{live_server.url}{path}")
            assert response is not None
            assert response.status == 200, path
            check(page, f"{width} px {path}", problems)
            if width == 1440 and path in (
                f"/deliveries/{seeded.deliveries[0]}/live/",
                f"/memories/{seeded.longest}/",
            ):
                assert page.evaluate(SCROLLING) == 1, path
    finally:
        context.close()
    assert not problems, report("light", problems)


def test_the_tour_visits_every_kind_of_page(db: None) -> None:
    seed()
    names = {stop.name for stop in stops()}
    expected = {
        "agents",
        "lens-wren",
        "try",
        "drops",
        "approvals",
        "proposal",
        "memories",
        "memories-search",
        "memory-approved",
        "memory-revoke",
        "memory-erase",
        "memory-pending",
        "memory-rejected",
        "audit",
        "kv",
        "kv-key",
        "deliveries",
        "routing",
        "delivery",
        "delivery-diff",
        "delivery-live",
        "lens-past",
        "revisions",
        "revision",
        "revision-restore",
        "webhooks",
        "webhook",
        "webhook-failing",
        "webhook-delete",
        "my-tokens",
        "admin",
        "admin-agent",
        "not-found",
        "no-team",
        "login",
    }
    assert expected <= names, expected - names


def _focused(page: Any) -> dict[str, Any]:
    found: dict[str, Any] = page.evaluate(
        """() => {
          const el = document.activeElement;
          const style = getComputedStyle(el);
          const box = el.getBoundingClientRect();
          return {tag: el.tagName.toLowerCase(), id: el.id, cls: el.className,
                  text: el.textContent.trim(), outline: style.outlineStyle,
                  outlineWidth: parseFloat(style.outlineWidth),
                  top: box.top, bottom: box.bottom, width: box.width};
        }"""
    )
    return found


@pytest.mark.parametrize("path", ["/", "/memories/", "/kv/"])
def test_the_skip_link_comes_first_shows_on_focus_and_moves_focus_to_the_content(
    live_server: Any, page: Any, path: str
) -> None:
    seed()
    log_in(page, live_server.url, "demo")
    page.goto(f"{live_server.url}{path}")
    hidden = page.locator(".skip-link").bounding_box()
    assert hidden is not None
    assert hidden["y"] + hidden["height"] <= 0  # out of sight until focused

    page.keyboard.press("Tab")
    first = _focused(page)
    assert (first["cls"], first["text"]) == ("skip-link", "Skip to content")
    assert first["top"] >= 0
    assert first["bottom"] > first["top"]  # on screen now
    assert first["outline"] != "none"
    assert first["outlineWidth"] >= 2

    page.keyboard.press("Enter")
    landed = _focused(page)
    assert (landed["tag"], landed["id"]) == ("main", "content")
    # The next Tab goes into the content, past the top bar.
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.closest('header') === null")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_keyboard_focus_is_visible_on_links_buttons_inputs_and_summaries(
    live_server: Any, browser: Any, scheme: str
) -> None:
    seed()
    context = browser.new_context(color_scheme=scheme, viewport={"width": 1440, "height": 900})
    page = context.new_page()
    try:
        page.goto(f"{live_server.url}/accounts/login/")
        seen: dict[str, dict[str, Any]] = {}
        # Round the page: the username field (autofocus), password, Log in, then from
        # the top again: skip link, brand.
        for _ in range(8):
            page.keyboard.press("Tab")
            focused = _focused(page)
            if focused["tag"] != "body":
                seen.setdefault(focused["tag"], focused)
        assert {"a", "input", "button"} <= set(seen), seen
        for tag, focused in seen.items():
            assert focused["outline"] != "none", (tag, focused)
            assert focused["outlineWidth"] >= 2, (tag, focused)

        # In two teams, the top bar has the team switcher (a <summary>).
        demo = User.objects.get(username="demo")
        Membership.objects.create(team=Team.objects.create(slug="zeta", name="Zeta"), user=demo)
        log_in(page, live_server.url, "demo")
        page.locator(".switcher summary").focus()
        page.keyboard.press("Shift+Tab")
        page.keyboard.press("Tab")  # focused by the keyboard, so :focus-visible applies
        focused = _focused(page)
        assert focused["tag"] == "summary"
        assert focused["outline"] != "none"
        assert focused["outlineWidth"] >= 2
    finally:
        context.close()
