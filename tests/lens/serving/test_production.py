"""The production path (SPEC §13): settings for a deployment behind HTTPS, the database
pool, mail-dependent account pages, and ``make serve`` answering real HTTP.
"""

from __future__ import annotations

import gzip
import http.client
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection as db_connection

from lens.envconf import Smtp, https_origins, smtp_settings
from tests.serving import (
    ROOT,
    SESSION_DATABASE_URL,
    clean_env,
    manage,
    production,
    run_python,
    serving,
    strong_key,
    with_database,
)
from web.pages.accounts import account_urlpatterns


def run_django(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_python(f"import django; django.setup(); {code}", **env)


# --- check --deploy ------------------------------------------------------------------


def test_check_deploy_passes_behind_https(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=clean_env(**production(tmp_path, HTTPS="1")),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_check_deploy_warns_without_https(tmp_path: Path) -> None:
    # The same check can fail: plain HTTP leaves the redirect, HSTS and cookies off.
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=clean_env(**production(tmp_path)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "security.W008" in result.stderr


# --- HTTPS=1 -------------------------------------------------------------------------

SECURITY_SETTINGS = (
    "from django.conf import settings as s; import json; print(json.dumps(["
    "s.SECURE_PROXY_SSL_HEADER, s.SECURE_SSL_REDIRECT, s.SECURE_REDIRECT_EXEMPT,"
    "s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_HSTS_SECONDS,"
    "s.SECURE_HSTS_INCLUDE_SUBDOMAINS, s.SECURE_HSTS_PRELOAD, s.CSRF_TRUSTED_ORIGINS]))"
)


def test_https_turns_on_the_proxy_header_redirect_cookies_and_hsts(tmp_path: Path) -> None:
    result = run_django(
        SECURITY_SETTINGS,
        **production(tmp_path, HTTPS="1", ALLOWED_HOSTS="lens.example,.corp.example"),
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [
        ["HTTP_X_FORWARDED_PROTO", "https"],
        True,
        ["^healthz$"],
        True,
        True,
        31536000,
        True,
        True,
        ["https://lens.example", "https://*.corp.example"],
    ]


def test_without_https_nothing_trusts_the_forwarded_header(tmp_path: Path) -> None:
    result = run_django(SECURITY_SETTINGS, **production(tmp_path))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [None, False, [], False, False, 0, False, False, []]


def test_csrf_trusted_origins_come_from_the_environment(tmp_path: Path) -> None:
    code = "from django.conf import settings; print(settings.CSRF_TRUSTED_ORIGINS)"
    env = production(tmp_path, HTTPS="1", CSRF_TRUSTED_ORIGINS="https://lens.example:8443")
    result = run_django(code, **env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['https://lens.example:8443']"


def test_https_origins_follow_allowed_hosts() -> None:
    assert https_origins(["a.example", ".b.example", "*"]) == [
        "https://a.example",
        "https://*.b.example",
    ]


# --- mail and the password-reset pages ------------------------------------------------


def test_smtp_urls_give_host_port_credentials_and_tls() -> None:
    assert smtp_settings(None) is None
    assert smtp_settings("smtp+tls://me%40x.example:p%2Fw@mail.example") == Smtp(
        "mail.example", 587, "me@x.example", "p/w", use_tls=True, use_ssl=False
    )
    assert smtp_settings("smtps://mail.example:2465") == Smtp(
        "mail.example", 2465, "", "", use_tls=False, use_ssl=True
    )
    with pytest.raises(ImproperlyConfigured, match="EMAIL_URL"):
        smtp_settings("http://mail.example")


def route_names(email_configured: bool) -> set[str]:
    patterns = account_urlpatterns(email_configured=email_configured)
    return {name for pattern in patterns if (name := getattr(pattern, "name", None))}


def test_without_mail_only_login_logout_and_password_change_exist() -> None:
    assert route_names(email_configured=False) == {
        "login",
        "logout",
        "password_change",
        "password_change_done",
    }
    assert "password_reset" in route_names(email_configured=True)


RESOLVE_RESET = (
    "from django.urls import Resolver404, resolve\n"
    "try: print(resolve('/accounts/password_reset/').url_name)\n"
    "except Resolver404: print('none')"
)


@pytest.mark.parametrize(
    ("mail", "expected"),
    [
        ({}, "none"),
        ({"EMAIL_HOST": "mail.example"}, "password_reset"),
        ({"EMAIL_URL": "smtp://mail.example"}, "password_reset"),
    ],
)
def test_password_reset_is_routed_only_when_mail_is_configured(
    tmp_path: Path, mail: dict[str, str], expected: str
) -> None:
    code = f"exec({RESOLVE_RESET!r})"
    result = run_django(code, **production(tmp_path, **mail))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == expected


# --- the PostgreSQL connection pool --------------------------------------------------

POOL_OPTIONS = (
    "from django.conf import settings; "
    "print(settings.DATABASES['default']['OPTIONS'].get('pool'), "
    "settings.DATABASES['default']['CONN_MAX_AGE'], end=' ')"
)
HEALTH_CHECKS = "; print(settings.DATABASES['default']['CONN_HEALTH_CHECKS'])"
PG_URL = "postgres://postgres@127.0.0.1:5432/postgres"


def test_db_pool_configures_a_psycopg_pool_on_postgresql() -> None:
    result = run_django(POOL_OPTIONS, DEBUG="1", DATABASE_URL=PG_URL, DB_POOL="1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "{'min_size': 2, 'max_size': 4, 'timeout': 10} 0"


def test_without_db_pool_connections_persist_with_health_checks() -> None:
    result = run_django(POOL_OPTIONS + HEALTH_CHECKS, DEBUG="1", DATABASE_URL=PG_URL)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["None", "600", "True"]


def test_sqlite_connections_persist_too(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    result = run_django(POOL_OPTIONS + HEALTH_CHECKS, DEBUG="1", DATABASE_URL=url)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["None", "600", "True"]


def test_a_pool_keeps_no_connection_of_its_own_between_requests() -> None:
    result = run_django(POOL_OPTIONS, DEBUG="1", DATABASE_URL=PG_URL, DB_POOL="1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-1] == "0"


def test_db_pool_refuses_persistent_connections() -> None:
    result = run_django("", DEBUG="1", DATABASE_URL=PG_URL, DB_POOL="1", DB_CONN_MAX_AGE="60")
    assert result.returncode != 0
    assert "DB_POOL=1 needs DB_CONN_MAX_AGE=0" in result.stderr


SERVER_SIDE_CURSORS = (
    "from django.conf import settings; "
    "print(settings.DATABASES['default'].get('DISABLE_SERVER_SIDE_CURSORS'))"
)


def test_server_side_cursors_can_be_turned_off_for_a_transaction_pooler() -> None:
    # PgBouncer in transaction mode loses a cursor declared outside a transaction
    # between its DECLARE and its FETCH: DB_SERVER_SIDE_CURSORS=0 reads those rows whole.
    default = run_django(SERVER_SIDE_CURSORS, DEBUG="1", DATABASE_URL=PG_URL)
    off = run_django(
        SERVER_SIDE_CURSORS, DEBUG="1", DATABASE_URL=PG_URL, DB_SERVER_SIDE_CURSORS="0"
    )
    assert (default.stdout.strip(), off.stdout.strip()) == ("False", "True"), default.stderr


def test_db_pool_is_ignored_on_sqlite_whose_connections_persist(tmp_path: Path) -> None:
    # make serve sets DB_POOL=1 whatever the database: on SQLite that must not turn
    # persistent connections off (a new connection per request doubled a read's time).
    result = run_django(POOL_OPTIONS, **production(tmp_path, DB_POOL="1"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "None 600"


@pytest.mark.skipif(
    not os.environ.get("DATABASE_URL", "").startswith("postgres"),
    reason="needs the PostgreSQL of DATABASE_URL",
)
def test_the_pool_serves_queries_on_postgresql() -> None:
    code = (
        "from django.db import connection; c = connection.cursor(); c.execute('SELECT 1'); "
        "print(c.fetchone()[0], connection.pool is not None)"
    )
    result = run_django(code, DEBUG="1", DATABASE_URL=os.environ["DATABASE_URL"], DB_POOL="1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1", "True"]


@pytest.mark.skipif(
    not os.environ.get("DATABASE_URL", "").startswith("postgres"),
    reason="needs the PostgreSQL of DATABASE_URL",
)
@pytest.mark.django_db
def test_the_pool_checks_a_busy_connection_without_a_round_trip() -> None:
    # The pool hands connections out through lens.dbpool's check, and each keeps the
    # statements prepared on it: the token check runs prepared after five executions on
    # a connection (the pool has two to four). On the suite's test database, whose
    # tables exist (DATABASE_URL's own database may never have been migrated).
    code = (
        "from django.db import connection; "
        "from lens.api_tokens import find_token\n"
        "for _ in range(40):\n"
        "    find_token('cl_none'); connection.close()\n"
        "c = connection.cursor(); c.execute('SELECT count(*) FROM pg_prepared_statements'); "
        "print(connection.pool._check.__name__, c.fetchone()[0] > 0)"
    )
    url = with_database(SESSION_DATABASE_URL, str(db_connection.settings_dict["NAME"]))
    result = run_django(code, DEBUG="1", DATABASE_URL=url, DB_POOL="1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["check_after_quiet", "True"]


PREPARE = "from django.conf import settings; print(settings.DATABASES['default']['OPTIONS'].get('prepare_threshold'))"


@pytest.mark.parametrize(("value", "expected"), [(None, "5"), ("0", "0"), ("off", "None")])
def test_prepared_statements_on_postgresql_unless_turned_off(
    value: str | None, expected: str
) -> None:
    env = {"DB_PREPARE_THRESHOLD": value} if value is not None else {}
    result = run_django(PREPARE, DEBUG="1", DATABASE_URL=PG_URL, **env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == expected


def test_a_prepare_threshold_that_is_not_a_number_is_refused() -> None:
    result = run_django(PREPARE, DEBUG="1", DATABASE_URL=PG_URL, DB_PREPARE_THRESHOLD="-1")
    assert result.returncode != 0
    assert "DB_PREPARE_THRESHOLD must be" in result.stderr


# --- make serve ----------------------------------------------------------------------


@dataclass
class Served:
    port: int
    log: Path
    env: dict[str, str]

    def request(
        self,
        method: str,
        path: str,
        headers: dict[str, str] | None = None,
        body: str | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            connection.request(
                method, path, body=body, headers={"Host": "127.0.0.1", **(headers or {})}
            )
            response = connection.getresponse()
            head = {name.lower(): value for name, value in response.getheaders()}
            # Every Set-Cookie, not only the last one.
            head["set-cookie"] = "\n".join(response.headers.get_all("Set-Cookie") or [])
            return response.status, head, response.read()
        finally:
            connection.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``make serve`` behind a pretend TLS proxy (HTTPS=1) on a free loopback port."""
    tmp = tmp_path_factory.mktemp("serve")
    env = clean_env(
        SECRET_KEY=strong_key(),
        ALLOWED_HOSTS="127.0.0.1",
        DATABASE_URL=f"sqlite:///{tmp / 'db.sqlite3'}",
        STATIC_ROOT=str(tmp / "static"),
        HTTPS="1",
        WEB_CONCURRENCY="1",
    )
    env.pop("DJANGO_SETTINGS_MODULE")
    with serving(env, tmp / "serve.log") as server:
        yield Served(server.port, server.log, env)


PROXIED = {"X-Forwarded-Proto": "https"}


@pytest.mark.slow
def test_serve_answers_healthz_over_plain_http(served: Served) -> None:
    status, _, body = served.request("GET", "/healthz")
    assert status == 200
    assert json.loads(body) == {"status": "ok"}


@pytest.mark.slow
def test_serve_redirects_plain_http_to_https(served: Served) -> None:
    status, head, _ = served.request("GET", "/accounts/login/")
    assert status == 301
    assert head["location"] == "https://127.0.0.1/accounts/login/"


@pytest.mark.slow
def test_serve_runs_with_debug_off_and_its_own_not_found_page(served: Served) -> None:
    status, _, body = served.request("GET", "/no/such/page/", PROXIED)
    assert status == 404
    assert b"Traceback" not in body
    assert b"URLconf" not in body


@pytest.mark.slow
def test_serve_sends_hsts_and_secure_cookies_behind_the_proxy(served: Served) -> None:
    status, head, _ = served.request("GET", "/accounts/login/", PROXIED)
    assert status == 200
    assert head["strict-transport-security"] == "max-age=31536000; includeSubDomains; preload"
    assert "csrftoken=" in head["set-cookie"]
    assert "Secure" in head["set-cookie"]


@pytest.mark.slow
def test_serve_accepts_a_post_through_the_https_proxy(served: Served) -> None:
    _, head, body = served.request("GET", "/accounts/login/", PROXIED)
    cookie = re.search(r"csrftoken=([^;]+)", head["set-cookie"])
    field = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', body)
    assert cookie
    assert field
    form = f"csrfmiddlewaretoken={field[1].decode()}&username=nobody&password=wrong"
    status, _, answer = served.request(
        "POST",
        "/accounts/login/",
        {
            **PROXIED,
            "Origin": "https://127.0.0.1",
            "Cookie": f"csrftoken={cookie[1]}",
            "Content-Type": "application/x-www-form-urlencoded",
        },
        form,
    )
    # Not 403 (CSRF): the form comes back saying the credentials are wrong.
    assert status == 200
    assert b"csrfmiddlewaretoken" in answer


@pytest.mark.slow
def test_serve_gives_hashed_compressed_static_files_a_long_cache(served: Served) -> None:
    _, _, body = served.request("GET", "/accounts/login/", PROXIED)
    stylesheet = re.search(rb'href="(/static/lens/lens\.[0-9a-f]{12}\.css)"', body)
    assert stylesheet, body[:2000]
    status, head, _ = served.request(
        "GET", stylesheet[1].decode(), {**PROXIED, "Accept-Encoding": "gzip"}
    )
    assert status == 200
    assert head["content-encoding"] == "gzip"
    assert "max-age=315360000" in head["cache-control"]
    assert "immutable" in head["cache-control"]


@pytest.mark.slow
def test_serve_answers_a_key_value_read_as_the_api_behind_https(served: Served) -> None:
    """The key/value read's own route (``API_FRONT``) under the real server: HSTS, gzip
    and the security headers behind the proxy, the redirect on plain HTTP, the envelope."""
    manage(served.env, "create_team", "front")
    token = manage(served.env, "issue_token", "front").splitlines()[-1]
    bearer = {"Authorization": f"Bearer {token}"}
    status, _, _ = served.request(
        "PUT", "/api/kv/must.front", {**PROXIED, **bearer}, json.dumps({"payload": "x" * 5000})
    )
    assert status == 201
    status, head, body = served.request(
        "GET", "/api/kv/must.front", {**PROXIED, **bearer, "Accept-Encoding": "gzip"}
    )
    assert status == 200
    assert head["strict-transport-security"] == "max-age=31536000; includeSubDomains; preload"
    assert head["x-content-type-options"] == "nosniff"
    assert "frame-ancestors 'none'" in head["content-security-policy"]
    assert (head["content-encoding"], head["vary"]) == ("gzip", "Accept-Encoding")
    assert json.loads(gzip.decompress(body))["payload"] == "x" * 5000
    status, head, _ = served.request("GET", "/api/kv/must.front", bearer)
    assert (status, head["location"]) == (301, "https://127.0.0.1/api/kv/must.front")
    status, _, body = served.request("GET", "/api/kv/must.none", {**PROXIED, **bearer})
    assert (status, json.loads(body)["error"]["code"]) == (404, "key_not_found")


@pytest.mark.slow
def test_serve_logs_each_request_with_its_time(served: Served) -> None:
    served.request("GET", "/log-test/?q=private+words", PROXIED)
    time.sleep(0.5)
    log = served.log.read_text()
    assert re.search(r'"GET /log-test/ HTTP/1\.1" 404 \d+\.\d\dms', log), log[-2000:]
    assert "private" not in log  # query strings (searches) stay out of the log


def test_every_setting_read_from_the_environment_is_in_the_configuration_table() -> None:
    # The settings, and what the production server reads for itself.
    sources = [
        ROOT / "lens" / "settings.py",
        *(
            ROOT / "lens" / "serving" / n
            for n in ("served.py", "server.py", "runtime.py", "telemetry.py")
        ),
    ]
    pattern = r'(?:env_\w+|_int|environ\.get)\(\s*"([A-Z][A-Z0-9_]*)"'
    names = {name for path in sources for name in re.findall(pattern, path.read_text())}
    assert {"DEBUG", "HTTPS", "DB_POOL", "CSRF_TRUSTED_ORIGINS", "SERVER_THREADS"} <= names
    assert "OTEL_SDK_DISABLED" in names
    page = (ROOT / "docs" / "operations-and-security.md").read_text()
    table = page.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    assert sorted(name for name in names if f"`{name}`" not in table) == []
