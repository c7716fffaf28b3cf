"""The approval queue in the real Chromium: deciding guarded promotions one at a time,
in bulk, racing another reviewer, and without JavaScript (SPEC §5.4, §9).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import Permission

from lens.actors import SYSTEM
from lens.models import Agent, Team
from memory.core.records import MemoryInput
from memory.models import Promotion
from memory.saving import Saved, save_memory
from tests.factories import create_agent, login, make_user
from tests.samples import SAMPLE_CONFIG

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENSHOT = "/tmp/approvals-test.png"

APPROVAL_CONFIG: dict[str, Any] = {
    **SAMPLE_CONFIG,
    "routing_spec": "user-background",
    "background": {
        "sections": [
            {"id": "user_profile", "title": "About the User", "promotion": "auto"},
            {"id": "user_preferences", "title": "User Preferences", "promotion": "guarded"},
        ]
    },
}


def set_up(*reviewers: str) -> tuple[Team, Agent]:
    """A team whose members ``reviewers`` may decide promotions, and the agent ``wren``."""
    team = Team.objects.create(slug="acme", name="Acme")
    permission = Permission.objects.get(codename="approve_promotion")
    for username in reviewers:
        user = make_user(username, team)
        user.user_permissions.add(permission)
    return team, create_agent(team, "wren", APPROVAL_CONFIG)


def pending(agent: Agent, label: str, content: str) -> str:
    """Save a preference (routed to the guarded section, so pending); return its id."""
    saved = save_memory(agent, MemoryInput(kind="preference", content=content, label=label), SYSTEM)
    assert isinstance(saved, Saved), saved
    assert Promotion.objects.get(pk=saved.id).status == "pending"
    return saved.id


def row(page: Any, memory_id: str) -> Any:
    return page.locator(f'li[data-promotion-id="{memory_id}"]')


def focused_row(page: Any) -> str | None:
    """The row holding focus (the row itself or anything in it), by its promotion id."""
    promotion_id: str | None = page.evaluate(
        "() => document.activeElement.closest('li[data-promotion-id]')?.dataset.promotionId ?? null"
    )
    return promotion_id


def wait_for_focus_in(page: Any, memory_id: str) -> None:
    page.wait_for_function(
        "id => document.activeElement.closest('li[data-promotion-id]')?.dataset.promotionId === id",
        arg=memory_id,
    )


def pending_total(page: Any) -> int:
    return int(page.locator("#pending-count").inner_text())


def status_of(memory_id: str) -> str:
    return str(Promotion.objects.get(pk=memory_id).status)


def open_queue(live_server: Any, page: Any, username: str) -> str:
    """Log ``username`` in and open the approval queue; returns the server's address."""
    base: str = live_server.url
    login(page, base, username)
    page.goto(f"{base}/approvals/")
    return base


def test_approving_one_row_swaps_it_in_place_and_composes_the_memory(
    live_server: Any, page: Any
) -> None:
    _team, agent = set_up("rhea")
    first = pending(agent, "theme", "Dark theme, always.")
    second = pending(agent, "units", "Metric units.")
    third = pending(agent, "greeting", "No small talk before 9.")
    base = open_queue(live_server, page, "rhea")
    assert page.locator("li[data-promotion-id]").count() == 3
    assert pending_total(page) == 3
    page.evaluate("window.__marker = 1")

    target = row(page, second)
    assert "Metric units." in target.inner_text()
    target.get_by_role("button", name="Approve", exact=True).click()

    decided = page.locator(f'li[data-promotion-id="{second}"][data-decision="approved"]')
    decided.wait_for()
    assert "Approved by rhea" in decided.inner_text()
    # Only Undo, for a few seconds; and focus moved on to the next pending row.
    assert [b.inner_text() for b in decided.get_by_role("button").all()] == ["Undo"]
    wait_for_focus_in(page, third)
    page.locator("#pending-count", has_text="2").wait_for()
    assert pending_total(page) == 2
    assert page.locator("#pending-count").get_attribute("data-pending-total") == "2"
    # htmx swapped the row: the page itself was never reloaded.
    assert page.evaluate("window.__marker") == 1
    assert page.url == f"{base}/approvals/"
    # The other rows are untouched and still decidable.
    for other in (first, third):
        assert row(page, other).get_by_role("button", name="Approve", exact=True).count() == 1
    assert status_of(second) == "approved"
    assert status_of(first) == status_of(third) == "pending"
    page.screenshot(path=SCREENSHOT, full_page=True)

    page.goto(f"{base}/agents/wren/")
    fragment = page.locator(f'[data-memory-ids~="{second}"]')
    assert fragment.count() == 1
    assert fragment.get_attribute("data-source") == "memory"
    assert fragment.evaluate("el => el.textContent") == "- **units**: Metric units.\n"
    for other in (first, third):
        drop = page.locator(f'[data-memory-id="{other}"]')
        assert drop.get_attribute("data-drop-reason") == "awaiting-approval"


