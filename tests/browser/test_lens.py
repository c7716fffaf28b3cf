"""The lens in the real Chromium, against a live server."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from lens.actors import Actor
from lens.models import ApiToken, Team
from memory.decisions import decide
from tests.factories import create_agent, login, make_user, memory_config, remember
from tests.samples import SAMPLE_CONFIG

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ODD_CONFIG: dict[str, Any] = {
    **SAMPLE_CONFIG,
    "name": "Odd <one> & \u05e9",
    "background": {
        "sections": [
            {
                "id": "odd",
                "title": "Odd\r\n# Heading",
                "promotion": "locked",
                "entries": [
                    {"key": "html", "value": "<b>bold</b> & <script>x()</script>"},
                    {"key": "lines", "value": "one\u2028two\n\n- three"},
                    {"key": "emoji", "value": "caf\u00e9 \U0001f600 \u05e9\u05dc\u05d5\u05dd"},
                ],
            }
        ]
    },
}


def test_the_lens_shows_counts_and_fragments_that_join_to_the_api_text(
    live_server: Any, page: Any
) -> None:
    team = Team.objects.create(slug="acme", name="Acme")
    make_user("mira", team)
    create_agent(team, "wren")
    create_agent(team, "odd", ODD_CONFIG)
    _token, raw = ApiToken.objects.issue(team)
    base = live_server.url

    login(page, base, "mira")
    card = page.locator('[data-agent="wren"]')
    assert card.locator("[data-counts]").inner_text() == "2 sections \u00b7 4 entries"
    assert page.locator('[data-agent="odd"] [data-counts]').inner_text() == (
        "1 section \u00b7 3 entries"
    )

    for slug in ("wren", "odd"):
        api = page.request.get(
            f"{base}/api/agents/{slug}/composition", headers={"Authorization": f"Bearer {raw}"}
        )
        assert api.ok
        sections = api.json()["prompt"]["sections"]

        page.goto(f"{base}/")
        page.locator(f'a[href="/agents/{slug}/"]').click()
        page.wait_for_url(f"{base}/agents/{slug}/")
        shown = page.eval_on_selector_all(
            "[data-section-text]",
            "els => els.map(el => [...el.querySelectorAll('[data-source]')].map(f => f.textContent).join(''))",
        )
        assert shown == ["".join(f["text"] for f in s["fragments"]) for s in sections]
        sources = page.eval_on_selector_all(
            "[data-source]", "els => els.map(el => el.dataset.source)"
        )
        assert set(sources) == {"authored"}
        assert len(sources) == sum(len(s["fragments"]) for s in sections)


def test_the_copy_button_copies_exactly_the_api_prompt(live_server: Any, browser: Any) -> None:
    team = Team.objects.create(slug="acme", name="Acme")
    make_user("mira", team)
    create_agent(team, "odd", ODD_CONFIG)
    _token, raw = ApiToken.objects.issue(team)
    base = live_server.url
    context = browser.new_context(permissions=["clipboard-read", "clipboard-write"])
    page = context.new_page()
    try:
        login(page, base, "mira")
        page.goto(f"{base}/agents/odd/")
        page.get_by_role("button", name="Copy prompt").click()
        page.get_by_role("button", name="Copied").wait_for()
        copied = page.evaluate("navigator.clipboard.readText()")
        api = page.request.get(
            f"{base}/api/agents/odd/composition", headers={"Authorization": f"Bearer {raw}"}
        ).json()
        expected = "\n\n".join(
            "".join(f["text"] for f in s["fragments"]) for s in api["prompt"]["sections"]
        )
        assert copied == expected
    finally:
        context.close()


# --- the Context in cards ----------------------------------------------------------------


def cards_config() -> dict[str, Any]:
    """``memory_config()`` with three more authored sections: cards with and without memory."""
    config = memory_config()
    config["background"]["sections"] += [
        {
            "id": f"extra_{s}",
            "title": f"Extra {s}",
            "entries": [{"key": f"k{e}", "value": f"value {s}.{e}\u2028wrapped"} for e in range(3)],
        }
        for s in range(3)
    ]
    config["awareness"] = [{"name": "Calendar", "description": "Next 14 days"}]
    return config


def with_memories() -> str:
    """Acme with mira, a member, and Wren with memories in two sections (one approved by a
    person); returns an API token."""
    team = Team.objects.create(slug="acme", name="Acme")
    make_user("mira", team)
    agent = create_agent(team, "wren", cards_config())
    reviewer = make_user("rhea", team)
    remember(agent, "profile", "Mira " + "who likes long walks by the sea " * 6, label="name")
    remember(agent, "profile", "Gdańsk", label="city")
    drink = remember(agent, "preference", "Tea, never coffee.", label="drink")
    decide(drink, True, Actor.for_user(reviewer))
    _token, raw = ApiToken.objects.issue(team)
    return raw


def open_lens(page: Any, base: str) -> None:
    """mira logged in, on Wren's lens."""
    login(page, base, "mira")
    page.goto(f"{base}/agents/wren/")


