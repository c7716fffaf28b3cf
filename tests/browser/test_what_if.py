"""What-if in the real Chromium (SPEC §18.2), on a wide screen and a phone's, with no
console error and nothing wider than the screen: each queue row loads what approving it
would do once it comes into view (without JavaScript the row links to the same answer
as a page); the proposal page, what publishing would do; Restore's confirmation; the
Cache stability card's line; the admin's "Preview the effect"."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.contrib.auth.models import Permission

from lens.actors import SYSTEM, Actor
from lens.agents import get_agent
from lens.core.config import AgentConfig
from lens.models import Agent, Revision, Team
from memory.configuring import store_config
from memory.core.records import MemoryInput
from memory.deliveries.ledger import deliver
from memory.saving import Saved, save_memory
from tests.factories import create_agent, login, make_user, memory_config, propose
from tests.web.pages.test_stability_pages import config as stability_config

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def set_up() -> list[str]:
    """Wren, delivered a few times, and three preferences waiting in the queue."""
    team = Team.objects.create(slug="acme", name="Acme")
    user = make_user("rhea", team)
    user.user_permissions.add(Permission.objects.get(codename="approve_promotion"))
    agent = create_agent(team, "wren", memory_config())
    runtime = Actor(label="runtime")
    ids = []
    for label, content in (
        ("theme", "Dark theme, always."),
        ("units", "Metric units."),
        ("greeting", "No small talk before 9."),
    ):
        deliver(get_agent(team, "wren"), runtime)
        saved = save_memory(
            agent, MemoryInput(kind="preference", content=content, label=label), SYSTEM
        )
        assert isinstance(saved, Saved)
        ids.append(saved.id)
    deliver(get_agent(team, "wren"), runtime)
    return ids


@pytest.mark.parametrize("width", [1440, 390])
def test_each_queue_row_shows_what_approving_would_do(
    live_server: Any, browser: Any, width: int
) -> None:
    ids = set_up()
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.set_default_timeout(20_000)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        base: str = live_server.url
        login(page, base, "rhea")
        page.goto(f"{base}/approvals/")
        first = page.locator(f'li[data-promotion-id="{ids[0]}"] [data-what-if]')
        first.wait_for()
        text = " ".join(first.inner_text().split())
        assert text.startswith("If approving: +")
        # Saved before the last three deliveries: each of them would have held it.
        assert "3 of the last 4 prompts would change" in text
        assert first.get_attribute("data-changed") == "3"
        # Loaded once it comes into view.
        page.locator(f'li[data-promotion-id="{ids[2]}"]').scroll_into_view_if_needed()
        last = page.locator(f'li[data-promotion-id="{ids[2]}"] [data-what-if]')
        last.wait_for()
        assert "1 of the last 4 prompts would change" in last.inner_text()
        assert page.locator("[data-what-if-pending]").count() == 0
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        page.screenshot(path=f"/tmp/what-if-queue-{width}.png", full_page=True)
        assert errors == []
    finally:
        context.close()


def test_without_javascript_a_row_links_to_its_answer(live_server: Any, browser: Any) -> None:
    ids = set_up()
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        base: str = live_server.url
        login(page, base, "rhea")
        page.goto(f"{base}/approvals/")
        row = page.locator(f'li[data-promotion-id="{ids[1]}"]')
        row.get_by_role("link", name="What approving would do").click()
        page.wait_for_url(f"{base}/approvals/{ids[1]}/what-if/")
        assert "2 of the last 4 prompts would change" in page.locator("[data-what-if]").inner_text()
    finally:
        context.close()


# --- the proposal page, the restore confirmation, the Cache stability card, the admin --


def set_up_deciding() -> int:
    """Wren delivered four times, a revision each time (its "now" section changing, so
    the Cache stability card suggests putting it last, and a revision to restore is
    there too);
    Ada protected, delivered twice, with Pia's proposal waiting. Rhea may change agents
    (so she may restore); root may use the admin. Answers the proposal's id."""
    team = Team.objects.create(slug="acme", name="Acme")
    rhea = make_user("rhea", team)
    rhea.user_permissions.add(Permission.objects.get(codename="change_agent"))
    make_user("root", team, is_staff=True, is_superuser=True)
    runtime = Actor(label="runtime")
    create_agent(team, "wren", stability_config(0))
    for tick in range(4):
        store_config(team, "wren", AgentConfig.model_validate(stability_config(tick)))
        deliver(get_agent(team, "wren"), runtime)
    create_agent(team, "ada", memory_config(protected=True, name="Ada"))
    for _ in range(2):
        deliver(get_agent(team, "ada"), runtime)
    changed = memory_config(protected=True, name="Ada", persona="You are terse.")
    return propose(team, "ada", changed, make_user("pia", team)).pk


