"""Proposed changes of protected agents in the real Chromium (SPEC §14): a reviewer
publishes them from the approval queue with the button or the keyboard, each time after a
confirmation (never one key), and the lens then shows the new revision; deciding the
selected memories moves on to the next memory, never to a proposal.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from lens.actors import SYSTEM, Actor
from lens.core.config import AgentConfig
from lens.models import Agent, Proposal, Revision, Team
from memory.configuring import store_agent, store_config
from memory.core.records import MemoryInput
from memory.saving import Saved, save_memory
from tests.factories import grant, login, make_user
from tests.samples import SAMPLE_CONFIG

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CONFIG: dict[str, Any] = {
    **SAMPLE_CONFIG,
    "routing_spec": "user-background",
    "protected": True,
    "background": {
        "sections": [
            {"id": "user_profile", "title": "About the User", "promotion": "auto"},
            {"id": "user_preferences", "title": "User Preferences", "promotion": "guarded"},
        ]
    },
}


def protected(team: Team, slug: str, name: str) -> Agent:
    """A protected agent with one composed profile memory."""
    agent, _ = store_agent(team, slug, AgentConfig.model_validate({**CONFIG, "name": name}))
    saved = save_memory(agent, MemoryInput(kind="profile", content="Mira K.", label="name"), SYSTEM)
    assert isinstance(saved, Saved), saved
    return agent


def retitled(name: str, title: str) -> AgentConfig:
    config = copy.deepcopy({**CONFIG, "name": name})
    config["background"]["sections"][0]["title"] = title
    return AgentConfig.model_validate(config)


def set_up() -> tuple[Proposal, Proposal, str]:
    """Wren and Atlas, protected, each with a change mira proposed; rhea reviews. A
    memory of Wren waits in the queue below them."""
    team = Team.objects.create(slug="acme", name="Acme")
    grant(make_user("rhea", team))
    mira = Actor.for_user(make_user("mira", team))
    wren, atlas = protected(team, "wren", "Wren"), protected(team, "atlas", "Atlas")
    proposals = []
    for agent in (wren, atlas):
        stored = store_config(team, agent.slug, retitled(agent.name, "About You"), actor=mira)
        assert stored.proposal is not None
        proposals.append(stored.proposal)
    waiting = save_memory(
        wren, MemoryInput(kind="preference", content="Short answers.", label="answers"), SYSTEM
    )
    assert isinstance(waiting, Saved), waiting
    return proposals[0], proposals[1], waiting.id


def proposal_row(page: Any, proposal: Proposal) -> Any:
    return page.locator(f'li[data-proposal-id="{proposal.pk}"]')


def current_proposal(page: Any) -> str | None:
    found: str | None = page.evaluate(
        "() => document.activeElement.closest('li[data-proposal-id]')?.dataset.proposalId ?? null"
    )
    return found


def status_of(proposal: Proposal) -> str:
    proposal.refresh_from_db()
    return proposal.status


def watch_console(page: Any) -> list[str]:
    """The page's console errors and uncaught exceptions, as they come."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return errors


def focused_row(page: Any) -> str | None:
    """``proposal:<id>`` or the memory id of the row holding focus, else None."""
    found: str | None = page.evaluate(
        """() => {
          const row = document.activeElement.closest('li[data-proposal-id], li[data-promotion-id]');
          if (!row) return null;
          return row.dataset.proposalId ? `proposal:${row.dataset.proposalId}` : row.dataset.promotionId;
        }"""
    )
    return found


