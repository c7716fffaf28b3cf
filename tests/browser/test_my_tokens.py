"""My tokens in the real Chromium at 390 pixels (SPEC §9): long labels are cut with an
ellipsis instead of widening the page, a token is issued and shown once, and Revoke
swaps its row with htmx."""

from __future__ import annotations

from typing import Any

import pytest

from lens.models import ApiToken, Team
from lens.token_issuing import issue_token
from tests.browser.axe import Problems, axe_context, check, report
from tests.factories import login, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LONG = "an-unbroken-label-for-a-machine-" * 6  # 192 characters, nowhere to wrap


def test_my_tokens_fits_a_phone_and_revokes_with_htmx(live_server: Any, browser: Any) -> None:
    team = Team.objects.create(slug="acme", name="Acme")
    mira = make_user("mira", team)
    for n in range(3):
        issue_token(team, f"{n}{LONG}", user=mira)
    options = axe_context("light")
    options["viewport"] = {"width": 390, "height": 844}
    context = browser.new_context(**options, is_mobile=True, has_touch=True)
    problems: Problems = {}
    page = context.new_page()
    try:
        login(page, live_server.url, "mira")
        page.goto(f"{live_server.url}/settings/tokens/")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        label = page.locator("[data-my-tokens] .token-label").first
        assert label.get_attribute("title") == f"2{LONG}"
        assert label.evaluate("e => getComputedStyle(e).textOverflow") == "ellipsis"
        assert label.evaluate("e => e.scrollWidth > e.clientWidth")  # cut on screen
        check(page, "390 px /settings/tokens/", problems)

        page.get_by_label("Label").fill(f"3{LONG}")
        page.get_by_role("button", name="Issue token").click()
        raw = page.locator("[data-token]").inner_text().strip()
        assert ApiToken.objects.get(name=f"3{LONG}").prefix == raw[:10]
        check(page, "390 px the token shown once", problems)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390

        row = page.locator("[data-my-tokens] [data-token-id]").first
        token_id = row.get_attribute("data-token-id")
        row.get_by_role("button", name="Revoke").click()
        swapped = page.locator(f"[data-token-id='{token_id}'][data-token-revoked]")
        swapped.wait_for()
        assert "revoked" in swapped.inner_text()
        assert ApiToken.objects.get(pk=token_id).revoked_at is not None
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
    finally:
        context.close()
    assert not problems, report("light", problems)
