"""The key/value store's JSON API (SPEC §7, §8): keys, payload limits, versions and CAS,
reads, history, listing, delete, diff, teams and odd Unicode.
"""

from __future__ import annotations

import json
import random
import re
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from kvstore.models import Key, Version
from tests.factories import ApiClient

SNAKE_CASE = re.compile(r"[a-z]+(?:_[a-z]+)*")
GRINNING = "\U0001f600"
LIMIT = 36_000
MIB = 1024 * 1024
KEY_OUT = {"id", "version", "written_at", "runes"}
VALUE_OUT = KEY_OUT | {"payload"}
VERSION_META = {"version", "written_at", "runes", "first_line"}
PAGE = {"limit", "offset", "next_offset"}


# --- helpers -----------------------------------------------------------------------


def url(key: str, suffix: str = "") -> str:
    """The key's URL; ``key`` is put in the path as given (already escaped if need be)."""
    return f"/api/kv/{key}{suffix}"


def put(api: ApiClient, key: str, payload: Any, **extra: Any) -> Any:
    return api.put(url(key), {"payload": payload, **extra})


def write_versions(api: ApiClient, key: str, *payloads: str) -> list[int]:
    versions = []
    for payload in payloads:
        response = put(api, key, payload)
        assert response.status_code in (200, 201), response.content
        versions.append(response.json()["version"])
    return versions


def listing(api: ApiClient, query: str = "") -> dict[str, Any]:
    response = api.get(f"/api/kv?{query}")
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {"keys", "total"} | PAGE
    for item in body["keys"]:
        assert set(item) == KEY_OUT
    return body


def listed_ids(api: ApiClient, prefix: str) -> list[str]:
    return [item["id"] for item in listing(api, f"prefix={quote(prefix)}&limit=200")["keys"]]


def assert_error(response: Any, status: int, code: str) -> dict[str, Any]:
    """The response is the error envelope ``{"error": {"code", "message", ...}}``."""
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    error = body["error"]
    assert SNAKE_CASE.fullmatch(error["code"]), error
    assert isinstance(error["message"], str) and error["message"].strip()
    assert error["code"] == code, error
    return error


def store_rows() -> list[tuple[Any, ...]]:
    """Every key and version row, so a test can prove a refusal wrote nothing."""
    keys = list(
        Key.objects.order_by("pk").values_list(
            "team_id", "key", "latest_version", "latest_written_at", "latest_runes"
        )
    )
    versions = list(
        Version.objects.order_by("pk").values_list(
            "key_id", "version", "payload", "runes", "first_line", "written_at"
        )
    )
    return [*keys, *versions]


def utc_time(text: str) -> datetime:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    assert moment.utcoffset() == timedelta(0), text
    return moment


def keys_in(value: Any) -> set[str]:
    """Every dictionary key anywhere in a JSON document."""
    if isinstance(value, dict):
        return set(value) | set().union(*(keys_in(item) for item in value.values()))
    if isinstance(value, list):
        return set().union(*(keys_in(item) for item in value))
    return set()


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
    response = put(api, key, f"payload of {key}")
    assert response.status_code == 201, response.content
    assert response.json()["id"] == key

    got = api.get(url(key)).json()
    assert got["id"] == key
    assert got["payload"] == f"payload of {key}"
    assert [item["id"] for item in listing(api)["keys"]] == [key]


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
    ("a%00b", "a\x00b"),
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
    before = store_rows()

    error = assert_error(put(api, in_url, "payload"), 422, "invalid_key")

    assert store_rows() == before == []
    assert "payload" not in error["message"] or "key" in error["message"].lower()


@pytest.mark.parametrize(
    "in_url", ["a%5Cb", "a..b", ".a", "a.", "a%20b", "x" * 257, "caf%C3%A9", "a%00b"]
)
def test_reading_deleting_or_inspecting_a_malformed_key_is_422_invalid_key(
    api: ApiClient, in_url: str
) -> None:
    assert_error(api.get(url(in_url)), 422, "invalid_key")
    assert_error(api.get(url(in_url, "?version=1")), 422, "invalid_key")
    assert_error(api.delete(url(in_url)), 422, "invalid_key")
    assert_error(api.get(url(in_url, "/history")), 422, "invalid_key")
    assert_error(api.get(url(in_url, "/diff?from=1&to=2")), 422, "invalid_key")


@pytest.mark.parametrize("in_url", ["root%0A", "a%0Ab", "%0D%0A", "a%0D"])
def test_a_key_with_a_line_break_never_reaches_the_store(api: ApiClient, in_url: str) -> None:
    # The URL router does not route a line break at all (404); either way, nothing lands.
    response = put(api, in_url, "payload")
    assert response.status_code in (404, 422), response.content
    assert store_rows() == []


def test_a_slash_in_the_url_of_a_read_never_reaches_another_key(api: ApiClient) -> None:
    write_versions(api, "a", "the key a")
    assert_error(api.get(url("a/b")), 422, "invalid_key")
    assert_error(api.delete(url("a/b")), 422, "invalid_key")
    assert api.get(url("a")).json()["payload"] == "the key a"


