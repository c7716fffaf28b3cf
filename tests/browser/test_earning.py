"""The approval queue's Earning view in the real Chromium (SPEC §19.1): choosing it lists
the memories earning their place, each saying how many sessions have seen it; a reviewer
may approve one at once. Screenshots at 1440 and 390 px."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission

from lens.models import Team
from memory.models import Promotion
from tests.factories import VAULT_CONFIG, create_agent, login, make_user, remember

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = "/tmp/earning-{width}.png"


def test_the_earning_filter_lists_earning_memories_with_their_sessions(
    live_server: Any, browser: Any
) -> None:
    team = Team.objects.create(slug="acme", name="Acme")
    user = make_user("rhea", team)
    user.user_permissions.add(Permission.objects.get(codename="approve_promotion"))
    vault = create_agent(team, "vault", VAULT_CONFIG)
    jazz = remember(vault, "preference", "Likes jazz while working.", label="music", session="a")
    remember(vault, "preference", "likes jazz  while working.", label="music", session="b")
    tea = remember(vault, "preference", "Drinks green tea.", label="drink", session="a")
    base: str = live_server.url

    for width in (1440, 390):
        context = browser.new_context(viewport={"width": width, "height": 900})
        page = context.new_page()
        page.set_default_timeout(10_000)
        login(page, base, "rhea")
        page.goto(f"{base}/approvals/")
        assert page.locator("li[data-promotion-id]").count() == 0
        page.get_by_label("Show").select_option("earning")
        page.locator(f'li[data-promotion-id="{jazz}"]').wait_for()
        assert page.locator("li[data-promotion-id]").count() == 2
        seen = page.locator(f'li[data-promotion-id="{jazz}"] [data-earning]')
        assert "seen in 2 of 3 sessions" in seen.inner_text()
        assert (
            "seen in 1 of 3 sessions"
            in page.locator(f'li[data-promotion-id="{tea}"] [data-earning]').inner_text()
        )
        # No row runs off a phone's screen.
        overflow = page.evaluate(
            "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 0, (width, overflow)
        page.screenshot(path=SCREENSHOTS.format(width=width), full_page=True)
        context.close()

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    login(page, base, "rhea")
    page.goto(f"{base}/approvals/?show=earning")
    row = page.locator(f'li[data-promotion-id="{tea}"]')
    row.get_by_role("button", name="Approve", exact=True).click()
    page.locator(f'li[data-promotion-id="{tea}"][data-decision="approved"]').wait_for()
    assert Promotion.objects.get(pk=tea).status == "approved"
    context.close()