def test_rejecting_one_row_sends_its_reason(live_server: Any, page: Any) -> None:
    _team, agent = set_up("rhea")
    keep = pending(agent, "theme", "Dark theme, always.")
    memory_id = pending(agent, "units", "Imperial units.")
    reason = 'Contradicts the profile \u2014 "metric" & <b>not</b> this'
    base = open_queue(live_server, page, "rhea")
    page.evaluate("window.__marker = 1")
    target = row(page, memory_id)
    target.get_by_role("textbox", name="Reason for rejecting", exact=True).fill(reason)
    target.get_by_role("button", name="Reject", exact=True).click()

    decided = page.locator(f'li[data-promotion-id="{memory_id}"][data-decision="rejected"]')
    decided.wait_for()
    assert decided.inner_text().startswith(
        f"Rejected by rhea: “units: Imperial units.” Reason: {reason}"
    )
    page.locator("#pending-count", has_text="1").wait_for()
    assert page.evaluate("window.__marker") == 1
    assert status_of(memory_id) == "rejected"
    assert status_of(keep) == "pending"
    promotion = Promotion.objects.get(pk=memory_id)
    assert promotion.decision_note == reason
    assert promotion.decided_by is not None
    assert promotion.decided_by.get_username() == "rhea"

    page.goto(f"{base}/agents/wren/")
    assert page.locator(f'[data-memory-ids~="{memory_id}"]').count() == 0
    drop = page.locator(f'[data-memory-id="{memory_id}"][data-drop-reason="rejected"]')
    assert drop.count() == 1

    page.goto(f"{base}/memories/{memory_id}/")
    assert page.locator("[data-promotion] .status-badge").inner_text() == "rejected"
    assert reason in page.locator("[data-promotion]").inner_text()
    assert reason in page.locator('[data-event="rejected"]').inner_text()
    assert page.locator("[data-memory-status]").get_attribute("data-memory-status") == "rejected"


def test_select_all_then_approve_selected_composes_every_row(live_server: Any, page: Any) -> None:
    _team, agent = set_up("rhea")
    ids = [
        pending(agent, label, content)
        for label, content in [
            ("theme", "Dark theme."),
            ("units", "Metric."),
            ("language", "Polish."),
            ("tone", "Brief."),
        ]
    ]
    base = open_queue(live_server, page, "rhea")
    page.evaluate("window.__marker = 1")
    boxes = page.locator('input[name="selected"][form="bulk"]')
    assert boxes.count() == 4
    assert not any(boxes.nth(i).is_checked() for i in range(4))
    page.locator("[data-select-all]").check()
    assert all(boxes.nth(i).is_checked() for i in range(4))
    page.get_by_role("button", name="Approve selected", exact=True).click()

    page.locator("#queue", has_text="Approved 4 memories").wait_for()
    assert page.locator("li[data-promotion-id]").count() == 0
    assert "Nothing to review" in page.locator("#queue").inner_text()
    page.locator("#pending-count", has_text="0").wait_for()
    assert page.evaluate("window.__marker") == 1
    assert [status_of(i) for i in ids] == ["approved"] * 4

    page.goto(f"{base}/agents/wren/")
    for memory_id in ids:
        fragment = page.locator(f'[data-memory-ids~="{memory_id}"]')
        assert fragment.count() == 1
        assert fragment.get_attribute("data-source") == "memory"
    assert page.locator("[data-drop-reason]").count() == 0


