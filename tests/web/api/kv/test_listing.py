"""Listing keys through the key/value API (SPEC §7, §8): order, prefixes and paging."""

from __future__ import annotations

import random
from urllib.parse import quote

import pytest

from tests.api_calls import ApiClient, assert_error, kv_listing, kv_put, kv_url, kv_write_versions
from tests.samples import GRINNING


def listed_ids(api: ApiClient, prefix: str) -> list[str]:
    return [item["id"] for item in kv_listing(api, f"prefix={quote(prefix)}&limit=200")["keys"]]


# --- list --------------------------------------------------------------------------


def test_list_shows_each_keys_latest_version(api: ApiClient) -> None:
    kv_write_versions(api, "a", "1", "22", "333")
    last = kv_put(api, "b", "four").json()

    body = kv_listing(api)

    assert body["total"] == 2
    assert (body["limit"], body["offset"], body["next_offset"]) == (50, 0, None)
    items = {item["id"]: item for item in body["keys"]}
    assert (items["a"]["version"], items["a"]["runes"]) == (3, 3)
    assert items["b"] == last


def test_an_empty_store_lists_nothing(api: ApiClient) -> None:
    assert kv_listing(api) == {
        "keys": [],
        "total": 0,
        "limit": 50,
        "offset": 0,
        "next_offset": None,
    }


def test_list_orders_keys_by_code_point(api: ApiClient) -> None:
    keys = ["a_b", "B", "ab", "a.b", "a:b", "a-b", "a", "A", "0", "a.b.c", "z", "Z", "_x", "-x"]
    for key in random.Random(7).sample(keys, len(keys)):
        kv_write_versions(api, key, key)

    listed = [item["id"] for item in kv_listing(api)["keys"]]

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
        kv_write_versions(api, key, key)

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
    assert kv_listing(api, "prefix=must.craft")["total"] == 3


def test_underscore_colon_and_percent_in_a_prefix_are_literal(api: ApiClient) -> None:
    for key in ["a_b", "ab", "axb", "a:b", "a-b", "a.b"]:
        kv_write_versions(api, key, key)

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
        kv_write_versions(api, key, key)

    assert listed_ids(api, "Must.") == ["Must.y"]
    assert listed_ids(api, "must.") == ["must.x"]
    assert listed_ids(api, "MUST.") == ["MUST.z"]
    assert listed_ids(api, "mUST.") == []


@pytest.mark.parametrize("prefix", ["é", "café", GRINNING, "a\x7f", " ", "a b"])
def test_a_prefix_no_key_can_start_with_lists_nothing(api: ApiClient, prefix: str) -> None:
    kv_write_versions(api, "a", "x")
    kv_write_versions(api, "cafe", "x")

    body = kv_listing(api, f"prefix={quote(prefix)}")

    assert body["keys"] == []
    assert body["total"] == 0
    assert body["next_offset"] is None


def test_list_pages_with_limit_offset_and_next_offset(api: ApiClient) -> None:
    keys = [f"k{n}" for n in range(5)]
    for key in keys:
        kv_write_versions(api, key, key)

    first = kv_listing(api, "limit=2")
    assert [item["id"] for item in first["keys"]] == ["k0", "k1"]
    assert (first["total"], first["limit"], first["offset"], first["next_offset"]) == (5, 2, 0, 2)
    second = kv_listing(api, "limit=2&offset=2")
    assert [item["id"] for item in second["keys"]] == ["k2", "k3"]
    assert second["next_offset"] == 4
    last = kv_listing(api, "limit=2&offset=4")
    assert [item["id"] for item in last["keys"]] == ["k4"]
    assert last["next_offset"] is None
    assert last["total"] == 5
    beyond = kv_listing(api, "limit=2&offset=9")
    assert (beyond["keys"], beyond["total"], beyond["next_offset"]) == ([], 5, None)
    assert kv_listing(api, "limit=5")["next_offset"] is None
    assert kv_listing(api, "limit=200")["limit"] == 200


def test_list_pages_within_a_prefix(api: ApiClient) -> None:
    for key in ["ns.a", "ns.b", "ns.c", "other"]:
        kv_write_versions(api, key, key)

    body = kv_listing(api, "prefix=ns.&limit=2&offset=1")

    assert [item["id"] for item in body["keys"]] == ["ns.b", "ns.c"]
    assert (body["total"], body["next_offset"]) == (3, None)


@pytest.mark.parametrize(
    "query", ["limit=0", "limit=201", "limit=-3", "offset=-1", "limit=x", "offset=y"]
)
def test_list_paging_out_of_range_is_422(api: ApiClient, query: str) -> None:
    assert_error(api.get(f"/api/kv?{query}"), 422, "invalid_request")


@pytest.mark.parametrize("huge", [2**31, 2**63, 10**20])
def test_an_offset_too_large_for_the_store_is_422_never_a_crash(api: ApiClient, huge: int) -> None:
    kv_write_versions(api, "k", "x")
    assert_error(api.get(f"/api/kv?offset={huge}"), 422, "invalid_request")
    assert_error(api.get(kv_url("k", f"/history?offset={huge}")), 422, "invalid_request")
    assert kv_listing(api, f"offset={2**31 - 1}")["keys"] == []
    assert api.get(kv_url("k", f"/history?offset={2**31 - 1}")).json()["versions"] == []


def test_another_teams_keys_never_appear_in_a_list(api: ApiClient, other_api: ApiClient) -> None:
    kv_write_versions(other_api, "must.theirs", "x")
    kv_write_versions(other_api, "shared", "theirs")
    kv_write_versions(api, "shared", "ours")
    kv_write_versions(api, "must.ours", "y")

    assert [item["id"] for item in kv_listing(api)["keys"]] == ["must.ours", "shared"]
    assert kv_listing(api)["total"] == 2
    assert listed_ids(api, "must.") == ["must.ours"]
    assert listed_ids(other_api, "must.") == ["must.theirs"]
