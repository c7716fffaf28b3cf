"""The admin in the real Chromium: axe-core finds no serious or critical violation on
any kind of admin page (index, lists, add and change pages, the login), nor an empty
table header, in light and in dark mode, and a row added with "Add another" is named
like the rows already there."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from lens.models import Agent, SectionDeclaration, Team
from memory.models import MemoryRecord
from tests.browser.axe import Problems, axe_context, check, report
from tools.tour import DEMO_TEAM, log_in, seed
from webhooks.models import Endpoint

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Minor to axe, but a header a screen reader announces as nothing, over every inline row.
ALSO_BLOCKING = ("empty-table-header",)


def admin_pages() -> list[str]:
    """One page of each kind the admin shows, on the demo's data."""
    team = Team.objects.get(slug=DEMO_TEAM)
    wren = Agent.objects.get(team=team, slug="wren")
    section = SectionDeclaration.objects.filter(agent=wren).order_by("pk").first()
    record = MemoryRecord.objects.filter(agent=wren).order_by("created_at").first()
    assert section is not None
    assert record is not None
    demo = User.objects.get(username="demo")
    hook = Endpoint.objects.filter(team=team).earliest("pk").pk
    return [
        "/admin/",
        "/admin/lens/",
        "/admin/lens/agent/",
        "/admin/lens/agent/add/",
        f"/admin/lens/agent/{wren.pk}/change/",
        "/admin/lens/sectiondeclaration/",
        "/admin/lens/sectiondeclaration/add/",
        f"/admin/lens/sectiondeclaration/{section.pk}/change/",
        "/admin/lens/team/",
        f"/admin/lens/team/{team.pk}/change/",
        "/admin/memory/memoryrecord/",
        f"/admin/memory/memoryrecord/{record.pk}/change/",
        "/admin/memory/promotion/",
        "/admin/webhooks/endpoint/",
        "/admin/webhooks/endpoint/add/",
        f"/admin/webhooks/endpoint/{hook}/change/",
        "/admin/auth/user/",
        f"/admin/auth/user/{demo.pk}/change/",
        "/admin/auth/group/add/",
        "/admin/password_change/",
    ]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_no_admin_page_has_a_serious_or_critical_axe_violation(
    live_server: Any, browser: Any, scheme: str
) -> None:
    options = axe_context(scheme)
    seed()
    pages = admin_pages()
    problems: Problems = {}
    context = browser.new_context(**options)
    try:
        page = context.new_page()
        page.set_default_timeout(20_000)
        page.goto(f"{live_server.url}/admin/login/")
        check(page, "/admin/login/", problems, ALSO_BLOCKING)
        log_in(page, live_server.url, "demo")
        for path in pages:
            response = page.goto(f"{live_server.url}{path}")
            assert response is not None
            assert response.status == 200, (path, response.status)
            check(page, path, problems, ALSO_BLOCKING)
        # Rows the admin's script adds from its blank template, on both ordered pages.
        for path in (pages[4], pages[7]):
            page.goto(f"{live_server.url}{path}")
            for link in page.locator(".add-row a").all():
                link.click()
            check(page, f"{path} with added rows", problems, ALSO_BLOCKING)
    finally:
        context.close()
    assert not problems, report(scheme, problems, "admin pages")


def _row_names(page: Any, group: str, column: str) -> list[str | None]:
    found: list[str | None] = page.eval_on_selector_all(
        f"#{group} tr.form-row:not(.empty-form) td.field-{column} :is(input, select)",
        "els => els.map(el => el.getAttribute('aria-label'))",
    )
    return found


def test_rows_added_moved_or_removed_in_the_admin_are_named_by_their_row(
    live_server: Any, browser: Any
) -> None:
    seed()
    wren = Agent.objects.get(team__slug=DEMO_TEAM, slug="wren")
    count = wren.sections.count()
    titles = [f"Title, row {n}" for n in range(1, count + 2)]
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    try:
        page = context.new_page()
        log_in(page, live_server.url, "demo")
        page.goto(f"{live_server.url}/admin/lens/agent/{wren.pk}/change/")
        group = page.locator("#sections-group")
        group.locator(".add-row a").click()
        assert _row_names(page, "sections-group", "title") == titles
        added = page.locator(f"#id_sections-{count}-title")
        # Moved up with its arrow, the new row takes its neighbour's number.
        group.get_by_role("button", name=f"Move row {count + 1} up").click()
        assert added.get_attribute("aria-label") == f"Title, row {count}"
        assert _row_names(page, "sections-group", "title") == titles

        # A team's autocomplete box says its column and row, then the chosen user.
        team = Team.objects.get(slug=DEMO_TEAM)
        page.goto(f"{live_server.url}/admin/lens/team/{team.pk}/change/")
        page.wait_for_load_state("load")
        memberships = page.locator("#memberships-group")
        rows = team.memberships.count() + 1  # and the blank extra row
        for _ in range(2):
            memberships.locator(".add-row a").click()
        expected = [f"User, row {n}" for n in range(1, rows + 3)]
        assert _row_names(page, "memberships-group", "user") == expected
        first = team.memberships.order_by("pk").values_list("user__username", flat=True)[0]
        boxes = memberships.get_by_role("combobox")
        assert boxes.first.get_attribute("aria-label") == "User, row 1"
        assert memberships.get_by_role("combobox", name=f"User, row 1 {first}").count() == 1
        assert memberships.get_by_role("combobox", name=f"User, row {rows + 2}").count() == 1
        # Removing a new row numbers the ones after it again.
        memberships.locator("tr.dynamic-memberships .inline-deletelink").first.click()
        assert _row_names(page, "memberships-group", "user") == expected[:-1]
        assert memberships.get_by_role("combobox", name=f"User, row {rows + 1}").count() == 1
        assert memberships.get_by_role("combobox", name=f"User, row {rows + 2}").count() == 0
    finally:
        context.close()
