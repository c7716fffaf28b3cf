"""The lens in the real Chromium, against a live server."""

from __future__ import annotations

from typing import Any

import pytest

from lens.models import ApiToken, Team
from tests.factories import create_agent, login, make_user
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
