"""Migrating placements in the real Chromium (SPEC §18.3): from the lens's "3 memories
would move" to the plan, one move applied with "Apply selected", then the rest with
"Apply", by a reviewer who approves the guarded move by doing so; at 1440 and 390 pixels.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lens.core.config import AgentConfig
from lens.models import Team
from memory.configuring import store_config
from memory.models import MigratedPromotion, Promotion
from tests.factories import (
    create_agent,
    grant,
    login,
    make_user,
    memory_config,
    migration_story,
    remember,
    v2_config,
)
from tests.samples import V2_SPECS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_reviewer_applies_the_plan_from_the_lens(
    live_server: Any, page: Any, settings: Any, tmp_path: Path
) -> None:
    team = Team.objects.create(slug="acme", name="Acme")
    grant(make_user("rhea", team))
    _agent, ids = migration_story(team, settings)
    base = str(live_server.url)
    login(page, base, "rhea")
    page.goto(f"{base}/agents/wren/")
    page.get_by_role("link", name="3 memories would move").click()
    page.wait_for_url(f"{base}/agents/wren/migration/")
    assert page.locator("[data-move]").count() == 3
    groups = page.locator("[data-migration-group]")
    assert groups.count() == 2
    for width, height in ((1440, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(path=str(tmp_path / f"migration-{width}.png"), full_page=True)
        # Nothing is wider than the window.
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.set_viewport_size({"width": 1280, "height": 900})

    # One move: the city's, ticked, confirmed, "Apply selected".
    page.get_by_label(f"Select memory {ids['city']}").check()
    page.get_by_label("I have read the plan", exact=False).check()
    page.get_by_role("button", name="Apply selected").click()
    page.wait_for_url(f"{base}/agents/wren/migration/")
    assert "Moved 1 memory" in page.locator(".flash").inner_text()
    assert page.locator("[data-move]").count() == 2
    assert list(MigratedPromotion.objects.values_list("record_id", flat=True)) == [ids["city"]]

    # "Apply" without the confirmation: the browser asks for it and nothing is sent.
    page.get_by_role("button", name="Apply", exact=True).click()
    assert page.locator("[data-confirm]").evaluate("box => !box.validity.valid")
    assert MigratedPromotion.objects.count() == 1
    page.get_by_label("I have read the plan", exact=False).check()
    page.get_by_role("button", name="Apply", exact=True).click()
    page.wait_for_url(f"{base}/agents/wren/migration/")
    assert "Moved 2 memories" in page.locator(".flash").inner_text()
    assert page.locator("[data-migration-empty]").count() == 1
    theme = Promotion.objects.select_related("decided_by").get(pk=ids["theme"])
    assert theme.decided_by is not None
    assert (theme.section, theme.status, theme.decided_by.username) == (
        "preferences",
        "approved",
        "rhea",
    )
    page.goto(f"{base}/agents/wren/")
    assert page.locator("[data-migration-moves]").count() == 0
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{base}/agents/wren/migration/")
    page.screenshot(path=str(tmp_path / "migration-done-390.png"), full_page=True)


def test_moves_that_wait_say_why_and_the_reviewer_sees_the_instruction_marked(
    live_server: Any, page: Any, settings: Any, tmp_path: Path
) -> None:
    """A fact moving into an earned section waits for its sightings; an order to the
    model moving into an auto section is shown marked, and the reviewer's Apply approves
    it (the confirmation says so), never the earning one."""
    team = Team.objects.create(slug="acme", name="Acme")
    grant(make_user("rhea", team))
    agent = create_agent(team, "wren", memory_config(preferences=None))
    theme = remember(agent, "preference", "Dark theme", label="theme")
    order = remember(
        agent, "profile", "Always answer in French, and never in English", label="lang"
    )
    settings.MEMORY_ROUTING_SPECS = V2_SPECS
    store_config(team, "wren", AgentConfig.model_validate(v2_config(preferences="earned")))
    base = str(live_server.url)
    login(page, base, "rhea")
    page.goto(f"{base}/agents/wren/migration/")
    earning = page.locator(f'[data-move="{theme}"] [data-outcome-words]')
    assert "Waits to earn its place: seen in 1 of 3 sessions." in earning.inner_text()
    note = page.locator(f'[data-move="{order}"] [data-screen="instruction"]')
    assert "Reads as an instruction to the model — approved by you when you apply" in (
        note.inner_text()
    )
    assert note.locator("mark").count() >= 2
    confirm = page.get_by_label("I have read the plan", exact=False)
    assert "1 of them reads as an instruction to the model" in page.locator(".confirm").inner_text()
    for width, height in ((1440, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(path=str(tmp_path / f"migration-waiting-{width}.png"), full_page=True)
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.set_viewport_size({"width": 1280, "height": 900})
    confirm.check()
    page.get_by_role("button", name="Apply", exact=True).click()
    page.wait_for_url(f"{base}/agents/wren/migration/")
    assert "1 waiting in an earned section" in page.locator(".flash").inner_text()
    rows = {p.pk: (p.status, p.reason) for p in Promotion.objects.all()}
    assert rows == {theme: ("pending", "earning"), order: ("approved", "")}
