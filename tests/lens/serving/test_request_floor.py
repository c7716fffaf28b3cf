"""What every API call costs around the store: the token check, the middleware it passes
through, the database connection it reuses, and how durable a write is on SQLite.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from kvstore import store
from lens.api_tokens import find_token
from lens.models import ApiToken, Team
from tests.api_calls import ApiClient
from tests.lens.serving.test_production import run_django
from tests.serving import run_python

pytestmark = pytest.mark.django_db

# What the browser's middleware leaves on a request it handled.
BROWSER_ATTRIBUTES = ("session", "user", "htmx", "_messages", "csrf_cookie_needs_reset")


# --- the token check -----------------------------------------------------------------


def test_the_token_check_is_one_query(team: Team) -> None:
    _token, raw = ApiToken.objects.issue(team, name="ci")
    with CaptureQueriesContext(connection) as queries:
        found = find_token(raw)
    assert len(queries.captured_queries) == 1
    assert found is not None
    assert found.team == team
    assert (found.team.slug, found.team.name, found.name) == (team.slug, team.name, "ci")
    # The columns the check does not read load on demand, with their real values.
    assert found.created_at == ApiToken.objects.get(pk=found.pk).created_at


@pytest.mark.parametrize("raw", ["", "lens_not-a-token", "x" * 5000])
def test_unknown_tokens_are_not_found(team: Team, raw: str) -> None:
    ApiToken.objects.issue(team)
    assert find_token(raw) is None


def test_a_revoked_token_is_refused_from_the_next_request_on(team: Team) -> None:
    token, raw = ApiToken.objects.issue(team)
    api = ApiClient(raw)
    store.write(team, "must.a", "one")
    assert api.get("/api/kv/must.a").status_code == 200
    ApiToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())
    # No cache sits between the check and the table: the very next call is refused.
    answer = api.get("/api/kv/must.a")
    assert answer.status_code == 401
    assert answer.json()["error"]["code"] == "unauthorized"


def test_a_deleted_token_and_a_deleted_team_are_refused(team: Team) -> None:
    token, raw = ApiToken.objects.issue(team)
    api = ApiClient(raw)
    assert api.get("/api/agents").status_code == 200
    token.delete()
    assert api.get("/api/agents").status_code == 401
    other = Team.objects.create(slug="gone", name="Gone")
    _token, raw = ApiToken.objects.issue(other)
    other.delete()
    assert ApiClient(raw).get("/api/agents").status_code == 401


# --- the API's own middleware --------------------------------------------------------


def test_api_calls_pass_none_of_the_browsers_middleware(team: Team, member: User) -> None:
    _token, raw = ApiToken.objects.issue(team)
    client = Client()
    client.force_login(member)  # a browser that also holds a session cookie
    answer = client.get("/api/agents", headers={"Authorization": f"Bearer {raw}"})
    assert answer.status_code == 200
    request = answer.wsgi_request
    for name in BROWSER_ATTRIBUTES:
        assert not hasattr(request, name), name
    assert "CSRF_COOKIE" not in request.META
    # Nothing a session or CSRF would add to the answer.
    assert "Set-Cookie" not in answer.headers
    assert "Cookie" not in answer.headers.get("Vary", "")


def test_api_calls_keep_the_security_headers_and_the_envelope(team: Team) -> None:
    _token, raw = ApiToken.objects.issue(team)
    api = ApiClient(raw)
    answer = api.get("/api/agents")
    assert answer.headers["X-Content-Type-Options"] == "nosniff"
    assert answer.headers["X-Frame-Options"] == "DENY"
    assert "default-src 'self'" in answer.headers["Content-Security-Policy"]
    missing = api.get("/api/no-such-thing")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"
    refused = ApiClient(None).get("/api/agents")
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "unauthorized"


def test_a_page_still_passes_every_middleware(member_client: Client) -> None:
    answer = member_client.get("/")
    assert answer.status_code == 200
    request = answer.wsgi_request
    assert request.user.is_authenticated
    for name in ("session", "htmx", "_messages"):
        assert hasattr(request, name), name
    assert answer.headers["Cache-Control"] == "private, no-store"


def test_a_page_post_without_csrf_is_still_refused(member: User) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(member)
    assert client.post("/kv/", {"key": "a", "payload": "b"}).status_code == 403


# --- durability ----------------------------------------------------------------------

SYNCHRONOUS = (
    "from django.db import connection; c = connection.cursor(); "
    "c.execute('PRAGMA synchronous'); print(c.fetchone()[0])"
)


def _synchronous(tmp_path: Path, **env: str) -> str:
    url = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    result = run_django(SYNCHRONOUS, DEBUG="1", DATABASE_URL=url, **env)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_sqlite_acknowledges_a_write_once_it_is_on_disk(tmp_path: Path) -> None:
    assert _synchronous(tmp_path) == "2"  # FULL: an fsync at every commit


def test_sqlite_durability_can_be_relaxed_explicitly(tmp_path: Path) -> None:
    assert _synchronous(tmp_path, SQLITE_SYNCHRONOUS="normal") == "1"


def test_an_unknown_durability_mode_stops_start_up(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    result = run_django("", DEBUG="1", DATABASE_URL=url, SQLITE_SYNCHRONOUS="OFF")
    assert result.returncode != 0
    assert "SQLITE_SYNCHRONOUS must be one of FULL, NORMAL" in result.stderr


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's own setting")
def test_the_suites_connection_is_full_too() -> None:
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA synchronous")
        assert cursor.fetchone()[0] == 2
    assert sqlite3.sqlite_version_info >= (3, 35)  # RETURNING, used by the write path


def test_the_asgi_application_opens_a_connection_per_request() -> None:
    # Each ASGI request runs on a thread of its own: a kept connection would be left
    # open behind every request (counted on PostgreSQL before this was set).
    code = (
        "import lens.asgi; from django.conf import settings; "
        "print(settings.DATABASES['default']['CONN_MAX_AGE'])"
    )
    result = run_python(code, DEBUG="1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "0"