@contextmanager
def viewed(browser: Any, width: int) -> Iterator[tuple[Any, list[str]]]:
    """A page at ``width`` pixels and the console errors it logs; closed afterwards."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.set_default_timeout(20_000)
    try:
        yield page, watched(page)
    finally:
        context.close()


def watched(page: Any) -> list[str]:
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    return errors


def fits(page: Any, width: int) -> None:
    """Nothing wider than the screen, and no line of the what-if cut off inside it."""
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    cut = page.eval_on_selector_all(
        "[data-what-if] p, [data-effect-preview] p, [data-effect-preview] li",
        "els => els.filter(el => el.scrollWidth > el.clientWidth + 1).map(el => el.outerHTML)",
    )
    assert cut == []


def reveal(page: Any, scope: str = "") -> Any:
    """Scroll a lazy what-if line into view (htmx loads it once revealed; one already in
    view at the first paint may have loaded already), and answer it loaded."""
    page.locator(f"{scope} [data-what-if-pending], {scope} [data-what-if]".strip()).first.wait_for(
        state="attached"
    )
    page.evaluate(
        "scope => document.querySelector(`${scope} [data-what-if-pending]`.trim())"
        "?.scrollIntoView({block: 'center'})",
        scope,
    )
    line = page.locator(f"{scope} [data-what-if]".strip())
    line.wait_for()
    return line


def squashed(locator: Any) -> str:
    return " ".join(locator.inner_text().split())


@pytest.mark.parametrize("width", [1440, 390])
def test_the_proposal_page_loads_what_publishing_would_do(
    live_server: Any, browser: Any, width: int
) -> None:
    proposal = set_up_deciding()
    with viewed(browser, width) as (page, errors):
        base: str = live_server.url
        login(page, base, "rhea")
        page.goto(f"{base}/proposals/{proposal}/")
        line = reveal(page)
        text = squashed(line)
        assert text.startswith("If publishing: −4 tokens"), text
        assert "2 of the last 2 prompts would change" in text
        line.scroll_into_view_if_needed()
        fits(page, width)
        page.screenshot(path=f"/tmp/what-if-proposal-{width}.png", full_page=True)
        assert errors == []


@pytest.mark.parametrize("width", [1440, 390])
def test_restore_confirms_with_what_restoring_would_do(
    live_server: Any, browser: Any, width: int
) -> None:
    set_up_deciding()
    with viewed(browser, width) as (page, errors):
        base: str = live_server.url
        login(page, base, "rhea")
        page.goto(f"{base}/agents/wren/revisions/")
        page.locator('tr[data-revision-number="2"]').get_by_role("link", name="Restore").click()
        page.wait_for_url(f"{base}/agents/wren/revisions/2/restore/?team=acme&from=list")
        text = squashed(page.locator("[data-what-if]"))
        assert text.startswith("If restoring: "), text
        assert "of the last 4 prompts would change" in text
        assert squashed(page.locator("[data-what-if-prefix]")).startswith("Cached prefix ")
        assert page.get_by_role("button", name="Confirm restore").is_visible()
        fits(page, width)
        page.screenshot(path=f"/tmp/what-if-restore-{width}.png", full_page=True)
        # Cancel goes back to the list, with nothing restored.
        page.get_by_role("link", name="Cancel").click()
        page.wait_for_url(f"{base}/agents/wren/revisions/?team=acme")
        assert (
            page.locator("tr[data-revision-number]").first.get_attribute("data-revision-number")
            == "4"
        )
        assert errors == []


@pytest.mark.parametrize("width", [1440, 390])
def test_the_cache_stability_card_says_what_its_order_would_have_done(
    live_server: Any, browser: Any, width: int
) -> None:
    set_up_deciding()
    with viewed(browser, width) as (page, errors):
        base: str = live_server.url
        login(page, base, "rhea")
        # On the lens: the card loads after the first paint, its line once in view.
        page.goto(f"{base}/agents/wren/")
        reveal(page, "#stability")
        said = page.locator("#stability [data-what-if-sentence]")
        text = squashed(said)
        assert re.fullmatch(
            r"This order would have changed 4 of the last 4 prompts; "
            r"cached prefix [\d,]+ → [\d,]+ tokens",
            text,
        ), text
        before, after = (int(n.replace(",", "")) for n in re.findall(r"[\d,]+(?= )", text)[-2:])
        assert after > before  # the changing section last: more of each prompt cached
        said.scroll_into_view_if_needed()
        fits(page, width)
        page.screenshot(path=f"/tmp/what-if-stability-{width}.png", full_page=True)
        assert errors == []


@pytest.mark.parametrize("width", [1440, 390])
def test_the_admin_previews_the_effect_before_saving(
    live_server: Any, browser: Any, width: int
) -> None:
    set_up_deciding()
    agent = Agent.objects.get(slug="wren")
    with viewed(browser, width) as (page, errors):
        base: str = live_server.url
        login(page, base, "root")
        page.goto(f"{base}/admin/lens/agent/{agent.pk}/change/")
        page.locator("#id_persona").fill("You help, in one sentence.")
        page.get_by_role("button", name="Preview the effect").click()
        preview = page.locator("[data-effect-preview]")
        preview.wait_for()
        summary = squashed(page.locator("[data-effect-summary]"))
        assert summary.startswith("If saved: −"), summary
        assert "4 of the last 4 prompts would change" in summary
        fits(page, width)
        page.screenshot(path=f"/tmp/what-if-admin-{width}.png", full_page=True)
        assert Revision.objects.filter(agent=agent).count() == 4  # nothing saved
        assert errors == []
