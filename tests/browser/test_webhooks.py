"""Settings › Webhooks in the real Chromium: the secret's Copy button works with
JavaScript and is hidden without it (the secret stays there as selectable text); Resend
swaps its row's cell and the waiting count with htmx, and posts and comes back without
JavaScript."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from lens.actors import SYSTEM
from lens.models import Membership, Role, Team
from tests.browser.axe import Problems, axe_context, check, report
from tests.factories import login, make_user
from webhooks.endpoints import create_endpoint
from webhooks.models import Attempt, Dispatch, Endpoint

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PUBLIC = "https://93.184.215.14/hooks/lens"


@pytest.fixture
def ria(db: None) -> None:
    team = Team.objects.create(slug="acme", name="Acme")
    user = make_user("ria", team)
    Membership.objects.filter(user=user).update(role=Role.REVIEWER)


def add_webhook(page: Any, base: str) -> str:
    page.goto(f"{base}/settings/webhooks/")
    page.get_by_label("URL").fill(PUBLIC)
    page.get_by_label("Every event, and any added later").check()
    page.get_by_role("button", name="Add webhook").click()
    secret: str = page.locator("[data-secret]").inner_text()
    return secret.strip()


def test_the_secret_is_copied_with_javascript(live_server: Any, browser: Any, ria: None) -> None:
    context = browser.new_context(permissions=["clipboard-read", "clipboard-write"])
    page = context.new_page()
    try:
        login(page, live_server.url, "ria")
        secret = add_webhook(page, live_server.url)
        assert secret == Endpoint.objects.get().secret
        copy = page.get_by_role("button", name="Copy")
        copy.click()
        assert page.evaluate("navigator.clipboard.readText()") == secret
    finally:
        context.close()


def test_without_javascript_the_secret_is_text_to_select_and_resend_posts(
    live_server: Any, browser: Any, ria: None
) -> None:
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        login(page, live_server.url, "ria")
        secret = add_webhook(page, live_server.url)
        assert secret.startswith("whsec_")
        assert page.get_by_role("button", name="Copy").count() == 0  # hidden: it needs JS
        made = Endpoint.objects.get()
        _tried(made)
        page.goto(f"{live_server.url}/settings/webhooks/{made.pk}/")
        page.get_by_role("button", name="Resend").first.click()
        page.wait_for_url(f"{live_server.url}/settings/webhooks/{made.pk}/?team=acme")
        assert "is queued to be sent again now" in page.locator(".flash").inner_text()
        assert Dispatch.objects.filter(endpoint=made).count() == 2
    finally:
        context.close()


def _tried(endpoint: Endpoint) -> None:
    """A try of the endpoint's first message, as the sender records one."""
    dispatch = Dispatch.objects.filter(endpoint=endpoint).earliest("pk")
    Attempt.objects.create(
        dispatch=dispatch, endpoint=endpoint, at=timezone.now(), status_code=500, error="HTTP 500"
    )


def test_resend_with_htmx_swaps_the_cell_and_the_count(
    live_server: Any, page: Any, ria: None
) -> None:
    team = Team.objects.get(slug="acme")
    made = create_endpoint(team, SYSTEM, PUBLIC, ["*"]).endpoint
    _tried(made)
    login(page, live_server.url, "ria")
    url = f"{live_server.url}/settings/webhooks/{made.pk}/"
    page.goto(url)
    assert page.locator("#webhook-waiting").inner_text() == "1"
    page.get_by_role("button", name="Resend").click()
    page.locator("[data-resent]").wait_for()
    assert page.locator("[data-resent]").inner_text() == "Queued again"
    assert page.locator("#webhook-waiting").inner_text() == "2"
    assert page.url == url  # swapped in place, no page load
    assert Dispatch.objects.filter(endpoint=made).count() == 2


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_refused_form_and_a_secret_shown_have_no_serious_axe_violation(
    live_server: Any, browser: Any, ria: None, scheme: str
) -> None:
    context = browser.new_context(**axe_context(scheme))
    page = context.new_page()
    problems: Problems = {}
    try:
        login(page, live_server.url, "ria")
        page.goto(f"{live_server.url}/settings/webhooks/")
        page.get_by_label("URL").fill("https://10.0.0.8/hook")
        page.get_by_role("button", name="Add webhook").click()
        page.locator("[data-field-error]").first.wait_for()
        check(page, "the form, refused", problems)
        add_webhook(page, live_server.url)
        check(page, "the secret, shown once", problems)
    finally:
        context.close()
    assert not problems, report(scheme, problems)