def test_a_reviewer_publishes_with_the_button_then_with_the_keyboard_each_confirmed(
    live_server: Any, page: Any
) -> None:
    first, second, waiting = set_up()
    errors = watch_console(page)
    base: str = live_server.url
    login(page, base, "rhea")
    page.goto(f"{base}/approvals/")
    page.evaluate("window.__marker = 1")
    assert page.locator("li[data-proposal-id]").count() == 2
    row = proposal_row(page, first)
    assert "Section User Preferences" not in row.inner_text()
    # The profile memory moves: it is under the section's new title, in the row's Details.
    assert row.locator('[data-fate="moved"]').count() == 1

    # The button asks first: a dialog says what publishing does, Cancel focused.
    row.get_by_role("button", name="Publish", exact=True).click()
    dialog = page.get_by_role("dialog", name=f"Publish proposal {first.pk} for Wren?")
    dialog.wait_for()
    assert "becomes revision 2 of Wren" in dialog.inner_text()
    assert page.evaluate("document.activeElement.textContent") == "Cancel"
    assert status_of(first) == "pending"
    dialog.get_by_role("button", name="Publish as revision 2").click()
    decided = page.locator(f'li[data-proposal-id="{first.pk}"][data-decision="published"]')
    decided.wait_for()
    assert "published as revision 2" in decided.inner_text()
    assert page.evaluate("window.__marker") == 1
    # Focus moved on to the next row, Atlas's proposal.
    page.wait_for_function(
        "id => document.activeElement.closest('li[data-proposal-id]')?.dataset.proposalId === id",
        arg=str(second.pk),
    )
    # "a" asks as the button does; Enter then presses Cancel, and publishes nothing.
    page.keyboard.press("a")
    page.get_by_role("dialog", name=f"Publish proposal {second.pk} for Atlas?").wait_for()
    page.keyboard.press("Enter")
    page.wait_for_function("() => !document.querySelector('dialog[open]')")
    assert status_of(second) == "pending"
    assert focused_row(page) == f"proposal:{second.pk}"
    # The deliberate second step: the dialog's own button.
    page.keyboard.press("a")
    page.keyboard.press("Shift+Tab")
    assert page.evaluate("document.activeElement.textContent") == "Publish as revision 2"
    page.keyboard.press("Enter")
    page.locator(f'li[data-proposal-id="{second.pk}"][data-decision="published"]').wait_for()
    assert (status_of(first), status_of(second)) == ("published", "published")
    # Then the memory row below them is the current one.
    page.wait_for_function(
        "id => document.activeElement.closest('li[data-promotion-id]')?.dataset.promotionId === id",
        arg=waiting,
    )
    assert page.evaluate("window.__marker") == 1
    # The badge counts what still waits: the memory (the proposals were counted too).
    assert page.locator("#pending-count").get_attribute("data-pending-total") == "1"
    assert errors == []

    for slug in ("wren", "atlas"):
        assert Revision.objects.get(agent__slug=slug, number=2).approved_by == "rhea"
        page.goto(f"{base}/agents/{slug}/")
        line = page.locator("[data-revision]")
        assert line.get_attribute("data-revision") == "2"
        assert "approved by rhea" in line.inner_text()
        assert "About You" in page.locator("[data-prompt]").inner_text()


def test_j_then_a_on_a_proposal_does_not_publish_and_esc_comes_back_to_it(
    live_server: Any, page: Any
) -> None:
    first, _second, _waiting = set_up()
    errors = watch_console(page)
    base: str = live_server.url
    login(page, base, "rhea")
    page.goto(f"{base}/approvals/")
    assert page.locator("#pending-count").get_attribute("data-pending-total") == "3"
    page.keyboard.press("j")
    assert focused_row(page) == f"proposal:{first.pk}"
    page.keyboard.press("a")
    # Shortcuts sleep while the dialog is open: a second "a" publishes nothing either.
    page.keyboard.press("a")
    page.wait_for_timeout(300)
    assert status_of(first) == "pending"
    assert page.locator(f'li[data-proposal-id="{first.pk}"][data-decision]').count() == 0
    page.keyboard.press("Escape")
    page.wait_for_function("() => !document.querySelector('dialog[open]')")
    assert focused_row(page) == f"proposal:{first.pk}"
    assert status_of(first) == "pending"

    # The shortcut help: Esc puts focus back where it was.
    page.keyboard.press("?")
    page.get_by_role("dialog", name="Keyboard shortcuts").wait_for()
    assert "Approve the selected memories" in page.locator("#shortcuts").inner_text()
    page.keyboard.press("Escape")
    page.wait_for_function("() => !document.querySelector('dialog[open]')")
    assert focused_row(page) == f"proposal:{first.pk}"
    # And from the hint button, back to the button.
    page.locator("[data-shortcuts-open]").click()
    page.get_by_role("dialog", name="Keyboard shortcuts").wait_for()
    page.keyboard.press("Escape")
    page.wait_for_function("() => !document.querySelector('dialog[open]')")
    assert page.evaluate("document.activeElement.hasAttribute('data-shortcuts-open')")
    assert errors == []


