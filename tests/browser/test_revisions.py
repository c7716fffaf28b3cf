"""Revisions in the real Chromium (SPEC §14 "Pages"): from the lens to the history, two
revisions compared with the form, an older one restored, and the new revision on top.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission

from lens.actors import Actor
from lens.core.config import AgentConfig
from lens.models import Team
from memory.configuring import store_agent
from tests.factories import create_agent, login, make_user, memory_config

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def set_up(live_server: Any) -> str:
    """Wren at revision 3 (two new personas by mira), and eda, who may change agents."""
    team = Team.objects.create(slug="acme", name="Acme")
    mira = make_user("mira", team)
    eda = make_user("eda", team)
    eda.user_permissions.add(Permission.objects.get(codename="change_agent"))
    create_agent(team, "wren", memory_config())
    for persona in ("You are Wren, curious.", "You are Wren, brief."):
        config = memory_config()
        config["persona"] = persona
        store_agent(team, "wren", AgentConfig.model_validate(config), actor=Actor.for_user(mira))
    return str(live_server.url)


def test_history_compare_and_restore_from_the_lens(live_server: Any, page: Any) -> None:
    base = set_up(live_server)
    login(page, base, "eda")
    page.goto(f"{base}/agents/wren/")
    line = page.locator("[data-revision]")
    assert line.inner_text().startswith("Revision 3 by mira, ")
    line.get_by_role("link", name="History").click()
    page.wait_for_url(f"{base}/agents/wren/revisions/")
    rows = page.locator("tr[data-revision-number]")
    assert [rows.nth(i).get_attribute("data-revision-number") for i in range(3)] == ["3", "2", "1"]
    assert "Persona changed" in rows.nth(0).inner_text()

    # Compare the first revision with the newest: the diff page, both diffs drawn.
    page.get_by_label("Compare revision").fill("1")
    page.get_by_label("with", exact=True).fill("3")
    page.get_by_role("button", name="Compare").click()
    page.wait_for_url(f"{base}/agents/wren/revisions/3/?against=1")
    config_diff = page.locator('[data-diff="config"]').inner_text()
    assert '+  "persona": "You are Wren, brief.",' in config_diff
    prompt_diff = page.locator('[data-diff="prompt"]').inner_text()
    assert "+You are Wren, brief." in prompt_diff
    assert page.locator("[data-diff-words]").inner_text() == "Persona changed"

    # Back to the list, and restore revision 2: its confirmation says what it would do.
    page.locator('[data-step="list"]').click()
    page.wait_for_url(f"{base}/agents/wren/revisions/")
    page.locator('tr[data-revision-number="2"]').get_by_role("link", name="Restore").click()
    page.wait_for_url(f"{base}/agents/wren/revisions/2/restore/?team=acme&from=list")
    assert "If restoring:" in page.locator("[data-what-if]").inner_text()
    page.get_by_role("button", name="Confirm restore").click()
    page.wait_for_url(f"{base}/agents/wren/revisions/?team=acme")
    assert "Restored revision 2 as revision 4." in page.locator(".flash").inner_text()
    top = page.locator("tr[data-revision-number]").first
    assert top.get_attribute("data-revision-number") == "4"
    assert top.locator("[data-via]").inner_text() == "restore"
    assert top.locator("[data-actor]").inner_text() == "eda"
    assert top.locator("[data-in-force]").count() == 1
    assert top.get_by_role("link", name="Restore").count() == 0

    page.goto(f"{base}/agents/wren/")
    assert (
        page.locator("[data-revision]").inner_text().startswith("Revision 4 by eda via restore, ")
    )
    assert "You are Wren, curious." in page.locator("[data-prompt]").inner_text()
