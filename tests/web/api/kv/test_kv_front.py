"""The key/value store's own route (``web.api.kv_front``) answers exactly as the API
behind it: for every request below, the served client (the front first, as the
production server runs) and Django alone give the same status, headers and bytes (and,
for a write, the same rows and audit event), and the front answers the ones it is meant
to answer, and only those."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from kvstore import store
from kvstore.core.keys import PAYLOAD_MAX_RUNES
from kvstore.models import Version
from lens.models import ApiToken, AuditEvent, Team
from tests.api_calls import ServedClient

pytestmark = pytest.mark.django_db

# Over the gzip threshold (lens.serving.compression.MIN_BYTES) once in JSON.
LARGE = "Remember the user's time zone and units. " * 200


@pytest.fixture
def raw(team: Team, other_team: Team) -> str:
    _token, raw = ApiToken.objects.issue(team)
    store.write(team, "must.a", "one")
    store.write(team, "must.a", "two\nlines ☃ \U0001f600")
    store.write(team, "ref.large", LARGE)
    store.write(other_team, "must.theirs", "secret")
    return raw


def both(path: str, headers: dict[str, str], **extra: Any) -> tuple[Any, Any, bool]:
    """The answer of Django alone, the served client's, and whether the front gave it."""
    served = ServedClient()
    alone = Client().get(path, headers=headers, **extra)
    answer = served.get(path, headers=headers, **extra)
    return alone, answer, bool(served.handler.answered)


def same(alone: Any, answer: Any) -> None:
    assert answer.status_code == alone.status_code, answer.content
    assert sorted(answer.items()) == sorted(alone.items())
    assert answer.content == alone.content


# (path, extra headers): each one the front answers.
ANSWERED = [
    ("/api/kv/must.a", {}),
    ("/api/kv/must.a?version=1", {}),
    ("/api/kv/must.a?version=2", {}),
    ("/api/kv/must.a?unrelated=1", {}),
    ("/api/kv/%6Dust.a", {}),  # percent-encoded: the key Django decodes
    ("/api/kv/must.b", {}),  # key_not_found
    ("/api/kv/must.a?version=3", {}),  # version_not_found
    ("/api/kv/must.b?version=3", {}),
    ("/api/kv/must.theirs", {}),  # another team's key is not found
    ("/api/kv/ref.large", {}),
    ("/api/kv/ref.large", {"Accept-Encoding": "gzip"}),
    ("/api/kv/ref.large", {"Accept-Encoding": "gzip;q=0, br"}),
    ("/api/kv/ref.large", {"Accept-Encoding": "*"}),
    ("/api/kv/must.a", {"Accept-Encoding": "gzip"}),  # too small to compress
    ("/api/kv/must.a", {"Cookie": "sessionid=whatever"}),
    ("/api/kv/must.a", {"X-Note": "caf\u00e9"}),
    # The API does not check Host (no view builds anything from it): nor does the front.
    ("/api/kv/must.a", {"Host": "elsewhere.example"}),
]


@pytest.mark.parametrize(("path", "headers"), ANSWERED)
def test_the_front_answers_as_the_api_does(raw: str, path: str, headers: dict[str, str]) -> None:
    alone, answer, by_front = both(path, {"Authorization": f"Bearer {raw}", **headers})
    same(alone, answer)
    assert by_front


def test_a_lower_case_scheme_is_a_bearer_token_too(raw: str) -> None:
    alone, answer, by_front = both("/api/kv/must.a", {"Authorization": f"bearer {raw}"})
    same(alone, answer)
    assert answer.status_code == 200
    assert by_front


def test_a_token_that_is_not_live_is_refused_here_in_one_statement(raw: str) -> None:
    for token in ("cl_not-a-token", f"{raw} extra"):
        alone, answer, by_front = both("/api/kv/must.a", {"Authorization": f"Bearer {token}"})
        same(alone, answer)
        assert (answer.status_code, answer["WWW-Authenticate"]) == (401, "Bearer")
        assert by_front
    ApiToken.objects.update(revoked_at=timezone.now())
    served = ServedClient()
    with CaptureQueriesContext(connection) as queries:
        answer = served.get("/api/kv/must.a", headers={"Authorization": f"Bearer {raw}"})
    assert answer.status_code == 401
    assert len(queries.captured_queries) == 1
    assert served.handler.answered


