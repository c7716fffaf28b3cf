"""The bootstrap read (SPEC §7.1): root, the must tier within 40,000 code points with an
exact ``omitted`` list, ref pointers whose payloads are never read, one snapshot.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import given, settings
from hypothesis import strategies as st

from kvstore import store
from kvstore.bootstrap import bootstrap
from kvstore.core.bootstrap import BOOTSTRAP_BUDGET, select_must
from lens.models import Team
from tests.api_calls import ApiClient, assert_error, kv_put

BOOTSTRAP_KEYS = {"root", "must", "ref", "omitted", "budget", "used"}

# --- the budget, pure ----------------------------------------------------------------


def test_keys_that_do_not_fit_are_skipped_and_the_walk_goes_on() -> None:
    chosen = select_must(10_000, [("must.a", 20_000), ("must.b", 15_000), ("must.c", 9_000)])
    assert chosen.included == ("must.a", "must.c")
    assert chosen.omitted == ("must.b",)
    assert chosen.used == 39_000


def test_a_key_that_fills_the_budget_exactly_is_included() -> None:
    exact = select_must(1, [("must.a", BOOTSTRAP_BUDGET - 1), ("must.b", 1)])
    assert (exact.included, exact.omitted, exact.used) == (("must.a",), ("must.b",), 40_000)
    empty = select_must(0, [("must.a", 0), ("must.b", 40_000), ("must.c", 1)])
    assert (empty.included, empty.omitted) == (("must.a", "must.b"), ("must.c",))


@settings(max_examples=200)
@given(
    st.integers(0, 36_000),
    st.lists(st.integers(0, 36_000), max_size=30),
)
def test_every_must_key_is_either_included_or_omitted_and_the_budget_holds(
    root: int, sizes: list[int]
) -> None:
    keys = [(f"must.k{i:02d}", size) for i, size in enumerate(sizes)]
    chosen = select_must(root, keys)
    assert sorted(chosen.included + chosen.omitted) == [key for key, _ in keys]
    assert list(chosen.included) == sorted(chosen.included)
    size_of = dict(keys)
    assert chosen.used == root + sum(size_of[key] for key in chosen.included)
    assert chosen.used <= BOOTSTRAP_BUDGET
    # Skip and continue: nothing omitted would still have fitted at its turn.
    for key in chosen.omitted:
        before = root + sum(size_of[k] for k in chosen.included if k < key)
        assert before + size_of[key] > BOOTSTRAP_BUDGET


# --- through the API -----------------------------------------------------------------

pytestmark = pytest.mark.django_db


def get(api: ApiClient) -> dict[str, Any]:
    response = api.get("/api/bootstrap")
    assert response.status_code == 200, response.content
    body: dict[str, Any] = response.json()
    assert set(body) == BOOTSTRAP_KEYS
    return body


def test_bootstrap_reads_root_must_and_ref_pointers(api: ApiClient) -> None:
    kv_put(api, "root", "Start here.\nThen read must.*")
    kv_put(api, "must.craft.traps", "Never trust a green test you did not see fail.")
    kv_put(api, "must.craft.traps", "Never trust a green test you have not seen fail.")
    kv_put(api, "must.alpha", "First by key order.")
    kv_put(api, "ref.style", "Line one of the style guide\nLine two")
    kv_put(api, "other.key", "not part of any tier")
    kv_put(api, "must", "no dot: not in the must tier")

    body = get(api)
    assert body["root"] == {
        "id": "root",
        "version": 1,
        "payload": "Start here.\nThen read must.*",
        "runes": 28,
    }
    assert [(m["id"], m["version"]) for m in body["must"]] == [
        ("must.alpha", 1),
        ("must.craft.traps", 2),
    ]
    assert body["must"][1]["payload"] == "Never trust a green test you have not seen fail."
    assert set(body["must"][0]) == {"id", "version", "payload", "runes"}
    assert body["ref"] == [
        {"id": "ref.style", "version": 1, "runes": 36, "first_line": "Line one of the style guide"}
    ]
    assert body["omitted"] == []
    assert body["budget"] == 40_000
    assert body["used"] == 28 + 19 + 48


def test_must_keys_that_do_not_fit_are_named_in_omitted(api: ApiClient) -> None:
    kv_put(api, "root", "r" * 4_000)
    kv_put(api, "must.a", "a" * 20_000)
    kv_put(api, "must.b", "b" * 17_000)  # 4,000 + 20,000 + 17,000 > 40,000: skipped
    kv_put(api, "must.c", "c" * 16_000)  # still fits: 40,000 exactly
    kv_put(api, "must.d", "d")  # no room left at all
    body = get(api)
    assert [m["id"] for m in body["must"]] == ["must.a", "must.c"]
    assert body["omitted"] == ["must.b", "must.d"]
    assert body["used"] == 40_000


def test_a_missing_root_is_key_not_found(api: ApiClient) -> None:
    kv_put(api, "must.a", "x")
    error = assert_error(api.get("/api/bootstrap"), 404, "key_not_found")
    assert "root" in error["message"]


def test_bootstrap_is_one_teams(api: ApiClient, other_api: ApiClient, anon_api: ApiClient) -> None:
    kv_put(api, "root", "ours")
    kv_put(api, "must.secret", "ours too")
    assert_error(other_api.get("/api/bootstrap"), 404, "key_not_found")
    kv_put(other_api, "root", "theirs")
    assert get(other_api)["must"] == []
    assert_error(anon_api.get("/api/bootstrap"), 401)


def test_ref_payloads_are_never_read(team: Team) -> None:
    store.write(team, "root", "root")
    store.write(team, "must.a", "MUST-PAYLOAD")
    for i in range(20):
        store.write(team, f"ref.doc{i:02d}", f"REF-PAYLOAD-{i}\nmore")
    with CaptureQueriesContext(connection) as ctx:
        found = bootstrap(team)
    assert len(found.ref) == 20
    assert found.ref[3].first_line == "REF-PAYLOAD-3"
    sql = [query["sql"] for query in ctx.captured_queries]
    assert len([q for q in sql if "kvstore" in q]) == 4  # root, must sizes, payloads, refs
    (pointers,) = [q for q in sql if "first_line" in q]
    assert "payload" not in pointers
    # Payloads are read twice: root's, and the chosen must keys'; no ref key is named.
    payload_reads = [q for q in sql if "payload" in q]
    assert len(payload_reads) == 2
    assert not any("ref.doc" in q for q in payload_reads)
    assert any("must.a" in q for q in payload_reads)


def test_bootstrap_queries_do_not_grow_with_keys(
    team: Team, django_assert_max_num_queries: Any
) -> None:
    store.write(team, "root", "root")
    store.write(team, "must.a", "a")
    store.write(team, "ref.a", "a")
    with CaptureQueriesContext(connection) as ctx:
        bootstrap(team)
    for i in range(50):
        store.write(team, f"must.k{i:02d}", "x" * 100)
        store.write(team, f"ref.k{i:02d}", "y" * 100)
    with django_assert_max_num_queries(len(ctx.captured_queries)):
        found = bootstrap(team)
    assert len(found.must) == 51
    assert len(found.ref) == 51


@pytest.mark.django_db(transaction=True)
def test_bootstrap_reads_one_snapshot(team: Team) -> None:
    store.write(team, "root", "root")
    with CaptureQueriesContext(connection) as ctx:
        bootstrap(team)
    begin, first = (query["sql"] for query in ctx.captured_queries[:2])
    if connection.vendor == "postgresql":
        # Its own transaction, at a level where every statement sees the same moment.
        assert (begin, first) == ("BEGIN", "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    else:
        assert begin == "BEGIN IMMEDIATE"  # SQLite: one transaction is one snapshot
