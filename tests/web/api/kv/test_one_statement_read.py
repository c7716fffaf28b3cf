"""A key/value read through the API checks its token and reads the key in one statement:
each outcome (no token, revoked token, missing key, missing version, the value) is told
apart in that one answer, exactly as the two separate lookups told them apart."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from kvstore import store
from lens.models import ApiToken, Team
from tests.api_calls import ApiClient

pytestmark = pytest.mark.django_db


def one_query_get(api: ApiClient, path: str) -> tuple[int, dict[str, Any]]:
    with CaptureQueriesContext(connection) as queries:
        answer = api.get(path)
    assert len(queries.captured_queries) == 1, [q["sql"] for q in queries.captured_queries]
    return answer.status_code, answer.json()


def test_a_read_is_one_statement_with_the_token_check(team: Team) -> None:
    _token, raw = ApiToken.objects.issue(team)
    store.write(team, "must.a", "one")
    store.write(team, "must.a", "two")
    api = ApiClient(raw)
    status, body = one_query_get(api, "/api/kv/must.a")
    assert (status, body["version"], body["payload"]) == (200, 2, "two")
    status, body = one_query_get(api, "/api/kv/must.a?version=1")
    assert (status, body["version"], body["payload"]) == (200, 1, "one")


def test_a_missing_key_and_a_missing_version_are_told_apart(team: Team) -> None:
    _token, raw = ApiToken.objects.issue(team)
    store.write(team, "must.a", "one")
    api = ApiClient(raw)
    status, body = one_query_get(api, "/api/kv/must.b")
    assert status == 404
    assert body == {
        "error": {"code": "key_not_found", "message": "No key 'must.b'.", "key": "must.b"}
    }
    status, body = one_query_get(api, "/api/kv/must.a?version=2")
    assert status == 404
    assert body == {
        "error": {
            "code": "version_not_found",
            "message": "Key 'must.a' has no version 2.",
            "version": 2,
        }
    }
    status, body = one_query_get(api, "/api/kv/must.b?version=2")
    assert (status, body["error"]["code"]) == (404, "key_not_found")


@pytest.mark.parametrize("path", ["/api/kv/must.a", "/api/kv/must.b", "/api/kv/must.a?version=9"])
def test_no_live_token_is_401_whatever_the_key(team: Team, path: str) -> None:
    token, raw = ApiToken.objects.issue(team)
    store.write(team, "must.a", "one")
    status, body = one_query_get(ApiClient("cl_not-a-token"), path)
    assert (status, body["error"]["code"]) == (401, "unauthorized")
    ApiToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())
    status, body = one_query_get(ApiClient(raw), path)
    assert (status, body["error"]["code"]) == (401, "unauthorized")


def test_another_teams_token_never_reads_this_teams_key(team: Team, other_team: Team) -> None:
    store.write(team, "must.a", "secret")
    _token, raw = ApiToken.objects.issue(other_team)
    status, body = one_query_get(ApiClient(raw), "/api/kv/must.a")
    assert (status, body["error"]["code"]) == (404, "key_not_found")


@pytest.mark.parametrize(
    ("query", "status"),
    [("version=0", 422), ("version=abc", 422), ("version=1&version=1", 200), ("version=+1", 200)],
)
def test_versions_the_joined_read_leaves_alone_are_answered_as_before(
    team: Team, query: str, status: int
) -> None:
    _token, raw = ApiToken.objects.issue(team)
    store.write(team, "must.a", "one")
    answer = ApiClient(raw).get(f"/api/kv/must.a?{query}")
    assert answer.status_code == status, answer.json()


def test_an_invalid_key_is_still_refused_after_the_token_check(team: Team) -> None:
    _token, raw = ApiToken.objects.issue(team)
    assert ApiClient("cl_nope").get("/api/kv/bad key").status_code == 401
    answer = ApiClient(raw).get("/api/kv/bad key")
    assert (answer.status_code, answer.json()["error"]["code"]) == (422, "invalid_key")
