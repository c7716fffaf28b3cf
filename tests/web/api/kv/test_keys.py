"""The key/value API's keys (SPEC §7, §8): which keys are well formed, that a team only
ever sees its own, and odd Unicode payloads that must round-trip exactly.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.api_calls import (
    ApiClient,
    assert_error,
    kv_listing,
    kv_put,
    kv_store_rows,
    kv_url,
    kv_write_versions,
)
from tests.samples import GRINNING

# --- keys --------------------------------------------------------------------------

GOOD_KEYS = [
    "root",
    "must.craft.traps",
    "agentmemories.root",
    "a:b_c-d",
    "Z",
    "0",
    "x" * 256,
    "a." * 127 + "zz",
]


@pytest.mark.parametrize("key", GOOD_KEYS, ids=lambda key: key[:30])
def test_a_well_formed_key_is_written_read_and_listed(api: ApiClient, key: str) -> None:
    response = kv_put(api, key, f"payload of {key}")
    assert response.status_code == 201, response.content
    assert response.json()["id"] == key

    got = api.get(kv_url(key)).json()
    assert got["id"] == key
    assert got["payload"] == f"payload of {key}"
    assert [item["id"] for item in kv_listing(api)["keys"]] == [key]


# (as it goes in the URL, the key the server decodes)
BAD_KEYS = [
    ("a/b", "a/b"),
    ("a%2Fb", "a/b"),
    ("a%5Cb", "a\\b"),
    ("%5Croot", "\\root"),
    ("a..b", "a..b"),
    ("a...b", "a...b"),
    ("..", ".."),
    (".", "."),
    (".a", ".a"),
    (".root.leaf", ".root.leaf"),
    ("a.", "a."),
    ("root.leaf.", "root.leaf."),
    ("a%20b", "a b"),
    ("%20root", " root"),
    ("root%20", "root "),
    ("a%09b", "a\tb"),
    ("x" * 257, "x" * 257),
    ("a." * 128 + "z", "a." * 128 + "z"),
    ("caf%C3%A9", "café"),
    ("%D0%BA%D0%BB%D1%8E%D1%87", "ключ"),
    ("%E6%97%A5%E6%9C%AC", "日本"),
    ("%F0%9F%98%80", GRINNING),
    ("a*b", "a*b"),
    ("a%25b", "a%b"),
    ("a+b", "a+b"),
    ("a@b", "a@b"),
    ("root/", "root/"),
]


@pytest.mark.parametrize(("in_url", "key"), BAD_KEYS, ids=[repr(k[:20]) for _, k in BAD_KEYS])
def test_a_malformed_key_is_refused_with_422_invalid_key_and_nothing_is_written(
    api: ApiClient, in_url: str, key: str
) -> None:
    before = kv_store_rows()

    error = assert_error(kv_put(api, in_url, "payload"), 422, "invalid_key")

    assert kv_store_rows() == before == []
    assert "payload" not in error["message"] or "key" in error["message"].lower()


@pytest.mark.parametrize("in_url", ["a%5Cb", "a..b", ".a", "a.", "a%20b", "x" * 257, "caf%C3%A9"])
def test_reading_deleting_or_inspecting_a_malformed_key_is_422_invalid_key(
    api: ApiClient, in_url: str
) -> None:
    assert_error(api.get(kv_url(in_url)), 422, "invalid_key")
    assert_error(api.get(kv_url(in_url, "?version=1")), 422, "invalid_key")
    assert_error(api.delete(kv_url(in_url)), 422, "invalid_key")
    assert_error(api.get(kv_url(in_url, "/history")), 422, "invalid_key")
    assert_error(api.get(kv_url(in_url, "/diff?from=1&to=2")), 422, "invalid_key")


@pytest.mark.parametrize("in_url", ["root%0A", "a%0Ab", "%0D%0A", "a%0D"])
def test_a_key_with_a_line_break_never_reaches_the_store(api: ApiClient, in_url: str) -> None:
    # The URL router does not route a line break at all (404); either way, nothing lands.
    response = kv_put(api, in_url, "payload")
    assert response.status_code in (404, 422), response.content
    assert kv_store_rows() == []


def test_a_slash_in_the_url_of_a_read_never_reaches_another_key(api: ApiClient) -> None:
    kv_write_versions(api, "a", "the key a")
    assert_error(api.get(kv_url("a/b")), 422, "invalid_key")
    assert_error(api.delete(kv_url("a/b")), 422, "invalid_key")
    assert api.get(kv_url("a")).json()["payload"] == "the key a"


def test_a_key_is_case_sensitive(api: ApiClient) -> None:
    kv_write_versions(api, "Root", "upper")
    kv_write_versions(api, "root", "lower")
    assert api.get(kv_url("Root")).json()["payload"] == "upper"
    assert api.get(kv_url("root")).json()["payload"] == "lower"


def test_keys_named_like_the_routes_suffixes_are_ordinary_keys(api: ApiClient) -> None:
    kv_write_versions(api, "history", "h1", "h2")
    kv_write_versions(api, "diff", "d1")
    assert api.get(kv_url("history")).json()["payload"] == "h2"
    assert api.get(kv_url("diff")).json()["payload"] == "d1"
    assert api.get(kv_url("history", "/history")).json()["total_versions"] == 2
    assert "-h1" in api.get(kv_url("history", "/diff?from=1&to=2")).json()["diff"]


# --- authentication and teams ------------------------------------------------------


def every_route(key: str) -> list[tuple[str, str, Any]]:
    return [
        ("get", "/api/kv", None),
        ("get", "/api/kv?prefix=a", None),
        ("get", kv_url(key), None),
        ("get", kv_url(key, "?version=1"), None),
        ("put", kv_url(key), {"payload": "x"}),
        ("delete", kv_url(key), None),
        ("get", kv_url(key, "/history"), None),
        ("get", kv_url(key, "/diff?from=1&to=1"), None),
    ]


@pytest.mark.parametrize("token", [None, "not-a-real-token"], ids=["missing", "invalid"])
def test_every_key_value_route_is_401_without_a_valid_token(
    api: ApiClient, token: str | None
) -> None:
    kv_write_versions(api, "k", "x")
    before = kv_store_rows()
    client = ApiClient(token)

    for method, path, body in every_route("k"):
        call = getattr(client, method)
        response = call(path, body) if body is not None else call(path)
        assert_error(response, 401, "unauthorized")
        assert response["WWW-Authenticate"] == "Bearer"

    assert kv_store_rows() == before


def test_the_anonymous_fixture_is_refused_too(db: None, anon_api: ApiClient) -> None:
    assert_error(kv_put(anon_api, "k", "x"), 401, "unauthorized")
    assert kv_store_rows() == []


def test_another_teams_key_is_404_key_not_found_everywhere(
    api: ApiClient, other_api: ApiClient
) -> None:
    kv_write_versions(api, "private.notes", "ours one", "ours two")
    before = kv_store_rows()
    ours_missing = assert_error(api.get(kv_url("never.written")), 404, "key_not_found")

    theirs = assert_error(other_api.get(kv_url("private.notes")), 404, "key_not_found")
    assert_error(other_api.get(kv_url("private.notes", "?version=1")), 404, "key_not_found")
    assert_error(other_api.get(kv_url("private.notes", "/history")), 404, "key_not_found")
    assert_error(other_api.get(kv_url("private.notes", "/diff?from=1&to=2")), 404, "key_not_found")
    assert_error(other_api.delete(kv_url("private.notes")), 404, "key_not_found")

    # The answer is the same as for a key nobody wrote: nothing about ours leaks.
    assert set(theirs) == set(ours_missing)
    assert "ours" not in json.dumps(theirs)
    assert kv_store_rows() == before
    assert api.get(kv_url("private.notes")).json()["payload"] == "ours two"


def test_another_teams_writes_go_to_its_own_namespace(api: ApiClient, other_api: ApiClient) -> None:
    kv_write_versions(api, "shared.name", "ours one", "ours two")

    created = kv_put(other_api, "shared.name", "theirs", if_version=0)
    assert created.status_code == 201
    assert created.json()["version"] == 1
    assert kv_put(other_api, "shared.name", "theirs two").json()["version"] == 2
    assert kv_put(other_api, "shared.name", "theirs three").json()["version"] == 3

    ours = api.get(kv_url("shared.name")).json()
    assert (ours["version"], ours["payload"]) == (2, "ours two")
    assert api.get(kv_url("shared.name", "/history")).json()["total_versions"] == 2
    assert other_api.get(kv_url("shared.name")).json()["payload"] == "theirs three"

    assert other_api.delete(kv_url("shared.name")).json()["deleted_versions"] == 3
    assert api.get(kv_url("shared.name")).json()["payload"] == "ours two"


def test_a_conflict_reports_only_the_callers_own_version(
    api: ApiClient, other_api: ApiClient
) -> None:
    kv_write_versions(api, "k", "1", "2", "3")
    error = assert_error(kv_put(other_api, "k", "x", if_version=2), 409, "version_conflict")
    assert error["current_version"] == 0


# --- odd Unicode -------------------------------------------------------------------

ODD_PAYLOADS = {
    "emoji": f"{GRINNING}👍🏽👨\u200d👩\u200d👧🏳️\u200d🌈",
    "rtl": "שלום עולם — مرحبا بالعالم \u200fמימין\u200e left",
    "bidi-controls": "\u202eevil\u202c \u2066isolate\u2069",
    "combining": "e\u0301 a\u0308 Z\u0324\u0354\u0367\u0311\u0313",
    "nfc-and-nfd": "é / e\u0301",
    "zero-width": "a\u200bb\u200cc\u200dd\ufeffe",
    "astral-cjk": "𠜎𠜱𠝹𠱓",
    "line-separators": "one\u2028two\u2029three\x85four",
    "control-characters": "\x01\x07\x1b[31m\x1f\x7f",
    "whitespace": "  \t lead\r\n\r\ntrail \t ",
    "private-use-and-non-characters": "\ue000\uf8ff\ufffe\uffff\U0010ffff",
    "replacement-character": "\ufffd",
    "json-looking": '{"payload": "nested", "if_version": 3}\\n\\u0000',
    "quotes-and-backslashes": "\"'\\`\\\\",
}


@pytest.mark.parametrize("ascii_json", [True, False], ids=["escaped", "utf8"])
@pytest.mark.parametrize("payload", list(ODD_PAYLOADS.values()), ids=list(ODD_PAYLOADS))
def test_odd_unicode_payloads_round_trip_exactly(
    api: ApiClient, payload: str, ascii_json: bool
) -> None:
    raw = json.dumps({"payload": payload}, ensure_ascii=ascii_json)

    response = api.put(kv_url("odd"), raw=raw)

    assert response.status_code == 201, response.content
    assert response.json()["runes"] == len(payload)
    got = api.get(kv_url("odd")).json()
    assert got["payload"] == payload
    assert got["runes"] == len(payload)
    assert api.get(kv_url("odd", "?version=1")).json()["payload"] == payload


def test_composed_and_decomposed_text_are_kept_apart_never_normalised(api: ApiClient) -> None:
    kv_write_versions(api, "norm", "é", "e\u0301")

    assert api.get(kv_url("norm", "?version=1")).json()["payload"] == "é"
    assert api.get(kv_url("norm", "?version=2")).json()["payload"] == "e\u0301"
    runes = [v["runes"] for v in api.get(kv_url("norm", "/history")).json()["versions"]]
    assert runes == [2, 1]
    assert api.get(kv_url("norm", "/diff?from=1&to=2")).json()["diff"] != ""


@pytest.mark.parametrize("payload", ["\x00", "before\x00after", "x" * 10 + "\x00"])
def test_a_nul_character_is_refused_with_422_on_every_database(
    api: ApiClient, payload: str
) -> None:
    kv_write_versions(api, "k", "kept")
    before = kv_store_rows()

    error = assert_error(kv_put(api, "k", payload), 422, "invalid_request")
    assert_error(kv_put(api, "new", payload), 422, "invalid_request")

    assert "NUL" in error["message"]
    assert "payload" in error["message"]
    assert kv_store_rows() == before


@pytest.mark.parametrize("escaped", ["\\ud800", "x\\udfff", "\\ud83d", "\\ude00\\ud83d"])
def test_a_lone_surrogate_is_refused_with_422_never_a_crash(api: ApiClient, escaped: str) -> None:
    kv_write_versions(api, "k", "kept")
    before = kv_store_rows()

    error = assert_error(
        api.put(kv_url("k"), raw=f'{{"payload": "{escaped}"}}'), 422, "invalid_request"
    )
    assert_error(api.put(kv_url("new"), raw=f'{{"payload": "{escaped}"}}'), 422, "invalid_request")

    assert "payload" in error["message"]
    assert kv_store_rows() == before


def test_an_escaped_surrogate_pair_is_one_astral_character(api: ApiClient) -> None:
    response = api.put(kv_url("pair"), raw='{"payload": "\\ud83d\\ude00"}')
    assert response.status_code == 201
    assert response.json()["runes"] == 1
    assert api.get(kv_url("pair")).json()["payload"] == GRINNING
