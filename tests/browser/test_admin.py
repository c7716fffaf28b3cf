"""The agent's admin page in the real Chromium: it fits the screen, and its arrows put
rows in order with JavaScript and without it."""

from __future__ import annotations

from typing import Any

import pytest

from demo.configs import COMPANION
from lens.agents import config_of
from lens.models import Agent, Team
from memory.composition import compose
from tests.factories import create_agent, login, make_user, sample_config

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LONG = (
    "The user's calendar for the next fourteen days: every meeting, its place, who "
    "else attends and the notes attached to it, read through the calendar tool. " * 3
)


def big_agent() -> Agent:
    team = Team.objects.create(slug="acme", name="Acme")
    make_user("root", team, is_staff=True, is_superuser=True)
    config = sample_config()
    config["background"]["sections"] += [
        {"id": f"section_{i}", "title": f"A rather long section title number {i}"} for i in range(4)
    ]
    config["awareness"] = [
        {"name": f"Source {i}", "description": LONG, "access_method": "calendar_lookup tool"}
        for i in range(3)
    ]
    return create_agent(team, "wren", config)


def section_ids(page: Any) -> list[str]:
    ids: list[str] = page.eval_on_selector_all(
        "#sections-group tr.form-row:not(.empty-form) td.field-section_id input",
        "els => els.map(el => el.value)",
    )
    return ids


def stored_order(agent: Agent) -> list[str]:
    return list(agent.sections.order_by("position").values_list("section_id", flat=True))


@pytest.mark.parametrize("width", [1440, 390])
def test_the_agent_page_fits_the_screen(live_server: Any, browser: Any, width: int) -> None:
    agent = big_agent()
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    try:
        login(page, live_server.url, "root")
        page.goto(f"{live_server.url}/admin/lens/agent/{agent.pk}/change/")
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        if width == 1440:
            # Wide enough for every inline to show whole, without scrolling inside it.
            too_wide = page.eval_on_selector_all(
                ".inline-group",
                "els => els.filter(el => el.scrollWidth > el.clientWidth).map(el => el.id)",
            )
            assert too_wide == []
    finally:
        context.close()


def test_the_arrows_move_rows_on_the_page_and_the_order_is_saved(
    live_server: Any, page: Any
) -> None:
    agent = big_agent()
    url = f"{live_server.url}/admin/lens/agent/{agent.pk}/change/"
    login(page, live_server.url, "root")
    page.goto(url)
    before = section_ids(page)
    assert before[:3] == ["user_profile", "ground_rules", "section_0"]
    # With the script, the arrows replace the typed numbers.
    assert page.locator("#sections-group input.lens-order-input[type=number]").count() == 0

    group = page.locator("#sections-group")
    up = group.get_by_role("button", name="Move row 3 up")
    up.click()
    assert page.url == url  # moved on the page, nothing submitted
    assert section_ids(page)[:3] == ["user_profile", "section_0", "ground_rules"]
    assert page.evaluate("document.activeElement.dataset.move") == "up"
    assert "Moved to row 2" in group.locator("[role=status]").inner_text()
    # The keyboard carries on from where the row went.
    page.keyboard.press("Enter")
    assert section_ids(page)[:2] == ["section_0", "user_profile"]
    group.get_by_role("button", name="Move row 6 down").click()  # the last: stays
    assert section_ids(page)[-1] == before[-1]
    # A row added and left blank gets its arrows' names, and does not block the save.
    group.get_by_text("Add another Section declaration").click()
    assert group.get_by_role("button", name="Move row 7 up").count() == 1

    page.locator("input[name=_save]").first.click()
    page.wait_for_url(f"{live_server.url}/admin/lens/agent/")
    assert stored_order(agent) == [
        "section_0",
        "user_profile",
        "ground_rules",
        "section_1",
        "section_2",
        "section_3",
    ]


def test_the_arrows_work_without_javascript(live_server: Any, browser: Any) -> None:
    agent = big_agent()
    url = f"{live_server.url}/admin/lens/agent/{agent.pk}/change/"
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        login(page, live_server.url, "root")
        page.goto(url)
        assert (
            page.locator(
                "#sections-group tr:not(.empty-form) input.lens-order-input[type=number]"
            ).count()
            == 6
        )
        page.locator("#sections-group").get_by_role("button", name="Move row 2 down").click()
        page.wait_for_url(f"{url}#sections-group")
        assert stored_order(agent)[:3] == ["user_profile", "section_0", "ground_rules"]
        assert section_ids(page)[:3] == ["user_profile", "section_0", "ground_rules"]
    finally:
        context.close()


def test_saving_wren_unchanged_keeps_her_prompt_identical(live_server: Any, page: Any) -> None:
    # Chromium submits the textareas' line breaks as CR LF: they must come back as LF.
    team = Team.objects.create(slug="acme", name="Acme")
    make_user("root", team, is_staff=True, is_superuser=True)
    agent = create_agent(team, "wren", COMPANION)
    before = (config_of(agent).model_dump_json(), compose(agent).prompt.text)
    manual = Agent.objects.get(pk=agent.pk).manual
    assert "\n" in manual

    login(page, live_server.url, "root")
    page.goto(f"{live_server.url}/admin/lens/agent/{agent.pk}/change/")
    page.locator("input[name=_save]").first.click()
    page.wait_for_url(f"{live_server.url}/admin/lens/agent/")

    agent = Agent.objects.get(pk=agent.pk)
    assert agent.manual == manual
    assert len(agent.manual) == len(manual)
    assert (config_of(agent).model_dump_json(), compose(agent).prompt.text) == before