# (method, path, headers, extra): each one Django answers, unchanged.
LEFT_TO_DJANGO: list[tuple[str, str, dict[str, str], dict[str, Any]]] = [
    ("get", "/api/kv/must.a", {"Authorization": ""}, {}),
    ("get", "/api/kv/must.a", {"Authorization": "Bearer "}, {}),
    ("get", "/api/kv/must.a", {"Authorization": "Basic dTpw"}, {}),
    ("get", "/api/kv/must.a?version=0", {}, {}),
    ("get", "/api/kv/must.a?version=abc", {}, {}),
    ("get", "/api/kv/must.a?version=", {}, {}),
    ("get", "/api/kv/must.a?version=%2B1", {}, {}),
    ("get", "/api/kv/must.a?version=1&version=2", {}, {}),
    ("get", "/api/kv/must.a?version=99999999999", {}, {}),
    ("get", "/api/kv/must.a/history", {}, {}),
    ("get", "/api/kv/must.a/diff?from=1&to=2", {}, {}),
    ("get", "/api/kv/must.a/", {}, {}),
    ("get", "/api/kv/", {}, {}),
    ("get", "/api/kv", {}, {}),
    ("get", "/api/kv/a..b", {}, {}),
    ("get", "/api/kv/bad%20key", {}, {}),
    ("get", "/api/kv/%D0%BA%D0%BB%D1%8E%D1%87", {}, {}),
    ("get", "/api/kv/%FF", {}, {}),
    ("get", "/api/kv/must.a?q=%00", {}, {}),
    ("get", "/api/kv/must.a", {"X-Note": "a\x00b"}, {}),
    ("get", "/api/kv/must.a", {"Cookie": 'c="a\\000b"'}, {}),
    ("head", "/api/kv/must.a", {}, {}),
    ("delete", "/api/kv/must.theirs", {}, {}),
    ("get", "/api/bootstrap", {}, {}),
]


@pytest.mark.parametrize(("method", "path", "headers", "extra"), LEFT_TO_DJANGO)
def test_everything_else_is_answered_by_django_unchanged(
    raw: str, method: str, path: str, headers: dict[str, str], extra: dict[str, Any]
) -> None:
    headers = {"Authorization": f"Bearer {raw}", **headers}
    served = ServedClient()
    alone = getattr(Client(), method)(path, headers=headers, **extra)
    answer = getattr(served, method)(path, headers=headers, **extra)
    same(alone, answer)
    assert not served.handler.answered


def test_a_body_on_a_read_is_left_to_django(raw: str) -> None:
    served = ServedClient()
    answer = served.generic(
        "GET",
        "/api/kv/must.a",
        data=b'{"x": 1}',
        content_type="application/json",
        headers={"Authorization": f"Bearer {raw}"},
    )
    assert answer.status_code == 200
    assert not served.handler.answered


def test_behind_https_the_front_sends_hsts_and_leaves_the_redirect_to_django(
    raw: str, settings: Any
) -> None:
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    settings.SECURE_HSTS_PRELOAD = True
    headers = {"Authorization": f"Bearer {raw}"}
    alone, answer, by_front = both("/api/kv/must.a", headers, secure=True)
    same(alone, answer)
    assert answer["Strict-Transport-Security"].startswith("max-age=31536000")
    assert by_front
    alone, answer, by_front = both("/api/kv/must.a", headers)
    same(alone, answer)
    assert answer.status_code == 301
    assert not by_front


def test_a_front_turned_off_leaves_every_request_to_django(raw: str, settings: Any) -> None:
    settings.API_FRONT = ""
    served = ServedClient()
    answer = served.get("/api/kv/must.a", headers={"Authorization": f"Bearer {raw}"})
    assert answer.status_code == 200
    assert not served.handler.answered


