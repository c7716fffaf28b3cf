"""Memories in the real Chromium: saved through the API, seen on the lens, followed to
their detail page (SPEC §5.6, §9).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User

from lens.models import ApiToken, Team
from tests.factories import create_agent, grant, login, make_user
from tests.samples import SAMPLE_CONFIG

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

MEMORY_CONFIG: dict[str, Any] = {
    **SAMPLE_CONFIG,
    "routing_spec": "user-background",
    "background": {
        "sections": [
            {
                "id": "user_profile",
                "title": "About the User",
                "promotion": "auto",
                "entries": [{"key": "timezone", "value": "Europe/Warsaw"}],
            },
            {"id": "user_preferences", "title": "User Preferences", "promotion": "guarded"},
        ]
    },
}


def set_up(live_server: Any) -> tuple[str, str]:
    """A team with one member and the agent ``wren``; returns (base url, raw token)."""
    team = Team.objects.create(slug="acme", name="Acme")
    make_user("mira", team)
    create_agent(team, "wren", MEMORY_CONFIG)
    _token, raw = ApiToken.objects.issue(team)
    return live_server.url, raw


def bearer(raw: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {raw}", "Content-Type": "application/json"}


def save(page: Any, base: str, raw: str, memory: dict[str, Any]) -> str:
    response = page.request.post(
        f"{base}/api/agents/wren/memories", data=json.dumps(memory), headers=bearer(raw)
    )
    assert response.status == 201, response.text()
    body = response.json()
    assert set(body) == {"status", "id"}
    assert body["status"] == "saved"
    return str(body["id"])


def composition(page: Any, base: str, raw: str) -> dict[str, Any]:
    response = page.request.get(f"{base}/api/agents/wren/composition", headers=bearer(raw))
    assert response.ok
    return dict(response.json())


def test_a_memory_saved_through_the_api_opens_from_its_fragment(
    live_server: Any, page: Any
) -> None:
    base, raw = set_up(live_server)
    content = 'Mira <Kowalska> & "family" \u2014 caf\u00e9 \U0001f600'
    memory_id = save(
        page, base, raw, {"kind": "profile", "content": content, "label": "Name", "tags": ["intro"]}
    )
    api = composition(page, base, raw)
    fragments = [
        f
        for s in api["prompt"]["sections"]
        for f in s["fragments"]
        if memory_id in f.get("memory_ids", [])
    ]
    assert len(fragments) == 1
    expected = fragments[0]
    assert expected["source"] == "memory"
    assert expected["text"] == f"- **name**: {content}\n"
    assert all(d["memory_id"] != memory_id for d in api["report"]["drops"])

    login(page, base, "mira")
    page.goto(f"{base}/agents/wren/")
    fragment = page.locator(f'[data-memory-ids~="{memory_id}"]')
    assert fragment.count() == 1
    assert fragment.get_attribute("data-source") == "memory"
    assert fragment.get_attribute("data-memory-ids") == " ".join(expected["memory_ids"])
    assert fragment.evaluate("el => el.textContent") == expected["text"]
    # The whole prompt on the page still joins to the API's text.
    shown = page.eval_on_selector_all(
        "[data-section-text]",
        "els => els.map(el => [...el.querySelectorAll('[data-source]')]"
        ".map(f => f.textContent).join(''))",
    )
    assert shown == ["".join(f["text"] for f in s["fragments"]) for s in api["prompt"]["sections"]]

    fragment.hover()
    assert memory_id in (fragment.get_attribute("data-tip") or "")
    # The tooltip is an element of its own that the fragment names for screen readers.
    tooltip = page.locator(f"#{fragment.get_attribute('aria-describedby')}")
    tooltip.wait_for(state="visible")
    assert memory_id in tooltip.inner_text()

    fragment.click()
    page.wait_for_url(f"{base}/memories/{memory_id}/")
    assert page.locator("[data-memory-content]").evaluate("el => el.textContent") == content
    promotion = page.locator("[data-promotion]")
    assert promotion.locator(".status-badge").inner_text() == "approved"
    assert "user_profile" in promotion.inner_text()
    status = page.locator("[data-memory-status]")
    assert status.get_attribute("data-memory-status") == "composed"
    assert status.inner_text() == "In the prompt: It fills “name” in About the User."
    assert page.locator('[data-event="saved"]').count() == 1
    assert page.locator('[data-event="promoted"]').count() == 1


def test_a_guarded_memory_waits_in_the_drops_panel_and_opens_from_there(
    live_server: Any, page: Any
) -> None:
    base, raw = set_up(live_server)
    # A spec-declined memory too, so the awaiting-approval group is not the only one.
    declined_id = save(page, base, raw, {"kind": "fact", "content": "Visited Krak\u00f3w once."})
    # Content a browser would alter if it were not escaped exactly: a leading line feed
    # (dropped right after <pre>) and carriage returns (read as line feeds).
    content = "\nDark theme,\r\nalways.\r"
    memory_id = save(page, base, raw, {"kind": "preference", "content": content, "label": "theme"})
    drops = {d["memory_id"]: d["reason"] for d in composition(page, base, raw)["report"]["drops"]}
    assert drops == {memory_id: "awaiting-approval", declined_id: "spec-declined"}

    login(page, base, "mira")
    page.goto(f"{base}/agents/wren/")
    assert page.locator(f'[data-memory-ids~="{memory_id}"]').count() == 0
    drop = page.locator(f'[data-memory-id="{memory_id}"]')
    assert drop.count() == 1
    assert drop.get_attribute("data-drop-reason") == "awaiting-approval"
    assert page.locator(f'[data-memory-id="{declined_id}"]').get_attribute("data-drop-reason") == (
        "spec-declined"
    )

    if not drop.is_visible():  # its group may start collapsed: open it as a person would
        page.locator("details", has=drop).locator("summary").click()
    link = drop.locator("a.drop-memory")
    link.click()
    page.wait_for_url(f"{base}/memories/{memory_id}/")
    assert page.locator("[data-memory-content]").evaluate("el => el.textContent") == content
    assert page.locator("[data-promotion] .status-badge").inner_text() == "pending"
    status = page.locator("[data-memory-status]")
    assert status.get_attribute("data-memory-status") == "awaiting-approval"
    assert status.inner_text().startswith("Not in the prompt: Waiting for approval since ")
    assert page.locator('[data-event="queued"]').count() == 1
    status.get_by_role("link", name="Review it in the approval queue").click()
    page.wait_for_url(f"{base}/approvals/?agent=wren")
    assert page.locator(f'[data-promotion-id="{memory_id}"]').count() == 1


def test_an_over_budget_memory_says_needed_and_left_and_offers_no_revoke(
    live_server: Any, page: Any, settings: Any
) -> None:
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 40
    base, raw = set_up(live_server)
    grant(User.objects.get(username="mira"))  # a reviewer: Revoke would show if it applied
    story = " ".join(["A long story"] * 6)
    over = save(page, base, raw, {"kind": "profile", "content": story, "label": "bio"})
    kept = save(page, base, raw, {"kind": "profile", "content": "Mira", "label": "name"})
    needed = len("- **bio**: \n") + len(story)
    left = 40 - len("- **name**: Mira\n")

    login(page, base, "mira")
    page.goto(f"{base}/agents/wren/")
    drop = page.locator(f'li[data-memory-id="{over}"]')
    assert drop.get_attribute("data-drop-reason") == "over-budget"
    why = drop.locator(".drop-why")
    assert why.is_visible()
    assert why.inner_text() == (
        f"Over the memory budget: its line needs {needed} chars and {left} of 40 are left."
    )
    # The whole reason shows: nothing of it is clipped.
    assert why.evaluate("el => el.scrollHeight <= el.clientHeight + 1")
    assert page.locator("[data-memory-chars]").inner_text() == f"{40 - left} of 40 chars of memory"

    page.goto(f"{base}/memories/{kept}/")
    assert page.get_by_role("button", name="Revoke").count() == 1

    page.goto(f"{base}/memories/{over}/")
    status = page.locator("[data-memory-status]")
    assert status.get_attribute("data-memory-status") == "over-budget"
    assert f"needs {needed} chars and {left} of 40 are left" in status.inner_text()
    assert page.get_by_role("button", name="Revoke").count() == 0
    assert page.get_by_text("Take it out of the prompt").count() == 0


def test_a_reviewer_erases_a_memory_by_typing_its_id(live_server: Any, page: Any) -> None:
    base, raw = set_up(live_server)
    grant(User.objects.get(username="mira"))
    memory_id = save(
        page,
        base,
        raw,
        {"kind": "profile", "content": "Locker code 4471, ask Ottoline", "label": "Locker"},
    )
    delivered = page.request.post(
        f"{base}/api/agents/wren/deliveries", data="{}", headers=bearer(raw)
    )
    assert delivered.status == 201
    delivery_id = delivered.json()["delivery_id"]
    login(page, base, "mira")
    page.goto(f"{base}/memories/{memory_id}/")
    page.get_by_role("button", name="Erase", exact=True).click()
    page.wait_for_url(f"{base}/memories/{memory_id}/erase/**")
    assert (
        "1 stored prompt, delivered 1 time" in page.locator("[data-erase-deliveries]").inner_text()
    )

    page.get_by_label("Reason").fill("Request #42")
    page.get_by_label("Type the memory's id").fill("not-its-id")
    page.get_by_role("button", name="Erase permanently").click()
    assert "what was typed is not its id" in page.locator("[data-erase-errors]").inner_text()
    page.get_by_label("Type the memory's id").fill(memory_id)
    page.get_by_role("button", name="Erase permanently").click()

    page.wait_for_url(f"{base}/memories/{memory_id}/**")
    assert page.locator("[data-erased-by]").inner_text() == "mira"
    assert "Ottoline" not in page.content()
    page.goto(f"{base}/deliveries/{delivery_id}/")
    assert "redacted" in page.locator("[data-redacted]").inner_text()
    fragment = page.locator(f'[data-source="memory"][data-memory-ids="{memory_id}"]')
    assert fragment.evaluate("e => e.textContent") == "[erased]\n"
    assert "Ottoline" not in page.content()