def test_a_key_is_case_sensitive(api: ApiClient) -> None:
    write_versions(api, "Root", "upper")
    write_versions(api, "root", "lower")
    assert api.get(url("Root")).json()["payload"] == "upper"
    assert api.get(url("root")).json()["payload"] == "lower"


def test_keys_named_like_the_routes_suffixes_are_ordinary_keys(api: ApiClient) -> None:
    write_versions(api, "history", "h1", "h2")
    write_versions(api, "diff", "d1")
    assert api.get(url("history")).json()["payload"] == "h2"
    assert api.get(url("diff")).json()["payload"] == "d1"
    assert api.get(url("history", "/history")).json()["total_versions"] == 2
    assert "-h1" in api.get(url("history", "/diff?from=1&to=2")).json()["diff"]


# --- payload limits ----------------------------------------------------------------


@pytest.mark.parametrize("unit", [GRINNING, "x"], ids=["astral", "ascii"])
def test_a_payload_of_exactly_36000_code_points_is_accepted_whole(
    api: ApiClient, unit: str
) -> None:
    payload = unit * LIMIT

    response = put(api, "big", payload)

    assert response.status_code == 201, response.content[:300]
    assert response.json()["runes"] == LIMIT
    got = api.get(url("big")).json()
    assert got["payload"] == payload
    assert got["runes"] == LIMIT


@pytest.mark.parametrize("unit", [GRINNING, "x"], ids=["astral", "ascii"])
def test_a_payload_of_36001_code_points_is_refused_with_the_limit_and_the_count(
    api: ApiClient, unit: str
) -> None:
    error = assert_error(put(api, "big", unit * (LIMIT + 1)), 413, "payload_too_large")

    assert error["limit"] == 36000
    assert error["runes"] == 36001
    assert store_rows() == []
    assert_error(api.get(url("big")), 404, "key_not_found")


@pytest.mark.parametrize("unit", [GRINNING, "x"], ids=["astral", "ascii"])
def test_an_over_limit_write_to_an_existing_key_leaves_the_old_version(
    api: ApiClient, unit: str
) -> None:
    write_versions(api, "big", "old")
    before = store_rows()

    error = assert_error(put(api, "big", unit * (LIMIT + 1)), 413, "payload_too_large")

    assert (error["limit"], error["runes"]) == (LIMIT, LIMIT + 1)
    assert store_rows() == before
    got = api.get(url("big")).json()
    assert (got["version"], got["payload"]) == (1, "old")
    assert api.get(url("big", "/history")).json()["total_versions"] == 1


def test_a_far_over_limit_payload_reports_its_actual_count(api: ApiClient) -> None:
    error = assert_error(put(api, "big", "y" * 50_000), 413, "payload_too_large")
    assert (error["limit"], error["runes"]) == (LIMIT, 50_000)


def test_a_payload_sent_as_raw_utf8_counts_code_points_not_bytes(api: ApiClient) -> None:
    raw = json.dumps({"payload": GRINNING * LIMIT}, ensure_ascii=False)
    response = api.put(url("utf8"), raw=raw)
    assert response.status_code == 201, response.content[:300]
    assert response.json()["runes"] == LIMIT

    raw = json.dumps({"payload": GRINNING * (LIMIT + 1)}, ensure_ascii=False)
    error = assert_error(api.put(url("utf8"), raw=raw), 413, "payload_too_large")
    assert error["runes"] == LIMIT + 1


def test_astral_characters_count_once_beside_ascii(api: ApiClient) -> None:
    response = put(api, "mixed", "x" * (LIMIT - 1) + GRINNING)
    assert response.status_code == 201
    assert response.json()["runes"] == LIMIT
    assert_error(put(api, "mixed", "x" * LIMIT + GRINNING), 413, "payload_too_large")