def test_deciding_the_selected_counts_them_and_moves_on_to_the_next_memory(
    live_server: Any, page: Any
) -> None:
    first, second, waiting = set_up()
    later = save_memory(
        first.agent, MemoryInput(kind="preference", content="Metric units.", label="units"), SYSTEM
    )
    assert isinstance(later, Saved), later
    errors = watch_console(page)
    base: str = live_server.url
    login(page, base, "rhea")
    page.goto(f"{base}/approvals/")
    count = page.locator("[data-selected-count]")
    assert count.inner_text() == "0 selected"
    # A with nothing selected decides nothing.
    page.keyboard.press("A")
    page.wait_for_timeout(200)
    assert page.locator("li[data-decision]").count() == 0
    for _ in range(3):
        page.keyboard.press("j")
    assert focused_row(page) == waiting
    page.keyboard.press("x")
    assert count.inner_text() == "1 selected"
    # Proposals cannot be selected: "x" on one selects nothing.
    page.keyboard.press("k")
    page.keyboard.press("x")
    assert count.inner_text() == "1 selected"
    page.keyboard.press("A")
    page.locator("[data-bulk-notice]").wait_for()
    assert "Approved 1 memory" in page.locator("[data-bulk-notice]").inner_text()
    # Focus goes to the next memory, never to a proposal above it.
    page.wait_for_function(
        "id => document.activeElement.closest('li[data-promotion-id]')?.dataset.promotionId === id",
        arg=later.id,
    )
    assert (status_of(first), status_of(second)) == ("pending", "pending")
    assert count.inner_text() == "0 selected"
    # R goes to the bar's reason box; Enter there rejects the selected (never approves).
    page.keyboard.press("x")
    page.keyboard.press("R")
    assert page.evaluate("document.activeElement.hasAttribute('data-bulk-reason')")
    page.keyboard.type("Not for now.")
    page.keyboard.press("Enter")
    page.locator("[data-bulk-notice]", has_text="Rejected 1 memory").wait_for()
    assert page.locator("li[data-promotion-id]").count() == 0
    assert (status_of(first), status_of(second)) == ("pending", "pending")
    assert errors == []


@pytest.mark.parametrize("width", [390, 1440])
def test_the_queue_fits_and_its_bar_stays_in_view(
    live_server: Any, browser: Any, width: int
) -> None:
    first, _second, _waiting = set_up()
    for n in range(12):
        saved = save_memory(
            first.agent,
            MemoryInput(kind="preference", content=f"Preference number {n}.", label=f"p{n}"),
            SYSTEM,
        )
        assert isinstance(saved, Saved), saved
    height = 844 if width < 1000 else 900
    # A phone as one: touch, so no keyboard hint.
    phone = {"is_mobile": True, "has_touch": True} if width < 1000 else {}
    context = browser.new_context(viewport={"width": width, "height": height}, **phone)
    try:
        page = context.new_page()
        page.set_default_timeout(10_000)
        errors = watch_console(page)
        login(page, live_server.url, "rhea")
        page.goto(f"{live_server.url}/approvals/")
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        # The proposals are compact: the first memory starts on the first screen.
        first_memory = page.locator("li[data-promotion-id]").first.bounding_box()
        assert first_memory["y"] < height, first_memory
        # The bar is in view at the top of the page and half-way down the list.
        bar = page.locator("#bulk")
        for scroll in (0, 900):
            page.evaluate(f"window.scrollTo(0, {scroll})")
            box = bar.bounding_box()
            assert box is not None
            assert box["y"] >= 0, (scroll, box)
            assert box["y"] + box["height"] <= height + 1, (scroll, box)
            assert box["x"] >= 0
            assert box["x"] + box["width"] <= width
        assert bar.locator("[data-selected-count]").is_visible()
        page.locator('input[name="selected"]').first.check()
        assert bar.locator("[data-selected-count]").inner_text() == "1 selected"
        assert bar.get_by_role("button", name="Approve selected").is_visible()
        assert bar.get_by_role("button", name="Reject selected").is_visible()
        box = bar.bounding_box()
        assert box is not None
        assert box["y"] + box["height"] <= height + 1, box
        assert errors == []
    finally:
        context.close()


