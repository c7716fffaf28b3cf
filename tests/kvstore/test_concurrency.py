"""Concurrent writers of one key against the real database (SQLite file in WAL mode,
PostgreSQL): no acknowledged write is lost, versions are never duplicated or skipped,
and compare-and-swap conflicts are 409s, never 500s.
"""

from __future__ import annotations

from typing import Any

import pytest

from kvstore.models import Key, Version
from lens.models import ApiToken, Team
from tests.api_calls import ApiClient
from tests.factories import race

pytestmark = pytest.mark.django_db(transaction=True)

WRITERS = 6
ROUNDS = 3
KEY = "shared.notes"
PATH = f"/api/kv/{KEY}"


def new_token() -> str:
    team = Team.objects.create(slug="acme", name="Acme")
    _token, raw = ApiToken.objects.issue(team)
    return raw


def payload_of(n: int, round_: int) -> str:
    return f"writer {n} round {round_} — ✍️ {'x' * n}"


def stored_versions(raw: str) -> list[int]:
    history = ApiClient(raw).get(f"{PATH}/history?limit=200").json()
    assert history["total_versions"] == len(history["versions"])
    return sorted(item["version"] for item in history["versions"])


def test_concurrent_plain_writes_are_all_acknowledged_with_contiguous_versions() -> None:
    raw = new_token()

    def write(n: int) -> list[tuple[int, int, str]]:
        """(status, version, payload) of each of this writer's writes."""
        client = ApiClient(raw)
        written = []
        for round_ in range(ROUNDS):
            payload = payload_of(n, round_)
            response = client.put(PATH, {"payload": payload})
            body: Any = response.json()
            written.append((response.status_code, body.get("version", -1), payload))
        return written

    acks = [ack for writer in race(WRITERS, write) for ack in writer]

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

    def create(n: int) -> tuple[int, int, dict[str, Any]]:
        """(writer, status, body)."""
        response = ApiClient(raw).put(PATH, {"payload": payload_of(n, 0), "if_version": 0})
        return n, response.status_code, response.json()

    results = race(WRITERS, create)

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

    def read_then_write(n: int) -> list[tuple[int, str, int, dict[str, Any] | None]]:
        """(version written or 0, payload, if_version sent, conflict error or None)."""
        client = ApiClient(raw)
        outcomes: list[tuple[int, str, int, dict[str, Any] | None]] = []
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
            if response.status_code in (200, 201):
                assert body["version"] == seen + 1
                assert response.status_code == (201 if seen == 0 else 200)
                outcomes.append((body["version"], payload, seen, None))
            else:
                assert response.status_code == 409, response.content
                outcomes.append((0, payload, seen, body["error"]))
        return outcomes

    outcomes = [outcome for writer in race(WRITERS, read_then_write) for outcome in writer]
    acks = [(version, payload) for version, payload, _, error in outcomes if error is None]
    conflicts = [(sent, error) for _, _, sent, error in outcomes if error is not None]

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