def test_combining_marks_count_as_code_points_not_graphemes(api: ApiClient) -> None:
    accented = "e\u0301" * (LIMIT // 2)  # 18,000 graphemes, 36,000 code points
    assert put(api, "marks", accented).status_code == 201
    error = assert_error(put(api, "marks", accented + "e"), 413, "payload_too_large")
    assert error["runes"] == LIMIT + 1


def test_an_empty_payload_is_allowed(api: ApiClient) -> None:
    response = put(api, "empty", "")
    assert response.status_code == 201
    assert response.json()["runes"] == 0

    got = api.get(url("empty")).json()
    assert (got["payload"], got["runes"]) == ("", 0)
    meta = api.get(url("empty", "/history")).json()["versions"]
    assert meta[0]["first_line"] == ""
    assert meta[0]["runes"] == 0


# --- request bodies ----------------------------------------------------------------


def test_a_body_over_one_mebibyte_is_refused_with_413_and_nothing_is_written(
    api: ApiClient,
) -> None:
    head = '{"payload": "x"}'
    raw = head + " " * (MIB + 1 - len(head))
    assert len(raw.encode()) == MIB + 1

    error = assert_error(api.put(url("huge"), raw=raw), 413, "payload_too_large")

    assert error["limit"] == MIB
    assert store_rows() == []


def test_a_body_of_exactly_one_mebibyte_is_accepted(api: ApiClient) -> None:
    head = '{"payload": "x"}'
    raw = head + " " * (MIB - len(head))
    assert len(raw.encode()) == MIB

    assert api.put(url("snug"), raw=raw).status_code == 201


@pytest.mark.parametrize(
    "raw",
    [
        "{",
        '{"payload": "x"',
        "{'payload': 'x'}",
        '{"payload": "x",}',
        "payload=x",
        "nope",
    ],
)
def test_a_malformed_json_body_is_422_and_nothing_is_written(api: ApiClient, raw: str) -> None:
    write_versions(api, "k", "kept")
    before = store_rows()

    assert_error(api.put(url("k"), raw=raw), 422, "invalid_request")
    assert_error(api.put(url("new"), raw=raw), 422, "invalid_request")

    assert store_rows() == before


@pytest.mark.parametrize(
    "body",
    [
        {"payload": 5},
        {"payload": 1.5},
        {"payload": None},
        {"payload": True},
        {"payload": ["x"]},
        {"payload": {"text": "x"}},
        {},
        {"if_version": 0},
        ["payload", "x"],
        "x",
    ],
    ids=lambda body: json.dumps(body),
)
def test_a_payload_that_is_not_a_string_is_422(api: ApiClient, body: Any) -> None:
    error = assert_error(api.put(url("k"), body), 422, "invalid_request")
    assert error["errors"]
    assert store_rows() == []


def test_a_put_without_a_body_is_422(api: ApiClient) -> None:
    assert_error(api.put(url("k")), 422, "invalid_request")
    assert store_rows() == []


# --- write and versions ------------------------------------------------------------


def test_the_first_write_is_201_version_1_and_later_writes_are_200_and_contiguous(
    api: ApiClient,
) -> None:
    first = put(api, "notes", "one")
    assert first.status_code == 201
    body = first.json()
    assert set(body) == KEY_OUT
    assert (body["id"], body["version"], body["runes"]) == ("notes", 1, 3)
    utc_time(body["written_at"])

    for expected in range(2, 6):
        response = put(api, "notes", f"v{expected}")
        assert response.status_code == 200
        body = response.json()
        assert set(body) == KEY_OUT
        assert (body["id"], body["version"], body["runes"]) == ("notes", expected, 2)

    history = api.get(url("notes", "/history")).json()
    assert [v["version"] for v in history["versions"]] == [5, 4, 3, 2, 1]


def test_write_times_are_utc_and_never_go_backwards(api: ApiClient) -> None:
    times = [utc_time(put(api, "t", str(n)).json()["written_at"]) for n in range(4)]
    assert times == sorted(times)
    now = datetime.now(UTC)
    assert all(abs(now - moment) < timedelta(minutes=5) for moment in times)


def test_keys_version_independently(api: ApiClient) -> None:
    assert write_versions(api, "a", "1", "2", "3") == [1, 2, 3]
    assert write_versions(api, "b", "1") == [1]
    assert write_versions(api, "a", "4") == [4]


def test_a_matching_if_version_lands(api: ApiClient) -> None:
    write_versions(api, "cas", "one", "two")

    response = put(api, "cas", "three", if_version=2)

    assert response.status_code == 200
    assert response.json()["version"] == 3
    assert api.get(url("cas")).json()["payload"] == "three"


@pytest.mark.parametrize("stale", [1, 3, 7, 10**20])
def test_a_mismatched_if_version_is_a_409_conflict_with_the_current_version(
    api: ApiClient, stale: int
) -> None:
    write_versions(api, "cas", "one", "two")
    before = store_rows()

    error = assert_error(put(api, "cas", "lost", if_version=stale), 409, "version_conflict")

    assert error["current_version"] == 2
    assert store_rows() == before
    assert api.get(url("cas")).json()["payload"] == "two"


def test_if_version_0_creates_a_new_key(api: ApiClient) -> None:
    response = put(api, "fresh", "first", if_version=0)
    assert response.status_code == 201
    assert response.json()["version"] == 1


def test_if_version_0_on_an_existing_key_is_a_conflict(api: ApiClient) -> None:
    write_versions(api, "taken", "one", "two", "three")

    error = assert_error(put(api, "taken", "again", if_version=0), 409, "version_conflict")

    assert error["current_version"] == 3
    assert api.get(url("taken")).json()["payload"] == "three"


def test_if_version_on_a_missing_key_is_a_conflict_at_version_0(api: ApiClient) -> None:
    error = assert_error(put(api, "ghost", "x", if_version=3), 409, "version_conflict")

    assert error["current_version"] == 0
    assert store_rows() == []
    assert_error(api.get(url("ghost")), 404, "key_not_found")


def test_a_null_if_version_is_the_same_as_none(api: ApiClient) -> None:
    write_versions(api, "k", "one")
    response = put(api, "k", "two", if_version=None)
    assert response.status_code == 200
    assert response.json()["version"] == 2


@pytest.mark.parametrize("bad", [-1, -5, "1", "0", 1.5, 1.0, True, False, [1], {"v": 1}])
def test_an_if_version_that_is_not_a_non_negative_integer_is_422(api: ApiClient, bad: Any) -> None:
    write_versions(api, "k", "one")
    before = store_rows()

    error = assert_error(put(api, "k", "two", if_version=bad), 422, "invalid_request")
    assert_error(put(api, "new", "x", if_version=bad), 422, "invalid_request")

    assert "if_version" in error["message"]
    assert store_rows() == before


# --- read --------------------------------------------------------------------------


def test_read_returns_the_latest_version(api: ApiClient) -> None:
    written = [put(api, "doc", text).json() for text in ["first", "second", "third!"]]

    response = api.get(url("doc"))

    assert response.status_code == 200
    body = response.json()
    assert set(body) == VALUE_OUT
    assert body == {
        "id": "doc",
        "version": 3,
        "payload": "third!",
        "written_at": written[2]["written_at"],
        "runes": 6,
    }


def test_read_returns_a_pinned_version(api: ApiClient) -> None:
    written = [put(api, "doc", text).json() for text in ["first", "second", "third"]]

    for number, text in [(1, "first"), (2, "second"), (3, "third")]:
        body = api.get(url("doc", f"?version={number}")).json()
        assert body == {
            "id": "doc",
            "version": number,
            "payload": text,
            "written_at": written[number - 1]["written_at"],
            "runes": len(text),
        }


def test_reading_a_missing_key_is_a_404_error_never_an_empty_answer(api: ApiClient) -> None:
    error = assert_error(api.get(url("nowhere")), 404, "key_not_found")
    assert "payload" not in error
    assert_error(api.get(url("nowhere", "?version=1")), 404, "key_not_found")


def test_reading_a_missing_version_of_an_existing_key_is_404_version_not_found(
    api: ApiClient,
) -> None:
    write_versions(api, "doc", "one", "two")
    assert_error(api.get(url("doc", "?version=3")), 404, "version_not_found")
    assert_error(api.get(url("doc", "?version=1000")), 404, "version_not_found")


@pytest.mark.parametrize("bad", ["0", "-1", "x", "1.5", "", "true"])
def test_a_version_that_is_not_a_positive_integer_is_422(api: ApiClient, bad: str) -> None:
    write_versions(api, "doc", "one")
    assert_error(api.get(url("doc", f"?version={bad}")), 422, "invalid_request")


@pytest.mark.parametrize("huge", [2**31, 2**63, 10**20])
def test_a_version_too_large_for_the_store_is_422_never_a_crash(api: ApiClient, huge: int) -> None:
    write_versions(api, "doc", "one")
    assert_error(api.get(url("doc", f"?version={huge}")), 422, "invalid_request")
    assert_error(api.get(url("doc", f"/diff?from=1&to={huge}")), 422, "invalid_request")
    assert api.get(url("doc", f"?version={2**31 - 1}")).status_code == 404


# --- history -----------------------------------------------------------------------


def test_history_is_metadata_newest_first_with_the_total(api: ApiClient) -> None:
    written = [put(api, "log", text).json() for text in ["alpha", "beta\nmore", "γάμμα"]]

    response = api.get(url("log", "/history"))

    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"id", "versions", "total_versions"} | PAGE
    assert body["id"] == "log"
    assert body["total_versions"] == 3
    assert (body["limit"], body["offset"], body["next_offset"]) == (50, 0, None)
    assert body["versions"] == [
        {
            "version": 3,
            "written_at": written[2]["written_at"],
            "runes": 5,
            "first_line": "γάμμα",
        },
        {"version": 2, "written_at": written[1]["written_at"], "runes": 9, "first_line": "beta"},
        {"version": 1, "written_at": written[0]["written_at"], "runes": 5, "first_line": "alpha"},
    ]


