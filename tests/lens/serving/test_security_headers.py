"""Every answer carries the security headers (SPEC §13): a Content-Security-Policy with no
inline script or style and no eval, X-Frame-Options, X-Content-Type-Options and a
Referrer-Policy. Pages for a signed-in person are never stored by a browser or a proxy;
static files keep their cache lifetimes. htmx is configured to need no inline style and
to keep no copies of pages.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.http import HttpResponse
from django.test import Client, RequestFactory

from lens.models import Agent
from lens.serving.middleware import CONTENT_SECURITY_POLICY, SecurityHeadersMiddleware
from tests.api_calls import ApiClient
from tests.factories import HTMX, logged_in, make_user
from tests.pages import dom

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[3]
SIGNED_IN_PAGES = [
    "/",
    "/agents/wren/",
    "/approvals/",
    "/memories/",
    "/kv/",
    "/agents/wren/deliveries/",
    "/no/such/page/",
]


def directives(policy: str) -> dict[str, list[str]]:
    found = {}
    for part in policy.split(";"):
        name, *values = part.split()
        found[name] = values
    return found


def assert_security_headers(response: Any) -> None:
    policy = directives(response["Content-Security-Policy"])
    assert policy["default-src"] == ["'self'"]
    assert policy["script-src"] == ["'self'"]
    assert policy["style-src"] == ["'self'"]
    assert policy["object-src"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'none'"]
    assert policy["base-uri"] == ["'none'"]
    assert not any("unsafe" in value for values in policy.values() for value in values)
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] in ("same-origin", "strict-origin-when-cross-origin")


def cache_directives(response: Any) -> set[str]:
    return {part.strip() for part in response.get("Cache-Control", "").split(",") if part.strip()}


@pytest.mark.parametrize("path", SIGNED_IN_PAGES)
def test_a_signed_in_page_has_the_headers_and_is_never_stored(
    member_client: Client, wren: Agent, path: str
) -> None:
    response = member_client.get(path)
    assert response.status_code in (200, 404)
    assert_security_headers(response)
    assert {"private", "no-store"} <= cache_directives(response)
    assert "public" not in cache_directives(response)


def test_an_htmx_partial_is_never_stored_either(member_client: Client, wren: Agent) -> None:
    response = member_client.get("/memories/?q=tea", headers=HTMX)
    assert response.status_code == 200
    assert {"private", "no-store"} <= cache_directives(response)


def test_an_admin_page_has_the_headers(wren: Agent) -> None:
    admin = logged_in(make_user("root", is_staff=True, is_superuser=True))
    for path in ("/admin/", f"/admin/lens/agent/{wren.pk}/change/"):
        response = admin.get(path)
        assert response.status_code == 200
        assert_security_headers(response)
        assert {"private", "no-store"} <= cache_directives(response)


@pytest.mark.parametrize("path", ["/accounts/login/", "/no/such/page/", "/api/docs", "/healthz"])
def test_an_anonymous_page_has_the_headers(client: Client, path: str) -> None:
    response = client.get(path)
    assert_security_headers(response)


def test_the_400_page_and_api_answers_have_the_headers(
    member_client: Client, api: ApiClient, wren: Agent
) -> None:
    assert_security_headers(member_client.get("/memories/?kind=%00"))
    assert_security_headers(api.get("/api/agents"))
    assert_security_headers(api.get("/api/agents/%00"))


def test_static_files_keep_their_cache_lifetime(member: User) -> None:
    # Even for a signed-in person: static files are the same for everyone.
    response = logged_in(member).get("/static/lens/lens.css")
    assert response.status_code == 200
    assert "no-store" not in cache_directives(response)
    assert "private" not in cache_directives(response)
    assert response["X-Content-Type-Options"] == "nosniff"


def test_a_policy_a_view_sets_itself_is_kept(member_client: Client) -> None:
    response = member_client.get("/accounts/login/")
    assert response["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    custom = SecurityHeadersMiddleware(lambda request: _with_policy("default-src 'none'"))
    assert custom(RequestFactory().get("/"))["Content-Security-Policy"] == "default-src 'none'"


def _with_policy(policy: str) -> HttpResponse:
    response = HttpResponse("x")
    response["Content-Security-Policy"] = policy
    return response


def test_htmx_is_configured_to_need_no_inline_style_nor_eval_and_keep_no_copies(
    member_client: Client, wren: Agent
) -> None:
    page = dom(member_client.get("/"))
    (meta,) = [e for e in page.elements if e.tag == "meta" and e.get("name") == "htmx-config"]
    config = json.loads(str(meta.get("content")))
    assert config["includeIndicatorStyles"] is False
    assert config["allowEval"] is False
    assert config["historyCacheSize"] == 0
    # The config is read when htmx loads: the meta comes before htmx's script.
    html = member_client.get("/").content.decode()
    assert html.index('name="htmx-config"') < html.index("htmx-2")
    css = (ROOT / "static" / "lens" / "lens.css").read_text()
    assert ".htmx-request .htmx-indicator" in css


INLINE = re.compile(
    r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>|<style\b|\sstyle=|\son[a-z]+=",
    re.IGNORECASE,
)


def test_no_template_holds_an_inline_script_style_or_handler() -> None:
    offenders = {
        str(path.relative_to(ROOT)): INLINE.findall(path.read_text())
        for path in (ROOT / "templates").rglob("*.html")
        if INLINE.search(path.read_text())
    }
    assert offenders == {}
