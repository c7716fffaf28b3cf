"""Deliveries in the real Chromium (SPEC §11): a past delivery opens from the timeline,
its fragments join to the prompt that was recorded, and a memory link leads to the
memory, which lists the delivery back.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.browser.test_memory import bearer, save, set_up
from tests.factories import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def deliver(page: Any, base: str, raw: str, session: str) -> dict[str, Any]:
    response = page.request.post(
        f"{base}/api/agents/wren/deliveries",
        data=json.dumps({"session": session, "model": "gpt-4.1"}),
        headers=bearer(raw),
    )
    assert response.status == 201, response.text()
    return dict(response.json())


def test_a_past_delivery_shows_the_prompt_as_recorded_and_links_its_memories(
    live_server: Any, page: Any
) -> None:
    base, raw = set_up(live_server)
    name = save(page, base, raw, {"kind": "profile", "content": "Mira", "label": "name"})
    past = deliver(page, base, raw, "sess-a")
    # Later changes: the memory is superseded and another one arrives.
    newer = save(
        page,
        base,
        raw,
        {"kind": "profile", "content": "Mira K.", "label": "name", "supersedes": name},
    )
    save(page, base, raw, {"kind": "profile", "content": "Lyon", "label": "city"})
    deliver(page, base, raw, "sess-b")
    recorded = "\n\n".join(
        "".join(f["text"] for f in s["fragments"])
        for s in past["composition"]["prompt"]["sections"]
    )

    login(page, base, "mira")
    page.goto(f"{base}/agents/wren/deliveries/")
    rows = page.locator("tr[data-delivery-id]")
    assert rows.count() == 2
    assert rows.nth(0).get_attribute("data-delivery-id") != past["delivery_id"]
    change = rows.nth(0).locator("[data-change]").inner_text()
    assert "+2" in change
    assert "−1" in change
    page.locator(f'tr[data-delivery-id="{past["delivery_id"]}"] a').first.click()
    page.wait_for_url(f"{base}/deliveries/{past['delivery_id']}/")

    shown = page.eval_on_selector_all(
        "[data-section-text]",
        "els => els.map(el => [...el.querySelectorAll('[data-source]')]"
        ".map(f => f.textContent).join('')).join('\\n\\n')",
    )
    assert shown == recorded
    fate = page.locator(f'[data-memory-id="{name}"]')
    assert fate.get_attribute("data-fate") == "superseded"
    assert fate.locator(f'[data-newer="{newer}"]').inner_text() == "“Mira K.”"

    fragment = page.locator(f'[data-source="memory"][data-memory-ids~="{name}"]')
    assert fragment.evaluate("el => el.textContent") == "- **name**: Mira\n"
    assert "superseded by" in (fragment.get_attribute("data-tip") or "")
    fragment.click()
    page.wait_for_url(f"{base}/memories/{name}/")
    delivered_in = page.locator("[data-delivered-in]")
    assert delivered_in.get_attribute("data-delivered-in") == "1"
    assert delivered_in.locator(f'[data-delivery-id="{past["delivery_id"]}"]').count() == 1


def test_the_diff_page_marks_lines_and_memories(live_server: Any, page: Any) -> None:
    base, raw = set_up(live_server)
    deliver(page, base, raw, "sess-a")
    city = save(page, base, raw, {"kind": "profile", "content": "Lyon", "label": "city"})
    later = deliver(page, base, raw, "sess-b")

    login(page, base, "mira")
    page.goto(f"{base}/deliveries/{later['delivery_id']}/diff/")
    added = page.locator(".dl-add")
    assert added.count() == 1
    assert added.inner_text() == "+- **city**: Lyon"
    colour = added.evaluate("el => getComputedStyle(el).backgroundColor")
    assert colour not in ("rgba(0, 0, 0, 0)", "transparent")
    page.locator(f'[data-memory-added="{city}"] a').click()
    page.wait_for_url(f"{base}/memories/{city}/")