def test_history_never_carries_a_payload(api: ApiClient) -> None:
    secret = "SECRET-BODY-" + "q" * 50
    write_versions(api, "log", f"title one\n{secret}", f"title two\n{secret}")

    response = api.get(url("log", "/history"))

    assert "payload" not in keys_in(response.json())
    assert secret not in response.content.decode()
    for item in response.json()["versions"]:
        assert set(item) == VERSION_META


def test_history_never_loads_payloads_from_the_database(api: ApiClient) -> None:
    write_versions(api, "log", "one", "two")

    with CaptureQueriesContext(connection) as queries:
        assert api.get(url("log", "/history")).status_code == 200

    assert queries.captured_queries
    assert not [q["sql"] for q in queries.captured_queries if "payload" in q["sql"].lower()]


def test_first_line_is_cut_to_120_code_points(api: ApiClient) -> None:
    line = "".join(chr(ord("a") + i % 26) for i in range(200))
    write_versions(api, "long", line + "\nsecond line", GRINNING * 200)

    versions = api.get(url("long", "/history")).json()["versions"]

    assert versions[1]["first_line"] == line[:120]
    assert versions[0]["first_line"] == GRINNING * 120
    assert versions[0]["runes"] == 200


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ("heading\nbody line one\nbody line two", "heading"),
        ("windows\r\nline two\r\n", "windows"),
        ("old mac\rline two", "old mac"),
        ("\nstarts blank", ""),
        ("single", "single"),
        ("שלום עולם\nשורה", "שלום עולם"),
    ],
)
def test_first_line_is_the_first_line_of_the_payload(
    api: ApiClient, payload: str, expected: str
) -> None:
    write_versions(api, "lines", payload)
    meta = api.get(url("lines", "/history")).json()["versions"][0]
    assert meta["first_line"] == expected
    assert meta["runes"] == len(payload)


