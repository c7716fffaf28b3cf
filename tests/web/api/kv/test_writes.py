"""Writing through the key/value API (SPEC §7, §8): payload limits, request bodies,
versions and compare-and-swap, and delete.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kvstore.models import Version
from tests.api_calls import (
    KV_KEY_OUT,
    ApiClient,
    assert_error,
    kv_listing,
    kv_put,
    kv_store_rows,
    kv_url,
    kv_write_versions,
)
from tests.samples import GRINNING

LIMIT = 36_000


MIB = 1024 * 1024


def utc_time(text: str) -> datetime:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    assert moment.utcoffset() == timedelta(0), text
    return moment


# --- payload limits ----------------------------------------------------------------


@pytest.mark.parametrize("unit", [GRINNING, "x"], ids=["astral", "ascii"])
def test_a_payload_of_exactly_36000_code_points_is_accepted_whole(
    api: ApiClient, unit: str
) -> None:
    payload = unit * LIMIT

    response = kv_put(api, "big", payload)

    assert response.status_code == 201, response.content[:300]
    assert response.json()["runes"] == LIMIT
    got = api.get(kv_url("big")).json()
    assert got["payload"] == payload
    assert got["runes"] == LIMIT


@pytest.mark.parametrize("unit", [GRINNING, "x"], ids=["astral", "ascii"])
def test_a_payload_of_36001_code_points_is_refused_with_the_limit_and_the_count(
    api: ApiClient, unit: str
) -> None:
    error = assert_error(kv_put(api, "big", unit * (LIMIT + 1)), 413, "payload_too_large")

    assert error["limit"] == 36000
    assert error["runes"] == 36001
    assert kv_store_rows() == []
    assert_error(api.get(kv_url("big")), 404, "key_not_found")


@pytest.mark.parametrize("unit", [GRINNING, "x"], ids=["astral", "ascii"])
def test_an_over_limit_write_to_an_existing_key_leaves_the_old_version(
    api: ApiClient, unit: str
) -> None:
    kv_write_versions(api, "big", "old")
    before = kv_store_rows()

    error = assert_error(kv_put(api, "big", unit * (LIMIT + 1)), 413, "payload_too_large")

    assert (error["limit"], error["runes"]) == (LIMIT, LIMIT + 1)
    assert kv_store_rows() == before
    got = api.get(kv_url("big")).json()
    assert (got["version"], got["payload"]) == (1, "old")
    assert api.get(kv_url("big", "/history")).json()["total_versions"] == 1


def test_a_far_over_limit_payload_reports_its_actual_count(api: ApiClient) -> None:
    error = assert_error(kv_put(api, "big", "y" * 50_000), 413, "payload_too_large")
    assert (error["limit"], error["runes"]) == (LIMIT, 50_000)


def test_a_payload_sent_as_raw_utf8_counts_code_points_not_bytes(api: ApiClient) -> None:
    raw = json.dumps({"payload": GRINNING * LIMIT}, ensure_ascii=False)
    response = api.put(kv_url("utf8"), raw=raw)
    assert response.status_code == 201, response.content[:300]
    assert response.json()["runes"] == LIMIT

    raw = json.dumps({"payload": GRINNING * (LIMIT + 1)}, ensure_ascii=False)
    error = assert_error(api.put(kv_url("utf8"), raw=raw), 413, "payload_too_large")
    assert error["runes"] == LIMIT + 1


def test_astral_characters_count_once_beside_ascii(api: ApiClient) -> None:
    response = kv_put(api, "mixed", "x" * (LIMIT - 1) + GRINNING)
    assert response.status_code == 201
    assert response.json()["runes"] == LIMIT
    assert_error(kv_put(api, "mixed", "x" * LIMIT + GRINNING), 413, "payload_too_large")


def test_combining_marks_count_as_code_points_not_graphemes(api: ApiClient) -> None:
    accented = "e\u0301" * (LIMIT // 2)  # 18,000 graphemes, 36,000 code points
    assert kv_put(api, "marks", accented).status_code == 201
    error = assert_error(kv_put(api, "marks", accented + "e"), 413, "payload_too_large")
    assert error["runes"] == LIMIT + 1


def test_an_empty_payload_is_allowed(api: ApiClient) -> None:
    response = kv_put(api, "empty", "")
    assert response.status_code == 201
    assert response.json()["runes"] == 0

    got = api.get(kv_url("empty")).json()
    assert (got["payload"], got["runes"]) == ("", 0)
    meta = api.get(kv_url("empty", "/history")).json()["versions"]
    assert meta[0]["first_line"] == ""
    assert meta[0]["runes"] == 0


# --- request bodies ----------------------------------------------------------------


def test_a_body_over_one_mebibyte_is_refused_with_413_and_nothing_is_written(
    api: ApiClient,
) -> None:
    head = '{"payload": "x"}'
    raw = head + " " * (MIB + 1 - len(head))
    assert len(raw.encode()) == MIB + 1

    error = assert_error(api.put(kv_url("huge"), raw=raw), 413, "payload_too_large")

    assert error["limit"] == MIB
    assert kv_store_rows() == []


def test_a_body_of_exactly_one_mebibyte_is_accepted(api: ApiClient) -> None:
    head = '{"payload": "x"}'
    raw = head + " " * (MIB - len(head))
    assert len(raw.encode()) == MIB

    assert api.put(kv_url("snug"), raw=raw).status_code == 201


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
    kv_write_versions(api, "k", "kept")
    before = kv_store_rows()

    assert_error(api.put(kv_url("k"), raw=raw), 422, "invalid_request")
    assert_error(api.put(kv_url("new"), raw=raw), 422, "invalid_request")

    assert kv_store_rows() == before


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
    error = assert_error(api.put(kv_url("k"), body), 422, "invalid_request")
    assert error["errors"]
    assert kv_store_rows() == []


def test_a_put_without_a_body_is_422(api: ApiClient) -> None:
    assert_error(api.put(kv_url("k")), 422, "invalid_request")
    assert kv_store_rows() == []


# --- write and versions ------------------------------------------------------------


def test_the_first_write_is_201_version_1_and_later_writes_are_200_and_contiguous(
    api: ApiClient,
) -> None:
    first = kv_put(api, "notes", "one")
    assert first.status_code == 201
    body = first.json()
    assert set(body) == KV_KEY_OUT
    assert (body["id"], body["version"], body["runes"]) == ("notes", 1, 3)
    utc_time(body["written_at"])

    for expected in range(2, 6):
        response = kv_put(api, "notes", f"v{expected}")
        assert response.status_code == 200
        body = response.json()
        assert set(body) == KV_KEY_OUT
        assert (body["id"], body["version"], body["runes"]) == ("notes", expected, 2)

    history = api.get(kv_url("notes", "/history")).json()
    assert [v["version"] for v in history["versions"]] == [5, 4, 3, 2, 1]


def test_write_times_are_utc_and_never_go_backwards(api: ApiClient) -> None:
    times = [utc_time(kv_put(api, "t", str(n)).json()["written_at"]) for n in range(4)]
    assert times == sorted(times)
    now = datetime.now(UTC)
    assert all(abs(now - moment) < timedelta(minutes=5) for moment in times)


def test_keys_version_independently(api: ApiClient) -> None:
    assert kv_write_versions(api, "a", "1", "2", "3") == [1, 2, 3]
    assert kv_write_versions(api, "b", "1") == [1]
    assert kv_write_versions(api, "a", "4") == [4]


def test_a_matching_if_version_lands(api: ApiClient) -> None:
    kv_write_versions(api, "cas", "one", "two")

    response = kv_put(api, "cas", "three", if_version=2)

    assert response.status_code == 200
    assert response.json()["version"] == 3
    assert api.get(kv_url("cas")).json()["payload"] == "three"


@pytest.mark.parametrize("stale", [1, 3, 7, 2**31 - 1])
def test_a_mismatched_if_version_is_a_409_conflict_with_the_current_version(
    api: ApiClient, stale: int
) -> None:
    kv_write_versions(api, "cas", "one", "two")
    before = kv_store_rows()

    error = assert_error(kv_put(api, "cas", "lost", if_version=stale), 409, "version_conflict")

    assert error["current_version"] == 2
    assert kv_store_rows() == before
    assert api.get(kv_url("cas")).json()["payload"] == "two"


def test_if_version_0_creates_a_new_key(api: ApiClient) -> None:
    response = kv_put(api, "fresh", "first", if_version=0)
    assert response.status_code == 201
    assert response.json()["version"] == 1


def test_if_version_0_on_an_existing_key_is_a_conflict(api: ApiClient) -> None:
    kv_write_versions(api, "taken", "one", "two", "three")

    error = assert_error(kv_put(api, "taken", "again", if_version=0), 409, "version_conflict")

    assert error["current_version"] == 3
    assert api.get(kv_url("taken")).json()["payload"] == "three"


def test_if_version_on_a_missing_key_is_a_conflict_at_version_0(api: ApiClient) -> None:
    error = assert_error(kv_put(api, "ghost", "x", if_version=3), 409, "version_conflict")

    assert error["current_version"] == 0
    assert kv_store_rows() == []
    assert_error(api.get(kv_url("ghost")), 404, "key_not_found")


def test_a_null_if_version_is_the_same_as_none(api: ApiClient) -> None:
    kv_write_versions(api, "k", "one")
    response = kv_put(api, "k", "two", if_version=None)
    assert response.status_code == 200
    assert response.json()["version"] == 2


@pytest.mark.parametrize("bad", [-1, -5, "1", "0", 1.5, 1.0, True, False, [1], {"v": 1}])
def test_an_if_version_that_is_not_a_non_negative_integer_is_422(api: ApiClient, bad: Any) -> None:
    kv_write_versions(api, "k", "one")
    before = kv_store_rows()

    error = assert_error(kv_put(api, "k", "two", if_version=bad), 422, "invalid_request")
    assert_error(kv_put(api, "new", "x", if_version=bad), 422, "invalid_request")

    assert "if_version" in error["message"]
    assert kv_store_rows() == before


# --- delete ------------------------------------------------------------------------


def test_delete_removes_every_version_and_a_later_write_starts_at_1(api: ApiClient) -> None:
    kv_write_versions(api, "gone", "one", "two", "three")
    kv_write_versions(api, "stays", "here")

    response = api.delete(kv_url("gone"))

    assert response.status_code == 200
    assert response.json() == {"id": "gone", "deleted_versions": 3}
    assert_error(api.get(kv_url("gone")), 404, "key_not_found")
    assert_error(api.get(kv_url("gone", "?version=2")), 404, "key_not_found")
    assert_error(api.get(kv_url("gone", "/history")), 404, "key_not_found")
    assert [item["id"] for item in kv_listing(api)["keys"]] == ["stays"]
    assert not Version.objects.filter(key__key="gone").exists()

    again = kv_put(api, "gone", "reborn")
    assert again.status_code == 201
    assert again.json()["version"] == 1
    assert_error(api.get(kv_url("gone", "?version=2")), 404, "version_not_found")
    history = api.get(kv_url("gone", "/history")).json()
    assert history["total_versions"] == 1
    assert history["versions"][0]["first_line"] == "reborn"
    assert api.get(kv_url("stays")).json()["payload"] == "here"


def test_if_version_0_works_again_after_a_delete(api: ApiClient) -> None:
    kv_write_versions(api, "gone", "one")
    api.delete(kv_url("gone"))
    assert kv_put(api, "gone", "fresh", if_version=0).status_code == 201


def test_deleting_a_missing_key_is_404_key_not_found(api: ApiClient) -> None:
    assert_error(api.delete(kv_url("nowhere")), 404, "key_not_found")
    kv_write_versions(api, "once", "x")
    assert api.delete(kv_url("once")).status_code == 200
    assert_error(api.delete(kv_url("once")), 404, "key_not_found")
