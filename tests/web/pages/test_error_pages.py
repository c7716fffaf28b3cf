"""The product's own error pages (SPEC §13): with DEBUG off, a missing page, a crash, a
refused permission, an expired form or a bad request shows a styled page with a way
home, never the framework's page or a stack trace; the API keeps its JSON envelope.

This module is also the URLconf of the tests that need views that fail on purpose.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, SuspiciousOperation
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.test import Client, override_settings
from django.urls import path

from lens.models import Team
from tests.factories import create_agent, logged_in, make_user
from tests.pages import Dom, dom
from web import urls as product_urls

pytestmark = pytest.mark.django_db


def _crash(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("secret detail that must never reach the page")


def _forbid(request: HttpRequest) -> HttpResponse:
    raise PermissionDenied("Deciding promotions needs the memory.approve_promotion permission.")


def _suspicious(request: HttpRequest) -> HttpResponse:
    raise SuspiciousOperation("tampered")


urlpatterns = [
    path("crash/", _crash),
    path("forbid/", _forbid),
    path("suspicious/", _suspicious),
    *product_urls.urlpatterns,
]

production = override_settings(DEBUG=False, ROOT_URLCONF=__name__)


def error_page(response: Any, status: int) -> Dom:
    """The page, checked for what every error page promises: its own card, a link
    home, the product's stylesheet, and nothing of the framework or the crash."""
    page = dom(response, status)
    assert response["Content-Type"].startswith("text/html")
    card = page.one("data-error-page")
    assert "/" in [e.get("href") for e in card.descendants() if e.tag == "a"]
    assert any(
        e.tag == "link" and (e.get("href") or "").endswith("lens/lens.css") for e in page.elements
    )
    text = response.content.decode()
    for leak in ("Traceback", "Django", "DEBUG", "secret detail", "urlpatterns"):
        assert leak not in text, leak
    return page


@production
@pytest.mark.parametrize("who", ["anonymous", "member"])
def test_an_unknown_page_is_the_products_404(team: Team, member: User, who: str) -> None:
    client = logged_in(member) if who == "member" else Client()
    page = error_page(client.get("/no/such/page/"), 404)
    assert page.one("data-error-page").get("data-error-page") == "404"
    assert "Page not found" in page.one("id", "error-title").squashed
    assert page.one("data-error-page").squashed.count("/no/such/page/") == 1


@production
def test_another_teams_agent_is_the_same_404(
    member_client: Client, stranger: User, other_team: Team
) -> None:
    create_agent(other_team, "theirs")
    page = error_page(member_client.get("/agents/theirs/"), 404)
    assert page.one("data-error-page").get("data-error-page") == "404"
    # The member's navigation is still there, so the way on is one click.
    assert page.links("Memories") == ["/memories/"]


@production
def test_a_crash_is_the_products_500_page(member: User) -> None:
    client = logged_in(member, raise_request_exception=False)
    page = error_page(client.get("/crash/"), 500)
    assert page.one("data-error-page").get("data-error-page") == "500"


def test_the_500_page_needs_no_request_no_context_and_no_database(
    django_assert_num_queries: Any,
) -> None:
    with django_assert_num_queries(0):
        html = render_to_string("500.html")
    assert 'data-error-page="500"' in html
    assert 'class="skip-link"' in html


@production
def test_a_refused_permission_is_the_products_403_with_the_reason(member_client: Client) -> None:
    page = error_page(member_client.get("/forbid/"), 403)
    card = page.one("data-error-page")
    assert card.get("data-error-page") == "403"
    assert "memory.approve_promotion" in card.squashed


@production
def test_a_form_without_its_csrf_token_is_the_products_expired_form_page(member: User) -> None:
    client = logged_in(member, enforce_csrf_checks=True)
    page = error_page(client.post("/approvals/bulk/", {"decision": "approve"}), 403)
    card = page.one("data-error-page")
    assert card.get("data-error-page") == "403-csrf"
    assert "Nothing was changed" in card.squashed


@production
def test_a_bad_request_is_the_products_400(member_client: Client) -> None:
    page = error_page(member_client.get("/suspicious/"), 400)
    assert page.one("data-error-page").get("data-error-page") == "400"


@production
def test_an_unknown_host_is_the_products_400() -> None:
    page = error_page(Client().get("/", HTTP_HOST="elsewhere.invalid"), 400)
    assert page.one("data-error-page").get("data-error-page") == "400"


@production
@pytest.mark.parametrize("path", ["/api/nowhere", "/api/agents/x/nowhere/deeper"])
def test_an_unknown_api_url_keeps_the_json_envelope(path: str) -> None:
    response = Client().get(path)
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["error"]["code"] == "not_found"


# --- the no-team empty state -----------------------------------------------------------


@pytest.mark.parametrize("path", ["/", "/approvals/", "/memories/", "/kv/"])
def test_a_user_without_a_team_is_told_whom_to_ask_not_sent_to_the_admin(path: str) -> None:
    page = dom(logged_in(make_user("loner")).get(path))
    card = page.one("data-no-team")
    assert "Ask an administrator to add loner" in card.squashed
    assert "create_team TEAM --member loner" in card.squashed
    assert not [e for e in card.descendants() if (e.get("href") or "").startswith("/admin/")]


def test_an_admin_without_a_team_gets_the_link_to_the_teams_in_the_admin() -> None:
    admin = make_user("root", is_staff=True, is_superuser=True)
    page = dom(logged_in(admin).get("/approvals/"))
    card = page.one("data-no-team")
    assert [e.get("href") for e in card.descendants() if e.tag == "a"] == ["/admin/lens/team/"]
    assert "Ask an administrator" not in card.squashed


# --- the skip link ---------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/", "/accounts/login/", "/no/such/page/"])
def test_every_page_starts_with_a_skip_link_to_the_main_content(
    member_client: Client, path: str
) -> None:
    with override_settings(DEBUG=False):
        response = member_client.get(path)
    page = dom(response, response.status_code)
    focusable = [e for e in page.elements if e.tag in ("a", "button", "input", "summary")]
    assert focusable[0].get("class") == "skip-link"
    assert focusable[0].get("href") == "#content"
    main = page.one("id", "content")
    assert main.tag == "main"
    assert main.get("tabindex") == "-1"