def test_history_pages_with_limit_offset_and_next_offset(api: ApiClient) -> None:
    write_versions(api, "paged", *[f"v{n}" for n in range(1, 8)])

    def page(query: str) -> dict[str, Any]:
        body = api.get(url("paged", f"/history?{query}")).json()
        assert body["total_versions"] == 7
        return body

    first = page("limit=3")
    assert [v["version"] for v in first["versions"]] == [7, 6, 5]
    assert (first["limit"], first["offset"], first["next_offset"]) == (3, 0, 3)
    second = page("limit=3&offset=3")
    assert [v["version"] for v in second["versions"]] == [4, 3, 2]
    assert second["next_offset"] == 6
    last = page("limit=3&offset=6")
    assert [v["version"] for v in last["versions"]] == [1]
    assert last["next_offset"] is None
    beyond = page("limit=3&offset=7")
    assert beyond["versions"] == []
    assert beyond["next_offset"] is None
    whole = page("limit=7")
    assert [v["version"] for v in whole["versions"]] == [7, 6, 5, 4, 3, 2, 1]
    assert whole["next_offset"] is None
    assert page("limit=200")["limit"] == 200


def test_following_next_offset_visits_every_version_once(api: ApiClient) -> None:
    write_versions(api, "walk", *[str(n) for n in range(11)])
    seen: list[int] = []
    offset: int | None = 0
    while offset is not None:
        body = api.get(url("walk", f"/history?limit=4&offset={offset}")).json()
        seen += [v["version"] for v in body["versions"]]
        offset = body["next_offset"]
    assert seen == list(range(11, 0, -1))


@pytest.mark.parametrize("query", ["limit=0", "limit=201", "limit=-1", "offset=-1", "limit=x"])
def test_history_paging_out_of_range_is_422(api: ApiClient, query: str) -> None:
    write_versions(api, "paged", "one")
    assert_error(api.get(url("paged", f"/history?{query}")), 422, "invalid_request")


def test_history_of_a_missing_key_is_404_key_not_found(api: ApiClient) -> None:
    assert_error(api.get(url("nowhere", "/history")), 404, "key_not_found")


# --- list --------------------------------------------------------------------------


def test_list_shows_each_keys_latest_version(api: ApiClient) -> None:
    write_versions(api, "a", "1", "22", "333")
    last = put(api, "b", "four").json()

    body = listing(api)

    assert body["total"] == 2
    assert (body["limit"], body["offset"], body["next_offset"]) == (50, 0, None)
    items = {item["id"]: item for item in body["keys"]}
    assert (items["a"]["version"], items["a"]["runes"]) == (3, 3)
    assert items["b"] == last


def test_an_empty_store_lists_nothing(api: ApiClient) -> None:
    assert listing(api) == {"keys": [], "total": 0, "limit": 50, "offset": 0, "next_offset": None}


def test_list_orders_keys_by_code_point(api: ApiClient) -> None:
    keys = ["a_b", "B", "ab", "a.b", "a:b", "a-b", "a", "A", "0", "a.b.c", "z", "Z", "_x", "-x"]
    for key in random.Random(7).sample(keys, len(keys)):
        write_versions(api, key, key)

    listed = [item["id"] for item in listing(api)["keys"]]

    assert listed == sorted(keys)
    assert listed == [
        "-x",
        "0",
        "A",
        "B",
        "Z",
        "_x",
        "a",
        "a-b",
        "a.b",
        "a.b.c",
        "a:b",
        "a_b",
        "ab",
        "z",
    ]


def test_a_prefix_is_a_plain_string_prefix(api: ApiClient) -> None:
    for key in ["must.craft.traps", "must.craft.x.y", "must.crafty", "must.cra", "must", "ref.a"]:
        write_versions(api, key, key)

    assert listed_ids(api, "must.craft") == ["must.craft.traps", "must.craft.x.y", "must.crafty"]
    assert listed_ids(api, "must.craft.") == ["must.craft.traps", "must.craft.x.y"]
    assert listed_ids(api, "must.") == [
        "must.cra",
        "must.craft.traps",
        "must.craft.x.y",
        "must.crafty",
    ]
    assert listed_ids(api, "must.craft.traps") == ["must.craft.traps"]
    assert listed_ids(api, "must.craft.traps.") == []
    assert listed_ids(api, "ref.") == ["ref.a"]
    assert listing(api, "prefix=must.craft")["total"] == 3


