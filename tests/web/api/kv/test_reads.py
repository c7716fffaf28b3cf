"""Reading through the key/value API (SPEC §7, §8): a version, the history and diffs."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api_calls import (
    KV_KEY_OUT,
    KV_PAGE,
    ApiClient,
    assert_error,
    kv_put,
    kv_url,
    kv_write_versions,
)
from tests.samples import GRINNING

VALUE_OUT = KV_KEY_OUT | {"payload"}


VERSION_META = {"version", "written_at", "runes", "first_line"}


def keys_in(value: Any) -> set[str]:
    """Every dictionary key anywhere in a JSON document."""
    if isinstance(value, dict):
        return set(value) | set().union(*(keys_in(item) for item in value.values()))
    if isinstance(value, list):
        return set().union(*(keys_in(item) for item in value))
    return set()


# --- read --------------------------------------------------------------------------


def test_read_returns_the_latest_version(api: ApiClient) -> None:
    written = [kv_put(api, "doc", text).json() for text in ["first", "second", "third!"]]

    response = api.get(kv_url("doc"))

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
    written = [kv_put(api, "doc", text).json() for text in ["first", "second", "third"]]

    for number, text in [(1, "first"), (2, "second"), (3, "third")]:
        body = api.get(kv_url("doc", f"?version={number}")).json()
        assert body == {
            "id": "doc",
            "version": number,
            "payload": text,
            "written_at": written[number - 1]["written_at"],
            "runes": len(text),
        }


def test_reading_a_missing_key_is_a_404_error_never_an_empty_answer(api: ApiClient) -> None:
    error = assert_error(api.get(kv_url("nowhere")), 404, "key_not_found")
    assert "payload" not in error
    assert_error(api.get(kv_url("nowhere", "?version=1")), 404, "key_not_found")


def test_reading_a_missing_version_of_an_existing_key_is_404_version_not_found(
    api: ApiClient,
) -> None:
    kv_write_versions(api, "doc", "one", "two")
    assert_error(api.get(kv_url("doc", "?version=3")), 404, "version_not_found")
    assert_error(api.get(kv_url("doc", "?version=1000")), 404, "version_not_found")


@pytest.mark.parametrize("bad", ["0", "-1", "x", "1.5", "", "true"])
def test_a_version_that_is_not_a_positive_integer_is_422(api: ApiClient, bad: str) -> None:
    kv_write_versions(api, "doc", "one")
    assert_error(api.get(kv_url("doc", f"?version={bad}")), 422, "invalid_request")


@pytest.mark.parametrize("huge", [2**31, 2**63, 10**20])
def test_a_version_too_large_for_the_store_is_422_never_a_crash(api: ApiClient, huge: int) -> None:
    kv_write_versions(api, "doc", "one")
    assert_error(api.get(kv_url("doc", f"?version={huge}")), 422, "invalid_request")
    assert_error(api.get(kv_url("doc", f"/diff?from=1&to={huge}")), 422, "invalid_request")
    assert api.get(kv_url("doc", f"?version={2**31 - 1}")).status_code == 404


# --- history -----------------------------------------------------------------------


def test_history_is_metadata_newest_first_with_the_total(api: ApiClient) -> None:
    written = [kv_put(api, "log", text).json() for text in ["alpha", "beta\nmore", "γάμμα"]]

    response = api.get(kv_url("log", "/history"))

    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"id", "versions", "total_versions"} | KV_PAGE
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
    kv_write_versions(api, "log", f"title one\n{secret}", f"title two\n{secret}")

    response = api.get(kv_url("log", "/history"))

    assert "payload" not in keys_in(response.json())
    assert secret not in response.content.decode()
    for item in response.json()["versions"]:
        assert set(item) == VERSION_META


def test_history_never_loads_payloads_from_the_database(
    api: ApiClient, django_assert_max_num_queries: Any
) -> None:
    kv_write_versions(api, "log", "one", "two")

    with django_assert_max_num_queries(10) as queries:
        assert api.get(kv_url("log", "/history")).status_code == 200

    assert queries.captured_queries
    assert not [q["sql"] for q in queries.captured_queries if "payload" in q["sql"].lower()]


def test_first_line_is_cut_to_120_code_points(api: ApiClient) -> None:
    line = "".join(chr(ord("a") + i % 26) for i in range(200))
    kv_write_versions(api, "long", line + "\nsecond line", GRINNING * 200)

    versions = api.get(kv_url("long", "/history")).json()["versions"]

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
    kv_write_versions(api, "lines", payload)
    meta = api.get(kv_url("lines", "/history")).json()["versions"][0]
    assert meta["first_line"] == expected
    assert meta["runes"] == len(payload)


def test_history_pages_with_limit_offset_and_next_offset(api: ApiClient) -> None:
    kv_write_versions(api, "paged", *[f"v{n}" for n in range(1, 8)])

    def page(query: str) -> dict[str, Any]:
        body: dict[str, Any] = api.get(kv_url("paged", f"/history?{query}")).json()
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
    kv_write_versions(api, "walk", *[str(n) for n in range(11)])
    seen: list[int] = []
    offset: int | None = 0
    while offset is not None:
        body = api.get(kv_url("walk", f"/history?limit=4&offset={offset}")).json()
        seen += [v["version"] for v in body["versions"]]
        offset = body["next_offset"]
    assert seen == list(range(11, 0, -1))


@pytest.mark.parametrize("query", ["limit=0", "limit=201", "limit=-1", "offset=-1", "limit=x"])
def test_history_paging_out_of_range_is_422(api: ApiClient, query: str) -> None:
    kv_write_versions(api, "paged", "one")
    assert_error(api.get(kv_url("paged", f"/history?{query}")), 422, "invalid_request")


def test_history_of_a_missing_key_is_404_key_not_found(api: ApiClient) -> None:
    assert_error(api.get(kv_url("nowhere", "/history")), 404, "key_not_found")


# --- diff --------------------------------------------------------------------------


def test_diff_is_a_unified_diff_between_two_versions(api: ApiClient) -> None:
    kv_write_versions(api, "doc", "alpha\nbeta\ngamma\n", "alpha\nBETA\ngamma\n")

    response = api.get(kv_url("doc", "/diff?from=1&to=2"))

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
    kv_write_versions(api, "doc", "old line\n", "new line\n", "new line\n")

    backwards = api.get(kv_url("doc", "/diff?from=2&to=1")).json()
    assert (backwards["from"], backwards["to"]) == (2, 1)
    assert "-new line" in backwards["diff"].splitlines()
    assert "+old line" in backwards["diff"].splitlines()
    assert api.get(kv_url("doc", "/diff?from=2&to=3")).json()["diff"] == ""
    assert api.get(kv_url("doc", "/diff?from=1&to=1")).json()["diff"] == ""


def test_diff_of_unicode_payloads_without_final_newlines(api: ApiClient) -> None:
    kv_write_versions(api, "doc", f"{GRINNING} שלום", "😢 שלום")
    lines = api.get(kv_url("doc", "/diff?from=1&to=2")).json()["diff"].splitlines()
    assert f"-{GRINNING} שלום" in lines
    assert "+😢 שלום" in lines


@pytest.mark.parametrize("query", ["from=1&to=9", "from=9&to=1", "from=5&to=6"])
def test_diff_with_a_missing_version_is_404_version_not_found(api: ApiClient, query: str) -> None:
    kv_write_versions(api, "doc", "one", "two")
    assert_error(api.get(kv_url("doc", f"/diff?{query}")), 404, "version_not_found")


def test_diff_of_a_missing_key_is_404_key_not_found(api: ApiClient) -> None:
    assert_error(api.get(kv_url("nowhere", "/diff?from=1&to=2")), 404, "key_not_found")


@pytest.mark.parametrize(
    "query", ["", "from=1", "to=2", "from=0&to=1", "from=1&to=-1", "from=x&to=1", "from=1&to=1.5"]
)
def test_diff_without_two_positive_versions_is_422(api: ApiClient, query: str) -> None:
    kv_write_versions(api, "doc", "one", "two")
    assert_error(api.get(kv_url("doc", f"/diff?{query}")), 422, "invalid_request")