def test_a_stale_row_tells_the_second_reviewer_who_decided(live_server: Any, browser: Any) -> None:
    _team, agent = set_up("rhea", "bram")
    memory_id = pending(agent, "theme", "Dark theme, always.")
    base = live_server.url
    first = browser.new_context(viewport={"width": 1280, "height": 900})
    second = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page_a, page_b = first.new_page(), second.new_page()
        for page, username in ((page_a, "rhea"), (page_b, "bram")):
            page.set_default_timeout(10_000)
            login(page, base, username)
            page.goto(f"{base}/approvals/")
            assert row(page, memory_id).count() == 1

        row(page_a, memory_id).get_by_role("button", name="Approve", exact=True).click()
        page_a.locator(f'[data-promotion-id="{memory_id}"][data-decision="approved"]').wait_for()
        assert status_of(memory_id) == "approved"

        # B still sees the row as pending and rejects it.
        stale = row(page_b, memory_id)
        stale.get_by_role("textbox", name="Reason for rejecting", exact=True).fill("Too late")
        stale.get_by_role("button", name="Reject", exact=True).click()
        notice = page_b.locator(f'[data-promotion-id="{memory_id}"][data-decision="stale"]')
        notice.wait_for()
        # SPEC §5.4: "a notice containing `already decided by {user}`" (sentence case).
        assert "already decided by rhea" in notice.inner_text().lower()
        assert notice.get_by_role("button").count() == 0
        page_b.locator("#pending-count", has_text="0").wait_for()

        promotion = Promotion.objects.select_related("decided_by").get(pk=memory_id)
        assert promotion.status == "approved"
        assert promotion.decided_by is not None
        assert promotion.decided_by.get_username() == "rhea"
        assert promotion.decision_note == ""
    finally:
        first.close()
        second.close()


def test_the_queue_works_without_javascript(live_server: Any, browser: Any) -> None:
    _team, agent = set_up("rhea")
    approve_id = pending(agent, "theme", "Dark theme.")
    reject_id = pending(agent, "units", "Imperial.")
    bulk_ids = [pending(agent, "language", "Polish."), pending(agent, "tone", "Brief.")]
    base = live_server.url
    context = browser.new_context(
        java_script_enabled=False, viewport={"width": 1280, "height": 900}
    )
    try:
        page = context.new_page()
        page.set_default_timeout(10_000)
        login(page, base, "rhea")
        page.goto(f"{base}/approvals/")
        assert page.locator("li[data-promotion-id]").count() == 4

        # A decision redirects to the queue of the team its form was rendered for.
        back = re.compile(rf"{re.escape(base)}/approvals/\?team=[a-z0-9-]+$")
        with page.expect_navigation(url=back):
            row(page, approve_id).get_by_role("button", name="Approve", exact=True).click()
        assert "Approved by rhea: “theme: Dark theme.”" in page.locator(".flash").inner_text()
        assert row(page, approve_id).count() == 0
        assert page.locator("li[data-promotion-id]").count() == 3
        assert pending_total(page) == 3
        assert status_of(approve_id) == "approved"

        reason = "Metric, per the profile."
        target = row(page, reject_id)
        target.get_by_role("textbox", name="Reason for rejecting", exact=True).fill(reason)
        with page.expect_navigation(url=back):
            target.get_by_role("button", name="Reject", exact=True).click()
        assert f"Rejected by rhea: “units: Imperial.” Reason: {reason}" in (
            page.locator(".flash").inner_text()
        )
        assert row(page, reject_id).count() == 0
        assert status_of(reject_id) == "rejected"
        assert Promotion.objects.get(pk=reject_id).decision_note == reason

        with page.expect_navigation(url=f"{base}/approvals/?select=all"):
            page.get_by_role("link", name="Select all on this page").click()
        boxes = page.locator('input[name="selected"][form="bulk"]')
        assert boxes.count() == 2
        assert all(boxes.nth(i).is_checked() for i in range(2))
        with page.expect_navigation(url=back):
            page.get_by_role("button", name="Approve selected", exact=True).click()
        assert "Approved 2 memories: “language: Polish.”, “tone: Brief.”" in (
            page.locator(".flash").inner_text()
        )
        assert page.locator("li[data-promotion-id]").count() == 0
        assert "Nothing to review" in page.locator("#queue").inner_text()
        assert pending_total(page) == 0
        assert [status_of(i) for i in bulk_ids] == ["approved", "approved"]

        # The bulk decision can be taken back from the queue, without JavaScript too.
        offer = page.locator(".undo-last")
        assert "possible for" in offer.inner_text()
        with page.expect_navigation(url=back):
            offer.get_by_role("button", name="Undo").click()
        assert "Undone: 2 memories" in page.locator(".flash").inner_text()
        assert page.locator("li[data-promotion-id]").count() == 2
        assert [status_of(i) for i in bulk_ids] == ["pending", "pending"]
    finally:
        context.close()