def test_underscore_colon_and_percent_in_a_prefix_are_literal(api: ApiClient) -> None:
    for key in ["a_b", "ab", "axb", "a:b", "a-b", "a.b"]:
        write_versions(api, key, key)

    assert listed_ids(api, "a_") == ["a_b"]
    assert listed_ids(api, "a:") == ["a:b"]
    assert listed_ids(api, "a%") == []
    assert listed_ids(api, "%") == []
    assert listed_ids(api, "a*") == []
    assert listed_ids(api, "a?") == []
    assert listed_ids(api, "a[") == []
    assert listed_ids(api, "a\\") == []
    assert listed_ids(api, "a") == ["a-b", "a.b", "a:b", "a_b", "ab", "axb"]


def test_a_prefix_is_case_sensitive(api: ApiClient) -> None:
    for key in ["must.x", "Must.y", "MUST.z"]:
        write_versions(api, key, key)

    assert listed_ids(api, "Must.") == ["Must.y"]
    assert listed_ids(api, "must.") == ["must.x"]
    assert listed_ids(api, "MUST.") == ["MUST.z"]
    assert listed_ids(api, "mUST.") == []


@pytest.mark.parametrize("prefix", ["\x00", "a\x00", "é", "café", GRINNING, "a\x7f", " ", "a b"])
def test_a_prefix_no_key_can_start_with_lists_nothing(api: ApiClient, prefix: str) -> None:
    write_versions(api, "a", "x")
    write_versions(api, "cafe", "x")

    body = listing(api, f"prefix={quote(prefix)}")

    assert body["keys"] == []
    assert body["total"] == 0
    assert body["next_offset"] is None


def test_list_pages_with_limit_offset_and_next_offset(api: ApiClient) -> None:
    keys = [f"k{n}" for n in range(5)]
    for key in keys:
        write_versions(api, key, key)

    first = listing(api, "limit=2")
    assert [item["id"] for item in first["keys"]] == ["k0", "k1"]
    assert (first["total"], first["limit"], first["offset"], first["next_offset"]) == (5, 2, 0, 2)
    second = listing(api, "limit=2&offset=2")
    assert [item["id"] for item in second["keys"]] == ["k2", "k3"]
    assert second["next_offset"] == 4
    last = listing(api, "limit=2&offset=4")
    assert [item["id"] for item in last["keys"]] == ["k4"]
    assert last["next_offset"] is None
    assert last["total"] == 5
    beyond = listing(api, "limit=2&offset=9")
    assert (beyond["keys"], beyond["total"], beyond["next_offset"]) == ([], 5, None)
    assert listing(api, "limit=5")["next_offset"] is None
    assert listing(api, "limit=200")["limit"] == 200


def test_list_pages_within_a_prefix(api: ApiClient) -> None:
    for key in ["ns.a", "ns.b", "ns.c", "other"]:
        write_versions(api, key, key)

    body = listing(api, "prefix=ns.&limit=2&offset=1")

    assert [item["id"] for item in body["keys"]] == ["ns.b", "ns.c"]
    assert (body["total"], body["next_offset"]) == (3, None)


@pytest.mark.parametrize(
    "query", ["limit=0", "limit=201", "limit=-3", "offset=-1", "limit=x", "offset=y"]
)
def test_list_paging_out_of_range_is_422(api: ApiClient, query: str) -> None:
    assert_error(api.get(f"/api/kv?{query}"), 422, "invalid_request")


@pytest.mark.parametrize("huge", [2**31, 2**63, 10**20])
def test_an_offset_too_large_for_the_store_is_422_never_a_crash(api: ApiClient, huge: int) -> None:
    write_versions(api, "k", "x")
    assert_error(api.get(f"/api/kv?offset={huge}"), 422, "invalid_request")
    assert_error(api.get(url("k", f"/history?offset={huge}")), 422, "invalid_request")
    assert listing(api, f"offset={2**31 - 1}")["keys"] == []
    assert api.get(url("k", f"/history?offset={2**31 - 1}")).json()["versions"] == []


def test_another_teams_keys_never_appear_in_a_list(api: ApiClient, other_api: ApiClient) -> None:
    write_versions(other_api, "must.theirs", "x")
    write_versions(other_api, "shared", "theirs")
    write_versions(api, "shared", "ours")
    write_versions(api, "must.ours", "y")

    assert [item["id"] for item in listing(api)["keys"]] == ["must.ours", "shared"]
    assert listing(api)["total"] == 2
    assert listed_ids(api, "must.") == ["must.ours"]
    assert listed_ids(other_api, "must.") == ["must.theirs"]


# --- delete ------------------------------------------------------------------------


