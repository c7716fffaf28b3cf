"""NUL and lone surrogates are refused once, for every input channel (SPEC §8): the path,
the query string (names and values), page forms (urlencoded and multipart), JSON bodies
(values and keys), headers and cookies. The API answers 422 with the error envelope,
pages the 400 page; nothing is ever written, and nothing reaches a view or the database
(PostgreSQL refuses NUL with a server error; SQLite would store it).

A lone surrogate cannot be spelled in UTF-8: it arrives as the bytes ``ED A0 80``, which
frameworks decode leniently (U+FFFD, or percent-encoded again), so it is caught on the
raw bytes.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.test.client import BOUNDARY, encode_multipart

from kvstore import store
from lens.core.raw_input import form_problem, multipart_problem, path_problem
from lens.models import Agent, Team
from tests.api_calls import ApiClient, assert_error
from tests.factories import (
    FORM_TEAM,
    HTMX,
    Unchanged,
    kv_page_url,
    post_decision,
    preference,
    versions_of,
    write_versions,
)
from tests.pages import dom

pytestmark = pytest.mark.django_db

NUL = "%00"
SURROGATE = "%ED%A0%80"  # U+D800 as UTF-8 would spell it, which UTF-8 forbids
BAD = pytest.mark.parametrize("bad", [NUL, SURROGATE], ids=["nul", "surrogate"])
# Raw multipart bytes (the test client encodes only dicts it is given as multipart).
MULTIPART = f"multipart/form-data; boundary={BOUNDARY}"
REFUSED_PAGE = "That request could not be understood"


def assert_refused_page(response: Any) -> str:
    """The 400 page, saying what was refused; returns that sentence."""
    assert response.status_code == 400, response.content[:300]
    page = dom(response, status=400)
    assert page.one("data-error-page", "400")
    assert REFUSED_PAGE in page.one("id", "error-title").text
    problem = page.one("data-input-problem").squashed
    assert "NUL (U+0000)" in problem or "valid UTF-8" in problem, problem
    return problem


def assert_refused_api(response: Any, where: str) -> dict[str, Any]:
    error = assert_error(response, 422, "invalid_request")
    assert error["message"].startswith(f"{where}: text must"), error
    assert [problem["loc"] for problem in error["errors"]] == [where]
    return error


@pytest.fixture
def unchanged(wren: Agent, member: User) -> Unchanged:
    write_versions(wren.team, "cfg.one", "first")
    return Unchanged()


# --- the path ------------------------------------------------------------------------


@BAD
@pytest.mark.parametrize("path", ["/agents/{}/", "/memories/{}/", "/kv/a{}/", "/deliveries/{}/"])
def test_a_page_path_holding_it_is_the_400_page(
    member_client: Client, unchanged: Unchanged, bad: str, path: str
) -> None:
    assert_refused_page(member_client.get(path.format(bad)))
    unchanged.check()


@BAD
@pytest.mark.parametrize(
    "path", ["/api/agents/{}", "/api/agents/wren{}/memories", "/api/kv/a{}", "/api/deliveries/{}"]
)
def test_an_api_path_holding_it_is_422(
    api: ApiClient, unchanged: Unchanged, bad: str, path: str
) -> None:
    assert_refused_api(api.get(path.format(bad)), "path")
    unchanged.check()


@BAD
def test_a_write_to_a_key_path_holding_it_stores_nothing(
    api: ApiClient, member_client: Client, unchanged: Unchanged, bad: str
) -> None:
    assert_refused_api(api.put(f"/api/kv/a{bad}", {"payload": "x"}), "path")
    response = member_client.post(
        f"/kv/a{bad}/", {"action": "write", "payload": "x", "team": FORM_TEAM}
    )
    assert_refused_page(response)
    unchanged.check()


def test_a_percent_sign_that_decodes_to_utf8_is_not_refused(member_client: Client) -> None:
    # The guard percent-decodes what Django encoded again; real text passes through.
    assert member_client.get("/agents/%C3%A9/").status_code == 404


# --- the query string ----------------------------------------------------------------


@BAD
@pytest.mark.parametrize(
    "path", ["/memories/?kind={}", "/approvals/?agent={}", "/memories/?q=a{}", "/kv/?prefix={}"]
)
def test_a_page_query_value_holding_it_is_the_400_page(
    member_client: Client, unchanged: Unchanged, bad: str, path: str
) -> None:
    assert member_client.get(path.format("x")).status_code == 200  # the same, clean
    unchanged.baseline()  # the clean visit remembered the team in the session
    problem = assert_refused_page(member_client.get(path.format(bad)))
    name = path.split("?")[1].split("=")[0]
    assert problem.startswith(f"A parameter of the address, “{name}”, was refused: text must")
    unchanged.check()


@BAD
def test_a_page_query_name_holding_it_is_the_400_page(
    member_client: Client, unchanged: Unchanged, bad: str
) -> None:
    assert_refused_page(member_client.get(f"/memories/?k{bad}=1"))
    unchanged.check()


@BAD
@pytest.mark.parametrize(
    "path",
    [
        "/api/agents/wren/memories?kind={}",
        "/api/agents/wren/memories?q={}",
        "/api/kv?prefix={}",
        "/api/agents/wren/recall?message={}",
    ],
)
def test_an_api_query_value_holding_it_is_422(
    api: ApiClient, unchanged: Unchanged, bad: str, path: str
) -> None:
    name = path.split("?")[1].split("=")[0]
    assert_refused_api(api.get(path.format(bad)), f"query.{name}")
    unchanged.check()


@BAD
def test_an_api_query_name_holding_it_is_422(
    api: ApiClient, unchanged: Unchanged, bad: str
) -> None:
    assert_refused_api(api.get(f"/api/agents/wren/memories?k{bad}=1"), "query")
    unchanged.check()


# --- page forms ----------------------------------------------------------------------


@pytest.mark.parametrize("payload", ["a\x00b", "\x00"])
def test_a_urlencoded_key_value_payload_holding_nul_is_refused(
    member_client: Client, team: Team, unchanged: Unchanged, payload: str
) -> None:
    body = f"action=write&team={FORM_TEAM}&payload=" + payload.replace("\x00", "%00")
    response = member_client.post(
        kv_page_url("cfg.one"), body, content_type="application/x-www-form-urlencoded"
    )
    assert_refused_page(response)
    assert versions_of(team, "cfg.one") == [(1, "first")]
    unchanged.check()


def test_a_urlencoded_payload_that_is_not_utf8_is_refused(
    member_client: Client, team: Team, unchanged: Unchanged
) -> None:
    body = f"action=write&team={FORM_TEAM}&payload=a{SURROGATE}b"
    response = member_client.post(
        kv_page_url("cfg.one"), body, content_type="application/x-www-form-urlencoded"
    )
    assert_refused_page(response)
    assert versions_of(team, "cfg.one") == [(1, "first")]
    unchanged.check()


def test_a_multipart_key_value_payload_holding_nul_is_refused(
    member_client: Client, team: Team, unchanged: Unchanged
) -> None:
    # The test client posts a dict as multipart/form-data.
    data = {"action": "write", "team": FORM_TEAM, "payload": "a\x00b"}
    assert_refused_page(member_client.post(kv_page_url("cfg.one"), data))
    assert versions_of(team, "cfg.one") == [(1, "first")]
    unchanged.check()


def test_a_multipart_field_that_is_not_utf8_is_refused(
    member_client: Client, team: Team, unchanged: Unchanged
) -> None:
    body = encode_multipart(BOUNDARY, {"action": "write", "team": FORM_TEAM, "payload": "aXb"})
    body = body.replace(b"aXb", b"a\xed\xa0\x80b")
    response = member_client.post(kv_page_url("cfg.one"), body, content_type=MULTIPART)
    assert_refused_page(response)
    assert versions_of(team, "cfg.one") == [(1, "first")]
    unchanged.check()


@pytest.mark.parametrize("htmx", [True, False])
def test_a_reject_reason_holding_nul_is_refused(
    reviewer_client: Client, wren: Agent, htmx: bool
) -> None:
    record_id = preference(wren, "Prefers a dark theme.", label="theme")
    unchanged = Unchanged()
    assert_refused_page(post_decision(reviewer_client, record_id, "reject", "no\x00", htmx=htmx))
    unchanged.check()


def test_a_form_field_name_holding_nul_is_refused(
    member_client: Client, unchanged: Unchanged
) -> None:
    body = f"action=write&team={FORM_TEAM}&payload=x&x{NUL}=1"
    response = member_client.post(
        kv_page_url("cfg.one"), body, content_type="application/x-www-form-urlencoded"
    )
    assert_refused_page(response)
    unchanged.check()


def test_a_clean_form_still_writes(member_client: Client, team: Team, unchanged: Unchanged) -> None:
    data = {"action": "write", "team": FORM_TEAM, "payload": "é ✓", "if_version": "1"}
    body = encode_multipart(BOUNDARY, data)
    member_client.post(kv_page_url("cfg.one"), body, content_type=MULTIPART)
    assert versions_of(team, "cfg.one") == [(1, "first"), (2, "é ✓")]


# --- JSON bodies ---------------------------------------------------------------------


@pytest.mark.parametrize("text", ["a\\u0000b", "\\ud800", "x\\udc00y"])
def test_a_json_value_holding_it_is_422(
    api: ApiClient, unchanged: Unchanged, team: Team, text: str
) -> None:
    response = api.put("/api/kv/cfg.one", raw=f'{{"payload": "{text}"}}')
    error = assert_refused_api(response, "payload")
    assert "must not contain" in error["message"]
    response = api.post("/api/agents/wren/memories", raw=f'{{"kind": "fact", "content": "{text}"}}')
    assert_error(response, 422, "invalid_content")
    assert store.read(team, "cfg.one").payload == "first"
    unchanged.check()


@pytest.mark.parametrize("text", ["a\\u0000", "\\ud800"])
def test_a_json_key_holding_it_is_422(api: ApiClient, unchanged: Unchanged, text: str) -> None:
    response = api.put("/api/kv/cfg.one", raw=f'{{"payload": "x", "{text}": 1}}')
    assert_error(response, 422, "invalid_request")
    unchanged.check()


def test_a_raw_nul_byte_in_a_json_body_is_422(api: ApiClient, unchanged: Unchanged) -> None:
    response = api.put("/api/kv/cfg.one", raw='{"payload": "a\x00b"}')
    assert_error(response, 422, "invalid_request")
    unchanged.check()


def test_a_json_body_that_is_not_utf8_is_422(api: ApiClient, unchanged: Unchanged) -> None:
    response = api.client.put(
        "/api/kv/cfg.one",
        b'{"payload": "a\xed\xa0\x80b"}',
        content_type="application/json",
        headers=api.headers,
    )
    assert_error(response, 422, "invalid_request")
    unchanged.check()


def test_a_json_body_sent_as_a_form_is_still_checked(api: ApiClient, unchanged: Unchanged) -> None:
    # curl -d sends application/x-www-form-urlencoded; the API reads JSON all the same.
    response = api.client.put(
        "/api/kv/cfg.one",
        '{"payload": "a\\u0000b"}',
        content_type="application/x-www-form-urlencoded",
        headers=api.headers,
    )
    assert_refused_api(response, "payload")
    unchanged.check()


# --- headers and cookies -------------------------------------------------------------


def test_a_token_holding_nul_is_422(api: ApiClient, unchanged: Unchanged) -> None:
    token = api.headers["Authorization"].removeprefix("Bearer ")
    nul_api = ApiClient(token + "\x00")
    assert_refused_api(nul_api.get("/api/agents"), "header.authorization")
    assert_refused_api(nul_api.put("/api/kv/cfg.one", {"payload": "x"}), "header.authorization")
    unchanged.check()


def test_a_page_header_holding_nul_is_the_400_page(
    member_client: Client, unchanged: Unchanged
) -> None:
    response = member_client.get("/memories/", headers={**HTMX, "HX-Current-URL": "/x\x00"})
    assert_refused_page(response)
    unchanged.check()


def test_a_session_cookie_holding_nul_is_refused_before_the_session_is_read(
    member_client: Client, unchanged: Unchanged
) -> None:
    # A quoted cookie value may spell NUL as \000, which the cookie parser decodes.
    response = member_client.get("/", HTTP_COOKIE='sessionid="\\000abcdefgh"')
    assert_refused_page(response)
    unchanged.check()


# --- the pure checks -----------------------------------------------------------------


def test_the_raw_checks_name_the_field() -> None:
    assert path_problem("/ok/é/") is None
    assert path_problem("/a\x00/") is not None
    assert path_problem("/a%ED%A0%80/") is not None
    assert form_problem(b"a=1&b=%00", "query") == (
        "query.b",
        "text must not contain NUL (U+0000) characters",
    )
    assert form_problem(b"a=1&b=%ED%A0%80", "form") is not None
    assert form_problem(b"a=1&b=%C3%A9+x", "form") is None
    body = encode_multipart(BOUNDARY, {"a": "ok", "b": "x\x00"})
    assert multipart_problem(body, BOUNDARY.encode()) == (
        "form.b",
        "text must not contain NUL (U+0000) characters",
    )
    assert multipart_problem(encode_multipart(BOUNDARY, {"a": "é"}), BOUNDARY.encode()) is None
