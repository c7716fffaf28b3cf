"""Concurrent writers of one key against the real database (SQLite file in WAL mode,
PostgreSQL): no acknowledged write is lost, versions are never duplicated or skipped,
and compare-and-swap conflicts are 409s, never 500s.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from kvstore.models import Key, Version
from lens.models import ApiToken, Team
from tests.factories import ApiClient

pytestmark = pytest.mark.django_db(transaction=True)

WRITERS = 6
ROUNDS = 3
KEY = "shared.notes"
PATH = f"/api/kv/{KEY}"


def new_token() -> str:
    team = Team.objects.create(slug="acme", name="Acme")
    _token, raw = ApiToken.objects.issue(team)
    return raw


def run_together(raw: str, work: Callable[[int, ApiClient], None]) -> None:
    """Run ``work(n, client)`` in WRITERS threads released at once; re-raise any failure."""
    barrier = threading.Barrier(WRITERS)
    failures: list[BaseException] = []

    def run(n: int) -> None:
        client = ApiClient(raw)
        try:
            barrier.wait(timeout=30)
            work(n, client)
        except BaseException as exc:  # reported to the test below
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a writer hung"
    if failures:
        raise failures[0]


def payload_of(n: int, round_: int) -> str:
    return f"writer {n} round {round_} — ✍️ {'x' * n}"


def stored_versions(raw: str) -> list[int]:
    history = ApiClient(raw).get(f"{PATH}/history?limit=200").json()
    assert history["total_versions"] == len(history["versions"])
    return sorted(item["version"] for item in history["versions"])


def test_concurrent_plain_writes_are_all_acknowledged_with_contiguous_versions() -> None:
    raw = new_token()
    acks: list[tuple[int, int, str]] = []  # (status, version, payload)
    lock = threading.Lock()

    def write(n: int, client: ApiClient) -> None:
        for round_ in range(ROUNDS):
            payload = payload_of(n, round_)
            response = client.put(PATH, {"payload": payload})
            body: Any = response.json()
            with lock:
                acks.append((response.status_code, body.get("version", -1), payload))

    run_together(raw, write)

    total = WRITERS * ROUNDS
    assert sorted(status for status, _, _ in acks).count(201) == 1
    assert all(status in (200, 201) for status, _, _ in acks), acks
    assert [status for status, version, _ in acks if version == 1] == [201]
    assert sorted(version for _, version, _ in acks) == list(range(1, total + 1))
    assert stored_versions(raw) == list(range(1, total + 1))

    client = ApiClient(raw)
    for _, version, payload in acks:
        got = client.get(f"{PATH}?version={version}").json()
        assert (got["version"], got["payload"]) == (version, payload)
    latest = client.get(PATH).json()
    assert latest["version"] == total
    key = Key.objects.get(key=KEY)
    assert key.latest_version == total
    assert Version.objects.filter(key=key).count() == total


def test_concurrent_creates_with_if_version_0_let_exactly_one_writer_win() -> None:
    raw = new_token()
    results: list[tuple[int, int, dict[str, Any]]] = []  # (writer, status, body)
    lock = threading.Lock()

    def create(n: int, client: ApiClient) -> None:
        response = client.put(PATH, {"payload": payload_of(n, 0), "if_version": 0})
        with lock:
            results.append((n, response.status_code, response.json()))

    run_together(raw, create)

    statuses = sorted(status for _, status, _ in results)
    assert statuses == [201] + [409] * (WRITERS - 1), results
    (winner,) = [n for n, status, _ in results if status == 201]
    for _, status, body in results:
        if status == 201:
            assert body["version"] == 1
        else:
            assert body["error"]["code"] == "version_conflict"
            assert body["error"]["current_version"] == 1
    assert stored_versions(raw) == [1]
    got = ApiClient(raw).get(PATH).json()
    assert (got["version"], got["payload"]) == (1, payload_of(winner, 0))


def test_concurrent_compare_and_swap_writers_conflict_cleanly_and_keep_versions_contiguous() -> (
    None
):
    raw = new_token()
    acks: list[tuple[int, str]] = []  # (version, payload)
    conflicts: list[tuple[int, dict[str, Any]]] = []  # (if_version sent, error)
    lock = threading.Lock()

    def read_then_write(n: int, client: ApiClient) -> None:
        for round_ in range(ROUNDS):
            read = client.get(PATH)
            if read.status_code == 404:
                assert read.json()["error"]["code"] == "key_not_found"
                seen = 0
            else:
                assert read.status_code == 200, read.content
                seen = read.json()["version"]
            payload = payload_of(n, round_)
            response = client.put(PATH, {"payload": payload, "if_version": seen})
            body = response.json()
            with lock:
                if response.status_code in (200, 201):
                    assert body["version"] == seen + 1
                    assert response.status_code == (201 if seen == 0 else 200)
                    acks.append((body["version"], payload))
                else:
                    assert response.status_code == 409, response.content
                    conflicts.append((seen, body["error"]))

    run_together(raw, read_then_write)

    assert acks, "at least one compare-and-swap write lands"
    assert len(acks) + len(conflicts) == WRITERS * ROUNDS
    for sent, error in conflicts:
        assert error["code"] == "version_conflict"
        assert isinstance(error["current_version"], int)
        assert error["current_version"] > sent
    versions = sorted(version for version, _ in acks)
    assert versions == list(range(1, len(acks) + 1))
    assert stored_versions(raw) == versions

    client = ApiClient(raw)
    for version, payload in acks:
        assert client.get(f"{PATH}?version={version}").json()["payload"] == payload