def test_delete_removes_every_version_and_a_later_write_starts_at_1(api: ApiClient) -> None:
    write_versions(api, "gone", "one", "two", "three")
    write_versions(api, "stays", "here")

    response = api.delete(url("gone"))

    assert response.status_code == 200
    assert response.json() == {"id": "gone", "deleted_versions": 3}
    assert_error(api.get(url("gone")), 404, "key_not_found")
    assert_error(api.get(url("gone", "?version=2")), 404, "key_not_found")
    assert_error(api.get(url("gone", "/history")), 404, "key_not_found")
    assert [item["id"] for item in listing(api)["keys"]] == ["stays"]
    assert not Version.objects.filter(key__key="gone").exists()

    again = put(api, "gone", "reborn")
    assert again.status_code == 201
    assert again.json()["version"] == 1
    assert_error(api.get(url("gone", "?version=2")), 404, "version_not_found")
    history = api.get(url("gone", "/history")).json()
    assert history["total_versions"] == 1
    assert history["versions"][0]["first_line"] == "reborn"
    assert api.get(url("stays")).json()["payload"] == "here"


def test_if_version_0_works_again_after_a_delete(api: ApiClient) -> None:
    write_versions(api, "gone", "one")
    api.delete(url("gone"))
    assert put(api, "gone", "fresh", if_version=0).status_code == 201


def test_deleting_a_missing_key_is_404_key_not_found(api: ApiClient) -> None:
    assert_error(api.delete(url("nowhere")), 404, "key_not_found")
    write_versions(api, "once", "x")
    assert api.delete(url("once")).status_code == 200
    assert_error(api.delete(url("once")), 404, "key_not_found")


# --- diff --------------------------------------------------------------------------


def test_diff_is_a_unified_diff_between_two_versions(api: ApiClient) -> None:
    write_versions(api, "doc", "alpha\nbeta\ngamma\n", "alpha\nBETA\ngamma\n")

    response = api.get(url("doc", "/diff?from=1&to=2"))

    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"id", "from", "to", "diff"}
    assert (body["id"], body["from"], body["to"]) == ("doc", 1, 2)
    lines = body["diff"].splitlines()
    assert lines[0].startswith("---")
    assert lines[1].startswith("+++")
    assert lines[2].startswith("@@")
    assert "-beta" in lines
    assert "+BETA" in lines
    assert " alpha" in lines


def test_diff_runs_either_way_and_is_empty_between_equal_versions(api: ApiClient) -> None:
    write_versions(api, "doc", "old line\n", "new line\n", "new line\n")

    backwards = api.get(url("doc", "/diff?from=2&to=1")).json()
    assert (backwards["from"], backwards["to"]) == (2, 1)
    assert "-new line" in backwards["diff"].splitlines()
    assert "+old line" in backwards["diff"].splitlines()
    assert api.get(url("doc", "/diff?from=2&to=3")).json()["diff"] == ""
    assert api.get(url("doc", "/diff?from=1&to=1")).json()["diff"] == ""


def test_diff_of_unicode_payloads_without_final_newlines(api: ApiClient) -> None:
    write_versions(api, "doc", f"{GRINNING} שלום", "😢 שלום")
    lines = api.get(url("doc", "/diff?from=1&to=2")).json()["diff"].splitlines()
    assert f"-{GRINNING} שלום" in lines
    assert "+😢 שלום" in lines


@pytest.mark.parametrize("query", ["from=1&to=9", "from=9&to=1", "from=5&to=6"])
def test_diff_with_a_missing_version_is_404_version_not_found(api: ApiClient, query: str) -> None:
    write_versions(api, "doc", "one", "two")
    assert_error(api.get(url("doc", f"/diff?{query}")), 404, "version_not_found")


def test_diff_of_a_missing_key_is_404_key_not_found(api: ApiClient) -> None:
    assert_error(api.get(url("nowhere", "/diff?from=1&to=2")), 404, "key_not_found")


@pytest.mark.parametrize(
    "query", ["", "from=1", "to=2", "from=0&to=1", "from=1&to=-1", "from=x&to=1", "from=1&to=1.5"]
)
def test_diff_without_two_positive_versions_is_422(api: ApiClient, query: str) -> None:
    write_versions(api, "doc", "one", "two")
    assert_error(api.get(url("doc", f"/diff?{query}")), 422, "invalid_request")


# --- authentication and teams ------------------------------------------------------


def every_route(key: str) -> list[tuple[str, str, Any]]:
    return [
        ("get", "/api/kv", None),
        ("get", "/api/kv?prefix=a", None),
        ("get", url(key), None),
        ("get", url(key, "?version=1"), None),
        ("put", url(key), {"payload": "x"}),
        ("delete", url(key), None),
        ("get", url(key, "/history"), None),
        ("get", url(key, "/diff?from=1&to=1"), None),
    ]


@pytest.mark.parametrize("token", [None, "not-a-real-token"], ids=["missing", "invalid"])
def test_every_key_value_route_is_401_without_a_valid_token(
    api: ApiClient, token: str | None
) -> None:
    write_versions(api, "k", "x")
    before = store_rows()
    client = ApiClient(token)

    for method, path, body in every_route("k"):
        call = getattr(client, method)
        response = call(path, body) if body is not None else call(path)
        assert_error(response, 401, "unauthorized")
        assert response["WWW-Authenticate"] == "Bearer"

    assert store_rows() == before