# --- keyboard, feedback and undo --------------------------------------------------------


def three_pending_on_the_queue(live_server: Any, page: Any) -> list[str]:
    """rhea, a reviewer, on the queue of Wren's three pending preferences (their ids,
    oldest first)."""
    _team, agent = set_up("rhea")
    ids = [
        pending(agent, "theme", "Dark theme, always."),
        pending(agent, "units", "Metric units."),
        pending(agent, "greeting", "No small talk before 9."),
    ]
    open_queue(live_server, page, "rhea")
    return ids


def test_a_reviewer_approves_with_the_keyboard_alone_and_focus_moves_to_the_next_row(
    live_server: Any, page: Any
) -> None:
    first, second, third = three_pending_on_the_queue(live_server, page)
    assert page.get_by_role("button", name="Press ? for keyboard shortcuts").is_visible()

    page.keyboard.press("j")
    wait_for_focus_in(page, first)
    assert "is-current" in (row(page, first).get_attribute("class") or "")
    page.keyboard.press("j")
    page.keyboard.press("k")
    assert focused_row(page) == first
    page.keyboard.press("a")

    page.locator(f'[data-promotion-id="{first}"][data-decision="approved"]').wait_for()
    wait_for_focus_in(page, second)
    # Focus sits on the next pending row itself, never on <body>, and it is highlighted.
    assert page.evaluate("document.activeElement.dataset.promotionId") == second
    assert "is-current" in (row(page, second).get_attribute("class") or "")
    page.wait_for_function(
        "() => document.getElementById('queue-announcer').textContent.includes('Approved by rhea:')"
    )
    assert status_of(first) == "approved"
    assert status_of(second) == status_of(third) == "pending"

    # Tab reaches the row's first control (its checkbox); x selects the row for bulk.
    page.keyboard.press("Tab")
    assert focused_row(page) == second
    page.keyboard.press("x")
    assert row(page, second).locator('input[name="selected"]').is_checked()
    page.keyboard.press("x")
    assert not row(page, second).locator('input[name="selected"]').is_checked()

    # The last row decided: focus goes back to the remaining one above it.
    page.keyboard.press("j")
    wait_for_focus_in(page, third)
    page.keyboard.press("a")
    page.locator(f'[data-promotion-id="{third}"][data-decision="approved"]').wait_for()
    wait_for_focus_in(page, second)
    page.keyboard.press("a")
    page.locator(f'[data-promotion-id="{second}"][data-decision="approved"]').wait_for()
    # The queue is empty now: focus lands on the heading.
    page.wait_for_function("() => document.activeElement.id === 'queue-heading'")
    assert [status_of(i) for i in (first, second, third)] == ["approved"] * 3


def test_a_reviewer_rejects_with_a_reason_from_the_keyboard(live_server: Any, page: Any) -> None:
    first, second, third = three_pending_on_the_queue(live_server, page)

    page.keyboard.press("j")
    page.keyboard.press("j")
    wait_for_focus_in(page, second)
    # r moves to the reason box; Esc goes back to the row without rejecting.
    page.keyboard.press("r")
    reason_box = row(page, second).get_by_role("textbox", name="Reason for rejecting", exact=True)
    assert page.evaluate("document.activeElement.name") == "reason"
    assert focused_row(page) == second
    page.keyboard.press("Escape")
    assert page.evaluate("document.activeElement.dataset.promotionId") == second
    assert status_of(second) == "pending"

    # Letters typed in the reason box are text, not shortcuts.
    page.keyboard.press("r")
    page.keyboard.type("a jk x u? — not what they said")
    assert reason_box.input_value() == "a jk x u? — not what they said"
    page.keyboard.press("Enter")

    decided = page.locator(f'[data-promotion-id="{second}"][data-decision="rejected"]')
    decided.wait_for()
    assert "Reason: a jk x u? — not what they said" in decided.inner_text()
    wait_for_focus_in(page, third)
    assert status_of(second) == "rejected"
    assert Promotion.objects.get(pk=second).decision_note == "a jk x u? — not what they said"
    assert status_of(first) == status_of(third) == "pending"

    # Shortcuts never fire with a modifier held.
    page.keyboard.press("Control+a")
    page.keyboard.press("Alt+a")
    assert row(page, third).get_by_role("button", name="Approve", exact=True).is_enabled()
    assert status_of(third) == "pending"