def api_composition(page: Any, base: str, raw: str) -> dict[str, Any]:
    response = page.request.get(
        f"{base}/api/agents/wren/composition", headers={"Authorization": f"Bearer {raw}"}
    )
    assert response.ok
    return dict(response.json())


def test_the_fragments_on_the_page_are_the_api_fragments_one_to_one(
    live_server: Any, page: Any
) -> None:
    raw = with_memories()
    base = live_server.url
    open_lens(page, base)
    api = api_composition(page, base, raw)

    shown = page.eval_on_selector_all(
        "[data-source]",
        "els => els.map(el => [el.dataset.source, el.textContent,"
        " (el.dataset.memoryIds || '').split(' ').filter(Boolean)])",
    )
    expected = [
        [f["source"], f["text"], f.get("memory_ids", [])]
        for s in api["prompt"]["sections"]
        for f in s["fragments"]
    ]
    assert shown == expected
    # One card per Background section with entries, each starting a fragment of its own.
    card_ids = page.eval_on_selector_all(
        "[data-block=background]", "els => els.map(el => el.dataset.sectionId)"
    )
    assert card_ids == ["user_profile", "user_preferences", "extra_0", "extra_1", "extra_2"]
    # A memory entry that wraps is marked on every line (the bar is cloned per line).
    long_entry = page.locator('[data-source="memory"]').first
    assert long_entry.evaluate("el => el.getClientRects().length") > 1
    assert long_entry.evaluate("el => getComputedStyle(el).boxDecorationBreak") == "clone"


def test_copy_prompt_copies_the_api_prompt_from_collapsed_cards_too(
    live_server: Any, browser: Any
) -> None:
    raw = with_memories()
    base = live_server.url
    context = browser.new_context(permissions=["clipboard-read", "clipboard-write"])
    page = context.new_page()
    try:
        open_lens(page, base)
        card = page.locator("#section-extra_1")
        text = card.locator("pre")
        assert text.is_visible()
        card.locator("summary").click()
        text.wait_for(state="hidden")
        assert card.get_attribute("open") is None
        page.get_by_role("button", name="Copy prompt").click()
        page.get_by_role("button", name="Copied").wait_for()
        copied = page.evaluate("navigator.clipboard.readText()")
        api = api_composition(page, base, raw)
        expected = "\n\n".join(
            "".join(f["text"] for f in s["fragments"]) for s in api["prompt"]["sections"]
        )
        assert copied == expected
        card.locator("summary").click()
        text.wait_for(state="visible")
    finally:
        context.close()


def test_memory_only_toggles_without_a_reload_and_works_without_javascript(
    live_server: Any, browser: Any
) -> None:
    with_memories()
    base = live_server.url
    page = browser.new_context().new_page()
    try:
        open_lens(page, base)
        page.evaluate("window.stillHere = true")
        persona = page.locator('[data-section="Persona"]')
        page.get_by_role("link", name="Memory only").click()
        page.wait_for_url(f"{base}/agents/wren/?only=memory")
        persona.wait_for(state="hidden")
        assert page.evaluate("window.stillHere") is True  # no reload
        visible = page.eval_on_selector_all(
            "[data-block=background]",
            "els => els.filter(el => el.checkVisibility()).map(el => el.dataset.sectionId)",
        )
        assert visible == ["user_profile", "user_preferences"]
        assert page.locator("[data-filter-note]").is_visible()
        page.locator(".lens-filter").get_by_role("link", name="All sections").click()
        persona.wait_for(state="visible")
        assert page.url == f"{base}/agents/wren/"
    finally:
        page.context.close()

    page = browser.new_context(java_script_enabled=False).new_page()
    try:
        open_lens(page, base)
        page.get_by_role("link", name="Memory only").click()
        page.wait_for_url(f"{base}/agents/wren/?only=memory")
        assert page.locator('[data-section="Persona"]').count() == 0
        assert page.locator("[data-block=background]").count() == 2
        assert (
            "Showing only the 2 Background sections"
            in page.locator("[data-filter-note]").inner_text()
        )
    finally:
        page.context.close()


def test_a_memory_fragment_s_tooltip_shows_on_keyboard_focus(live_server: Any, page: Any) -> None:
    with_memories()
    base = live_server.url
    open_lens(page, base)
    drink = page.locator('[data-source="memory"]', has_text="drink")
    tip_id = drink.get_attribute("aria-describedby")
    tip = page.locator(f"#{tip_id}")
    assert tip.get_attribute("role") == "tooltip"
    assert not tip.is_visible()

    # Tab from the card just above to the fragment: keyboard focus only.
    page.locator("#section-user_preferences summary").focus()
    page.keyboard.press("Tab")
    assert drink.evaluate("el => el === document.activeElement")
    tip.wait_for(state="visible")
    assert "approved by rhea" in tip.inner_text()
    expect(drink).to_have_accessible_description(re.compile(r"preference “drink” · memory "))
    outline = drink.evaluate("el => getComputedStyle(el).outlineStyle")
    assert outline != "none"
    page.keyboard.press("Escape")
    tip.wait_for(state="hidden")
