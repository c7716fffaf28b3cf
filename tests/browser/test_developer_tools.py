"""The developer's tools in the real Chromium (SPEC §9, §11): the lens's links to its
tools page, a delivery's copy buttons, the keyboard hint only where there is a keyboard
pointer, the deliveries timeline as cards and the navigation's fade edge on a phone.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from lens.actors import SYSTEM
from lens.models import Agent, Team
from memory.core.deliveries import DeliveryInput
from memory.deliveries.ledger import deliver
from memory.models import Delivery
from tests.factories import create_agent, login, make_user, memory_config, remember

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1440, "height": 900}


@pytest.fixture
def wren() -> Agent:
    team = Team.objects.create(slug="acme", name="Acme")
    make_user("mira", team)
    return create_agent(team, "wren", memory_config())


def delivered(agent: Agent, session: str = "sess-1") -> Delivery:
    return deliver(agent, SYSTEM, DeliveryInput(session=session, model="gpt-4.1")).delivery


@pytest.fixture
def open_page(live_server: Any, browser: Any) -> Iterator[Any]:
    """A signed-in page in a context made to measure (viewport, touch, permissions)."""
    contexts = []

    def opened(**options: Any) -> Any:
        context = browser.new_context(**options)
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(10_000)
        login(page, live_server.url, "mira")
        return page

    yield opened
    for context in contexts:
        context.close()


def in_view(page: Any, selector: str) -> bool:
    return bool(
        page.locator(selector).evaluate(
            "el => { const r = el.getBoundingClientRect();"
            " return r.top >= 0 && r.top < window.innerHeight; }"
        )
    )


# --- the lens links to its tools ------------------------------------------------------


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1440", "390"])
def test_the_lens_head_leads_to_try_a_memory_in_view(
    live_server: Any, open_page: Any, wren: Agent, viewport: dict[str, int]
) -> None:
    page = open_page(viewport=viewport)
    page.goto(f"{live_server.url}/agents/wren/")
    link = page.get_by_role("link", name="Try a memory")
    assert in_view(page, "[data-tool-link=try]")  # seen without scrolling
    link.click()
    page.wait_for_url(f"{live_server.url}/agents/wren/try/#try")
    assert in_view(page, "#try")
    page.get_by_label("Kind").fill("profile")
    page.get_by_label("Label").fill("name")
    page.get_by_label("Content").fill("Doug.")
    page.evaluate("window.__marker = 1")
    page.get_by_role("button", name="Try it").click()
    page.locator("[data-try-outcome]").wait_for()
    assert page.locator("[data-try-outcome]").get_attribute("data-try-outcome") == "approved"
    assert page.evaluate("window.__marker") == 1  # htmx swapped the answer in


def test_the_tools_page_works_without_javascript(
    live_server: Any, browser: Any, wren: Agent
) -> None:
    context = browser.new_context(viewport=DESKTOP, java_script_enabled=False)
    try:
        page = context.new_page()
        login(page, live_server.url, "mira")
        page.goto(f"{live_server.url}/agents/wren/try/")
        page.get_by_label("Content").fill("Doug.")
        page.get_by_label("Kind").fill("profile")
        page.get_by_role("button", name="Try it").click()
        page.wait_for_url(f"{live_server.url}/agents/wren/try/#try")
        assert page.locator("[data-try-outcome]").get_attribute("data-try-outcome") == "approved"
    finally:
        context.close()


# --- a delivery's copy buttons ---------------------------------------------------------


def test_copy_buttons_copy_the_prompt_and_its_sha256(
    live_server: Any, open_page: Any, wren: Agent
) -> None:
    remember(wren, "profile", "Ada 👩🏽‍💻 e\u0301", label="name")
    delivery = delivered(wren)
    page = open_page(viewport=DESKTOP)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page.goto(f"{live_server.url}/deliveries/{delivery.id}/")
    download = page.request.get(f"{live_server.url}/deliveries/{delivery.id}/prompt.txt")
    assert download.status == 200

    page.get_by_role("button", name="Copy SHA-256").click()
    page.get_by_role("button", name="Copied").wait_for()
    assert page.evaluate("navigator.clipboard.readText()") == delivery.composition.prompt_sha256

    page.get_by_role("button", name="Copy prompt").click()
    page.wait_for_function("async () => (await navigator.clipboard.readText()).length > 64")
    assert page.evaluate("navigator.clipboard.readText()") == download.text()


def test_without_javascript_the_copy_buttons_stay_hidden_and_the_links_download(
    live_server: Any, browser: Any, wren: Agent
) -> None:
    delivery = delivered(wren)
    context = browser.new_context(viewport=DESKTOP, java_script_enabled=False)
    try:
        page = context.new_page()
        login(page, live_server.url, "mira")
        page.goto(f"{live_server.url}/deliveries/{delivery.id}/")
        assert page.locator("[data-copy-from], [data-copy-prompt]").count() == 2
        assert not page.locator("[data-copy-from]").is_visible()
        assert not page.locator("[data-copy-prompt]").is_visible()
        with page.expect_download() as info:
            page.get_by_role("link", name="Download .txt").click()
        assert info.value.suggested_filename == f"wren-{delivery.id}.txt"
    finally:
        context.close()


# --- the keyboard hint ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "shown"),
    [
        ({"viewport": DESKTOP}, True),
        ({"viewport": PHONE, "is_mobile": True, "has_touch": True}, False),
        # A tablet-sized touch screen: no hint either, whatever its width.
        (
            {"viewport": {"width": 1024, "height": 1366}, "is_mobile": True, "has_touch": True},
            False,
        ),
    ],
    ids=["mouse", "phone", "tablet"],
)
def test_the_keyboard_hint_shows_only_with_a_fine_pointer(
    live_server: Any, open_page: Any, wren: Agent, options: dict[str, Any], shown: bool
) -> None:
    page = open_page(**options)
    page.goto(f"{live_server.url}/approvals/")
    hint = page.locator("[data-shortcuts-hint]")
    # The script un-hides it; the style sheet decides whether it can be seen.
    page.wait_for_function("() => !document.querySelector('[data-shortcuts-hint]').hidden")
    assert hint.is_visible() is shown


# --- phones: the timeline as cards, the navigation's fade -------------------------------


def test_on_a_phone_the_timeline_rows_are_cards_without_sideways_scrolling(
    live_server: Any, open_page: Any, wren: Agent
) -> None:
    first = delivered(wren, session="a-rather-long-session-name-that-would-not-fit-a-cell")
    remember(wren, "profile", "Doug.", label="name")
    delivered(wren)
    page = open_page(viewport=PHONE, is_mobile=True, has_touch=True)
    page.goto(f"{live_server.url}/agents/wren/deliveries/")
    box = page.locator(".table-scroll")
    assert box.evaluate("el => el.scrollWidth <= el.clientWidth")
    rows = page.locator("tr[data-delivery-id]")
    assert rows.count() == 2
    for i in range(2):
        row = rows.nth(i)
        assert row.evaluate("el => getComputedStyle(el).display") == "grid"
        width = row.evaluate("el => el.getBoundingClientRect().width")
        assert width <= PHONE["width"]
    # Each cell says what it is, the header row being out of sight.
    cell = page.locator(f'tr[data-delivery-id="{first.id}"] [data-change]')
    label = cell.evaluate("el => getComputedStyle(el, '::before').content")
    assert label == '"Since the previous one"'
    # The header row is out of sight but still read out (1 px, clipped).
    head = page.locator(".deliveries thead").bounding_box()
    assert head is not None
    assert head["height"] <= 1


def test_on_a_desktop_the_timeline_stays_a_table(
    live_server: Any, open_page: Any, wren: Agent
) -> None:
    delivered(wren)
    page = open_page(viewport=DESKTOP)
    page.goto(f"{live_server.url}/agents/wren/deliveries/")
    row = page.locator("tr[data-delivery-id]")
    assert row.evaluate("el => getComputedStyle(el).display") == "table-row"
    assert page.locator(".deliveries thead").is_visible()


def fades(page: Any) -> tuple[str, str]:
    """The navigation's fade at its start and at its end, as computed now."""
    start, end = page.locator(".mainnav").evaluate(
        "el => { const s = getComputedStyle(el);"
        " return [s.getPropertyValue('--nav-fade-start'), s.getPropertyValue('--nav-fade-end')]; }"
    )
    return str(start), str(end)


def test_on_a_phone_the_navigation_fades_where_more_links_lie(
    live_server: Any, open_page: Any, wren: Agent
) -> None:
    page = open_page(viewport=PHONE, is_mobile=True, has_touch=True)
    page.goto(f"{live_server.url}/approvals/")
    nav = page.locator(".mainnav")
    assert nav.evaluate("el => el.scrollWidth > el.clientWidth")  # it does scroll
    assert nav.evaluate("el => getComputedStyle(el).maskImage") != "none"
    assert fades(page) == ("0px", "32px")  # more to the right only
    nav.evaluate("el => { el.scrollLeft = el.scrollWidth; }")
    page.wait_for_function(
        "() => getComputedStyle(document.querySelector('.mainnav'))"
        ".getPropertyValue('--nav-fade-end') === '0px'"
    )
    assert fades(page) == ("32px", "0px")  # at the end: more to the left only


def test_on_a_desktop_the_navigation_does_not_fade(
    live_server: Any, open_page: Any, wren: Agent
) -> None:
    page = open_page(viewport=DESKTOP)
    page.goto(f"{live_server.url}/approvals/")
    assert page.locator(".mainnav").evaluate("el => getComputedStyle(el).maskImage") == "none"
