"""A memory's validity window in the real Chromium (SPEC §19.2): a reviewer sets, moves
and clears it with the memory page's form, and the lens marks the memory's fragment
"expires in 3 days" while it closes within a week. At 1440 and 390 px, with no
horizontal scrolling."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.utils import timezone

from lens.models import Team
from memory.models import MemoryRecord
from tests.factories import create_agent, login, make_user, memory_config, remember

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = "/tmp/validity-{page}-{width}.png"


def field_value(moment: datetime) -> str:
    """A datetime-local field's value: minutes, no zone (the form reads it as UTC)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M")


def window(record_id: str) -> datetime | None:
    return MemoryRecord.objects.get(pk=record_id).valid_until


def no_overflow(page: Any, width: int) -> None:
    overflow = page.evaluate(
        "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0, (width, overflow)


def test_a_reviewer_sets_moves_and_clears_a_window_and_the_lens_marks_it(
    live_server: Any, browser: Any
) -> None:
    team = Team.objects.create(slug="acme", name="Acme")
    user = make_user("rhea", team)
    user.user_permissions.add(Permission.objects.get(codename="approve_promotion"))
    wren = create_agent(team, "wren", memory_config())
    record = remember(wren, "profile", "In Lisbon this week.", label="city")
    base: str = live_server.url

    for width in (1440, 390):
        context = browser.new_context(viewport={"width": width, "height": 900})
        page = context.new_page()
        page.set_default_timeout(10_000)
        login(page, base, "rhea")
        page.goto(f"{base}/memories/{record}/")
        form = page.locator("form[data-validity-form]")
        field = form.get_by_label("Valid until (UTC)")

        # Set.
        first = timezone.now() + timedelta(days=3, hours=2)
        field.fill(field_value(first))
        form.get_by_role("button", name="Set", exact=True).click()
        page.locator("form[data-validity-form] button", has_text="Move").wait_for()
        stored = window(record)
        assert stored is not None
        assert field_value(stored) == field_value(first)
        no_overflow(page, width)
        page.screenshot(path=SCREENSHOTS.format(page="memory", width=width), full_page=True)

        # The lens marks the fragment.
        page.goto(f"{base}/agents/wren/")
        fragment = page.locator(f'[data-source="memory"][data-memory-ids="{record}"]').first
        fragment.wait_for()
        assert fragment.get_attribute("data-expires") == "expires in 3 days"
        # Shown beside the line by CSS, not part of the prompt's text.
        assert "expires in 3 days" in fragment.evaluate(
            "e => getComputedStyle(e, '::before').content"
        )
        assert "expires" not in fragment.inner_text()
        no_overflow(page, width)
        page.screenshot(path=SCREENSHOTS.format(page="lens", width=width), full_page=True)

        # Move.
        page.goto(f"{base}/memories/{record}/")
        later = timezone.now() + timedelta(days=20)
        form.get_by_label("Valid until (UTC)").fill(field_value(later))
        form.get_by_role("button", name="Move", exact=True).click()
        page.wait_for_load_state()
        moved = window(record)
        assert moved is not None
        assert field_value(moved) == field_value(later)
        page.goto(f"{base}/agents/wren/")
        fragment = page.locator(f'[data-source="memory"][data-memory-ids="{record}"]').first
        fragment.wait_for()
        assert fragment.get_attribute("data-expires") is None  # more than a week away

        # Clear.
        page.goto(f"{base}/memories/{record}/")
        form.get_by_role("button", name="Clear", exact=True).click()
        page.locator("form[data-validity-form] button", has_text="Set").wait_for()
        assert window(record) is None
        assert "no end set" in page.locator("[data-valid-until]").inner_text()
        context.close()