def test_a_failing_read_is_left_to_django_which_answers_the_error(
    raw: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object) -> None:
        raise RuntimeError("the database went away")

    monkeypatch.setattr(store, "read_as", broken)
    served = ServedClient(raise_request_exception=False)
    answer = served.get("/api/kv/must.a", headers={"Authorization": f"Bearer {raw}"})
    assert (answer.status_code, answer.json()["error"]["code"]) == (500, "internal_error")
    assert not served.handler.answered


# --- writes --------------------------------------------------------------------------


def answered(answer: Any) -> tuple[int, list[tuple[str, str]], Any]:
    """An answer with its times left out (each write has its own)."""
    body = answer.json()
    if isinstance(body, dict):
        body.pop("written_at", None)
    return answer.status_code, sorted(answer.items()), body


def write_both(path: str, body: bytes, headers: dict[str, str]) -> tuple[Any, Any, bool]:
    """The same write through Django alone and through the served client, each rolled
    back after its answer, the rows and audit events it wrote, and whether the front
    answered."""
    outcomes = []
    for client in (Client(), ServedClient()):
        with transaction.atomic():
            answer = client.generic(
                "PUT", path, data=body, content_type="application/json", headers=headers
            )
            outcomes.append((answered(answer), stored()))
            transaction.set_rollback(True)
    by_front = bool(client.handler.answered) if isinstance(client, ServedClient) else False
    return outcomes[0], outcomes[1], by_front