def test_question_mark_opens_the_shortcut_help_and_escape_closes_it(
    live_server: Any, page: Any
) -> None:
    three_pending_on_the_queue(live_server, page)
    dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
    assert not dialog.is_visible()

    page.keyboard.press("?")
    dialog.wait_for()
    text = dialog.inner_text()
    for line in ("Next / previous memory", "Approve the current memory", "Reject", "Undo"):
        assert line in text
    # While it is open, the shortcuts are quiet.
    page.keyboard.press("a")
    page.keyboard.press("Escape")
    dialog.wait_for(state="hidden")
    assert page.locator("[data-decision]").count() == 0

    page.get_by_role("button", name="Press ? for keyboard shortcuts").click()
    dialog.wait_for()
    dialog.get_by_role("button", name="Close").click()
    dialog.wait_for(state="hidden")


def test_a_decision_in_flight_disables_its_button_and_marks_the_row_busy(
    live_server: Any, page: Any
) -> None:
    first, _second, _third = three_pending_on_the_queue(live_server, page)
    # Read the state in the same task as the click: htmx sends before returning.
    state = page.evaluate(
        """id => {
            const row = document.querySelector(`li[data-promotion-id="${id}"]`);
            const button = row.querySelector('[data-action="approve"]');
            button.click();
            return [button.disabled, button.textContent, row.getAttribute('aria-busy'),
                    button.closest('form').classList.contains('htmx-request')];
        }""",
        first,
    )
    assert state == [True, "Approving…", "true", True]
    page.locator(f'[data-promotion-id="{first}"][data-decision="approved"]').wait_for()


def test_undo_within_the_window_brings_the_pending_row_back(live_server: Any, page: Any) -> None:
    first, second, third = three_pending_on_the_queue(live_server, page)

    row(page, first).get_by_role("button", name="Approve", exact=True).click()
    decided = page.locator(f'[data-promotion-id="{first}"][data-decision="approved"]')
    decided.wait_for()
    page.locator("#pending-count", has_text="2").wait_for()
    assert status_of(first) == "approved"
    decided.get_by_role("button", name="Undo").click()

    restored = page.locator(f'li[data-promotion-id="{first}"]:not([data-decision])')
    restored.wait_for()
    assert restored.get_by_role("button", name="Approve", exact=True).is_enabled()
    page.locator("#pending-count", has_text="3").wait_for()
    wait_for_focus_in(page, first)
    assert status_of(first) == "pending"

    # With the keyboard: a decides, u takes it back.
    page.keyboard.press("j")
    wait_for_focus_in(page, second)
    page.keyboard.press("a")
    page.locator(f'[data-promotion-id="{second}"][data-decision="approved"]').wait_for()
    wait_for_focus_in(page, third)
    page.keyboard.press("u")
    page.locator(f'li[data-promotion-id="{second}"]:not([data-decision])').wait_for()
    wait_for_focus_in(page, second)
    assert status_of(second) == "pending"


def test_undo_goes_away_when_its_time_is_up(live_server: Any, page: Any, settings: Any) -> None:
    settings.UNDO_SECONDS = 1
    first, _second, _third = three_pending_on_the_queue(live_server, page)
    row(page, first).get_by_role("button", name="Approve", exact=True).click()
    undo = page.locator(f'[data-promotion-id="{first}"]').get_by_role("button", name="Undo")
    undo.wait_for()
    undo.wait_for(state="hidden", timeout=5_000)
    assert status_of(first) == "approved"


def test_approving_refreshes_what_the_agent_s_other_rows_say(
    live_server: Any, page: Any, settings: Any
) -> None:
    _team, agent = set_up("rhea")
    first = pending(agent, "aa", "Preference aa.")
    second = pending(agent, "bb", "Preference bb.")
    line = len("- **aa**: Preference aa.\n")
    settings.MEMORY_OVERLAY_BUDGET_CHARS = line * 3 // 2
    open_queue(live_server, page, "rhea")
    budget = row(page, second).locator("[data-budget]")
    assert budget.get_attribute("data-budget") == "fits"
    row(page, second).locator("summary").click()

    row(page, first).get_by_role("button", name="Approve", exact=True).click()
    row(page, second).locator('[data-budget="pushes"]').wait_for()
    assert "Pushed out: aa." in row(page, second).locator("[data-budget]").inner_text()
    # The preview the reviewer had open stays open, and says what approving does now.
    preview = row(page, second).locator("details.queue-preview")
    assert preview.get_attribute("open") is not None
    assert preview.locator('[data-line="leaves"]').inner_text().endswith("- **aa**: Preference aa.")
    wait_for_focus_in(page, second)