def test_the_anonymous_fixture_is_refused_too(db: None, anon_api: ApiClient) -> None:
    assert_error(put(anon_api, "k", "x"), 401, "unauthorized")
    assert store_rows() == []


def test_another_teams_key_is_404_key_not_found_everywhere(
    api: ApiClient, other_api: ApiClient
) -> None:
    write_versions(api, "private.notes", "ours one", "ours two")
    before = store_rows()
    ours_missing = assert_error(api.get(url("never.written")), 404, "key_not_found")

    theirs = assert_error(other_api.get(url("private.notes")), 404, "key_not_found")
    assert_error(other_api.get(url("private.notes", "?version=1")), 404, "key_not_found")
    assert_error(other_api.get(url("private.notes", "/history")), 404, "key_not_found")
    assert_error(other_api.get(url("private.notes", "/diff?from=1&to=2")), 404, "key_not_found")
    assert_error(other_api.delete(url("private.notes")), 404, "key_not_found")

    # The answer is the same as for a key nobody wrote: nothing about ours leaks.
    assert set(theirs) == set(ours_missing)
    assert "ours" not in json.dumps(theirs)
    assert store_rows() == before
    assert api.get(url("private.notes")).json()["payload"] == "ours two"


def test_another_teams_writes_go_to_its_own_namespace(api: ApiClient, other_api: ApiClient) -> None:
    write_versions(api, "shared.name", "ours one", "ours two")

    created = put(other_api, "shared.name", "theirs", if_version=0)
    assert created.status_code == 201
    assert created.json()["version"] == 1
    assert put(other_api, "shared.name", "theirs two").json()["version"] == 2
    assert put(other_api, "shared.name", "theirs three").json()["version"] == 3

    ours = api.get(url("shared.name")).json()
    assert (ours["version"], ours["payload"]) == (2, "ours two")
    assert api.get(url("shared.name", "/history")).json()["total_versions"] == 2
    assert other_api.get(url("shared.name")).json()["payload"] == "theirs three"

    assert other_api.delete(url("shared.name")).json()["deleted_versions"] == 3
    assert api.get(url("shared.name")).json()["payload"] == "ours two"


def test_a_conflict_reports_only_the_callers_own_version(
    api: ApiClient, other_api: ApiClient
) -> None:
    write_versions(api, "k", "1", "2", "3")
    error = assert_error(put(other_api, "k", "x", if_version=2), 409, "version_conflict")
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

    response = api.put(url("odd"), raw=raw)

    assert response.status_code == 201, response.content
    assert response.json()["runes"] == len(payload)
    got = api.get(url("odd")).json()
    assert got["payload"] == payload
    assert got["runes"] == len(payload)
    assert api.get(url("odd", "?version=1")).json()["payload"] == payload


def test_composed_and_decomposed_text_are_kept_apart_never_normalised(api: ApiClient) -> None:
    write_versions(api, "norm", "é", "e\u0301")

    assert api.get(url("norm", "?version=1")).json()["payload"] == "é"
    assert api.get(url("norm", "?version=2")).json()["payload"] == "e\u0301"
    runes = [v["runes"] for v in api.get(url("norm", "/history")).json()["versions"]]
    assert runes == [2, 1]
    assert api.get(url("norm", "/diff?from=1&to=2")).json()["diff"] != ""


@pytest.mark.parametrize("payload", ["\x00", "before\x00after", "x" * 10 + "\x00"])
def test_a_nul_character_is_refused_with_422_on_every_database(
    api: ApiClient, payload: str
) -> None:
    write_versions(api, "k", "kept")
    before = store_rows()

    error = assert_error(put(api, "k", payload), 422, "invalid_request")
    assert_error(put(api, "new", payload), 422, "invalid_request")

    assert "NUL" in error["message"]
    assert "payload" in error["message"]
    assert store_rows() == before


@pytest.mark.parametrize("escaped", ["\\ud800", "x\\udfff", "\\ud83d", "\\ude00\\ud83d"])
def test_a_lone_surrogate_is_refused_with_422_never_a_crash(api: ApiClient, escaped: str) -> None:
    write_versions(api, "k", "kept")
    before = store_rows()

    error = assert_error(
        api.put(url("k"), raw=f'{{"payload": "{escaped}"}}'), 422, "invalid_request"
    )
    assert_error(api.put(url("new"), raw=f'{{"payload": "{escaped}"}}'), 422, "invalid_request")

    assert "payload" in error["message"]
    assert store_rows() == before


def test_an_escaped_surrogate_pair_is_one_astral_character(api: ApiClient) -> None:
    response = api.put(url("pair"), raw='{"payload": "\\ud83d\\ude00"}')
    assert response.status_code == 201
    assert response.json()["runes"] == 1
    assert api.get(url("pair")).json()["payload"] == GRINNING