def stored() -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Every version and audit event, without ids or times (each run has its own)."""
    versions = Version.objects.order_by("key__key", "version").values_list(
        "key__team_id", "key__key", "key__latest_version", "version", "payload", "runes"
    )
    events = AuditEvent.objects.order_by("seq").values_list(
        "team_id", "seq", "actor", "action", "object_id", "details"
    )
    return list(versions), list(events)


def put_body(**fields: Any) -> bytes:
    return json.dumps(fields).encode()


# (path, body): each one the front answers.
WRITES_ANSWERED = [
    ("/api/kv/must.new", put_body(payload="first")),
    ("/api/kv/must.a", put_body(payload="three")),
    ("/api/kv/must.a", put_body(payload="three", if_version=2)),
    ("/api/kv/must.a", put_body(payload="three", if_version=1)),  # version_conflict
    ("/api/kv/must.a", put_body(payload="three", if_version=0)),
    ("/api/kv/must.new", put_body(payload="first", if_version=0)),
    ("/api/kv/must.new", put_body(payload="x" * PAYLOAD_MAX_RUNES)),
    ("/api/kv/must.new", put_body(payload="x" * (PAYLOAD_MAX_RUNES + 1))),  # too large
    ("/api/kv/must.new", put_body(payload="")),
    ("/api/kv/must.new", put_body(payload="\u2028 \U0001f600 \u0301e")),
    ("/api/kv/must.new", put_body(payload="y", if_version=None)),
    ("/api/kv/%6Dust.new", put_body(payload="decoded key")),
]


@pytest.mark.parametrize(("path", "body"), WRITES_ANSWERED)
def test_the_front_writes_as_the_api_does(raw: str, path: str, body: bytes) -> None:
    alone, served, by_front = write_both(path, body, {"Authorization": f"Bearer {raw}"})
    assert served == alone
    assert by_front


def test_a_write_with_a_token_that_is_not_live_is_refused_first(raw: str) -> None:
    # A refused body goes to Django, which checks the token first: 401 either way.
    for body, front in [(put_body(payload="x"), True), (b"not json", False)]:
        alone, served, by_front = write_both(
            "/api/kv/must.a", body, {"Authorization": "Bearer cl_nope"}
        )
        assert served == alone
        assert served[0][0] == 401
        assert by_front is front


# (path, body, headers): each one Django answers, unchanged, having written nothing more.
WRITES_LEFT_TO_DJANGO = [
    ("/api/kv/must.a", b"not json", {}),
    ("/api/kv/must.a", b"", {}),
    ("/api/kv/must.a", b"[1, 2]", {}),
    ("/api/kv/must.a", b'"text"', {}),
    ("/api/kv/must.a", put_body(payload="x", extra=1), {}),
    ("/api/kv/must.a", put_body(payload=1), {}),
    ("/api/kv/must.a", put_body(payload="x", if_version=True), {}),
    ("/api/kv/must.a", put_body(payload="x", if_version=-1), {}),
    ("/api/kv/must.a", put_body(payload="x", if_version=2**31), {}),
    ("/api/kv/must.a", put_body(payload="x", if_version="2"), {}),
    ("/api/kv/must.a", b'{"payload": "x", "payload": "y"}', {}),
    ("/api/kv/must.a", put_body(payload="a\u0000b"), {}),
    ("/api/kv/must.a", b'{"payload": "\\ud800"}', {}),
    ("/api/kv/must.a?if_version=2", put_body(payload="x"), {}),
    ("/api/kv/a..b", put_body(payload="x"), {}),
    ("/api/kv/must.a/history", put_body(payload="x"), {}),
    ("/api/kv/must.a", put_body(payload="x"), {"Authorization": ""}),
    ("/api/kv/must.a", put_body(payload="x" * (1024 * 1024)), {}),
]


@pytest.mark.parametrize(("path", "body", "headers"), WRITES_LEFT_TO_DJANGO)
def test_every_other_write_is_answered_by_django_unchanged(
    raw: str, path: str, body: bytes, headers: dict[str, str]
) -> None:
    alone, served, by_front = write_both(path, body, {"Authorization": f"Bearer {raw}", **headers})
    assert served == alone
    assert not by_front


def test_an_unexpected_error_in_a_write_is_answered_once_never_retried(
    raw: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []

    def broken(*args: object) -> None:
        calls.append("write")
        raise RuntimeError("the disk is full")

    monkeypatch.setattr(store, "write_as", broken)
    served = ServedClient(raise_request_exception=False)
    answer = served.put(
        "/api/kv/must.a",
        data=put_body(payload="x"),
        content_type="application/json",
        headers={"Authorization": f"Bearer {raw}"},
    )
    assert (answer.status_code, answer.json()["error"]["code"]) == (500, "internal_error")
    assert calls == ["write"]
    assert served.handler.answered


def test_a_write_checks_its_token_in_its_own_first_statement_on_postgresql(raw: str) -> None:
    served = ServedClient()
    with CaptureQueriesContext(connection) as queries:
        answer = served.put(
            "/api/kv/must.a",
            data=put_body(payload="three"),
            content_type="application/json",
            headers={"Authorization": f"Bearer {raw}"},
        )
    assert answer.status_code == 200
    token_checks = [q for q in queries.captured_queries if "digest" in str(q["sql"])]
    assert len(token_checks) == 1
    if connection.vendor == "postgresql":
        assert "INSERT INTO" in str(token_checks[0]["sql"])


def test_refusals_are_logged_as_django_logs_them(
    raw: str, caplog: pytest.LogCaptureFixture
) -> None:
    def logged(client: Client, method: str, path: str, body: bytes = b"") -> list[tuple[str, str]]:
        caplog.clear()
        with caplog.at_level("WARNING", logger="django.request"):
            getattr(client, method)(
                path, data=body, content_type="application/json", headers=bearer
            )
        return [(r.levelname, r.getMessage()) for r in caplog.records]

    bearer = {"Authorization": f"Bearer {raw}"}
    conflict = put_body(payload="x", if_version=0)
    for method, path, body in [
        ("get", "/api/kv/must.b", b""),
        ("get", "/api/kv/must.a?version=9", b""),
        ("put", "/api/kv/must.a", conflict),
    ]:
        served = ServedClient()
        assert logged(served, method, path, body) == logged(Client(), method, path, body)
        assert served.handler.answered
    assert logged(ServedClient(), "get", "/api/kv/must.b") == [
        ("WARNING", "Not Found: /api/kv/must.b")
    ]