def test_a_bulk_decision_names_its_memories_and_u_takes_it_back(
    live_server: Any, page: Any
) -> None:
    first, second, third = three_pending_on_the_queue(live_server, page)
    page.locator("[data-select-all]").check()
    page.get_by_role("button", name="Reject selected", exact=True).click()

    notice = page.locator("[data-bulk-notice]")
    notice.wait_for()
    assert notice.inner_text() == (
        "Rejected 3 memories: “theme: Dark theme, always.”, “units: Metric units.”, "
        "“greeting: No small talk before 9.”"
    )
    page.wait_for_function(
        "() => document.getElementById('queue-announcer').textContent.includes('Press u to undo')"
    )
    assert [status_of(i) for i in (first, second, third)] == ["rejected"] * 3
    # The deadline is on the page, and counts down.
    count = page.locator("#bulk-undo [data-undo-count]")
    assert int(count.inner_text()) >= 29
    page.wait_for_function(
        "() => Number(document.querySelector('#bulk-undo [data-undo-count]').textContent) <= 28"
    )
    assert page.locator("#bulk-undo [data-undo-until]").get_attribute("datetime")

    page.keyboard.press("u")
    page.locator("[data-bulk-notice]", has_text="Undone: 3 memories").wait_for()
    assert page.locator("li[data-promotion-id]:not([data-decision])").count() == 3
    page.locator("#pending-count", has_text="3").wait_for()
    assert [status_of(i) for i in (first, second, third)] == ["pending"] * 3

    # The Undo button does the same.
    page.locator("[data-select-all]").check()
    page.get_by_role("button", name="Approve selected", exact=True).click()
    page.locator("[data-bulk-notice]", has_text="Approved 3 memories").wait_for()
    page.locator("#bulk-undo").get_by_role("button", name="Undo").click()
    page.locator("[data-bulk-notice]", has_text="Undone: 3 memories").wait_for()
    assert [status_of(i) for i in (first, second, third)] == ["pending"] * 3


def test_revoke_asks_first_with_the_impact_and_then_says_what_happened(
    live_server: Any, page: Any
) -> None:
    _team, agent = set_up("rhea")
    denver = save_memory(agent, MemoryInput(kind="profile", content="Denver", label="city"), SYSTEM)
    assert isinstance(denver, Saved)
    lisbon = save_memory(
        agent,
        MemoryInput(kind="profile", content="Lisbon", label="city", supersedes=denver.id),
        SYSTEM,
    )
    assert isinstance(lisbon, Saved)
    base = live_server.url
    login(page, base, "rhea")
    page.goto(f"{base}/memories/{lisbon.id}/")
    page.get_by_role("button", name="Revoke", exact=True).click()

    page.wait_for_url(re.compile(rf"{re.escape(base)}/memories/{lisbon.id}/revoke/"))
    impact = page.locator("[data-revoke-impact]")
    assert "Its line leaves About the User: “- **city**: Lisbon”" in impact.inner_text()
    assert "Nothing takes its place at “city”." in impact.inner_text()
    assert "“city: Denver”, which it replaced, does not come back" in impact.inner_text()
    assert status_of(lisbon.id) == "approved"  # asking changed nothing
    page.get_by_role("textbox", name="Reason").fill("Moved again")
    page.get_by_role("button", name="Revoke it").click()

    page.wait_for_url(re.compile(rf"{re.escape(base)}/memories/{lisbon.id}/\?team=acme$"))
    flash = page.locator(".flash").inner_text()
    assert "Revoked by rhea: “city: Lisbon” left the prompt." in flash
    assert "Nothing takes its place" in flash
    assert status_of(lisbon.id) == "revoked"
    assert status_of(denver.id) == "superseded"
    page.goto(f"{base}/agents/wren/")
    assert not any("city" in text for text in page.locator("[data-source]").all_inner_texts())