def test_j_and_k_move_across_proposals_and_memories_and_r_rejects_with_a_reason(
    live_server: Any, page: Any
) -> None:
    first, second, waiting = set_up()
    base: str = live_server.url
    login(page, base, "rhea")
    page.goto(f"{base}/approvals/")
    page.keyboard.press("j")
    assert current_proposal(page) == str(first.pk)
    page.keyboard.press("j")
    page.keyboard.press("j")
    assert (
        page.evaluate(
            "() => document.activeElement.closest('li[data-promotion-id]')?.dataset.promotionId"
        )
        == waiting
    )
    page.keyboard.press("k")
    assert current_proposal(page) == str(second.pk)
    page.keyboard.press("r")
    page.keyboard.type("Not this week.")
    page.keyboard.press("Enter")
    decided = page.locator(f'li[data-proposal-id="{second.pk}"][data-decision="rejected"]')
    decided.wait_for()
    assert "rejected by rhea. Reason: Not this week." in decided.inner_text()
    second.refresh_from_db()
    assert (second.status, second.reason) == ("rejected", "Not this week.")
    assert status_of(first) == "pending"


def test_the_proposer_sees_no_buttons_and_a_second_publish_says_it_was_decided(
    live_server: Any, browser: Any, page: Any
) -> None:
    first, _second, _waiting = set_up()
    base: str = live_server.url
    login(page, base, "mira")
    page.goto(f"{base}/approvals/")
    mine = proposal_row(page, first)
    assert "You proposed this change" in mine.inner_text()
    assert mine.get_by_role("button", name="Publish", exact=True).count() == 0

    # Two reviewers with the queue open: the second one's Publish changes nothing.
    grant(make_user("tess", first.agent.team))
    other = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    try:
        login(page, base, "rhea")
        login(other, base, "tess")
        for tab in (page, other):
            tab.goto(f"{base}/approvals/")
        for tab in (page, other):
            proposal_row(tab, first).get_by_role("button", name="Publish", exact=True).click()
            tab.get_by_role("button", name="Publish as revision 2").click()
            if tab is page:
                tab.locator(
                    f'li[data-proposal-id="{first.pk}"][data-decision="published"]'
                ).wait_for()
        said = proposal_row(other, first).locator("[data-row-error]")
        said.wait_for()
        assert "was already published by rhea: nothing was changed" in said.inner_text()
    finally:
        other.context.close()
    assert Revision.objects.filter(agent=first.agent).count() == 2


def test_without_javascript_publish_asks_on_a_page_first(live_server: Any, browser: Any) -> None:
    first, _second, _waiting = set_up()
    context = browser.new_context(java_script_enabled=False, viewport={"width": 390, "height": 844})
    try:
        page = context.new_page()
        page.set_default_timeout(10_000)
        base: str = live_server.url
        login(page, base, "rhea")
        page.goto(f"{base}/approvals/")
        proposal_row(page, first).get_by_role("button", name="Publish", exact=True).click()
        page.wait_for_selector("[data-publish-confirm]")
        assert page.locator("h1").inner_text() == f"Publish proposal {first.pk} for Wren?"
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        assert status_of(first) == "pending"
        # Cancel goes back to the queue, nothing changed.
        page.get_by_role("link", name="Cancel").click()
        page.wait_for_selector("li[data-proposal-id]")
        assert status_of(first) == "pending"
        proposal_row(page, first).get_by_role("button", name="Publish", exact=True).click()
        page.get_by_role("button", name="Publish as revision 2").click()
        page.wait_for_selector(".flash")
        assert "published as revision 2" in page.locator(".flash").inner_text()
        assert "/approvals/" in page.url
        assert status_of(first) == "published"
    finally:
        context.close()
