"""Eight writers at once leave one valid chain (SPEC §15): every write's event, numbered
with no gap and no duplicate, each sealing the one before, on the real database (SQLite
file in WAL mode, PostgreSQL)."""

from __future__ import annotations

import pytest

from lens.audit import Entry, append, verify
from lens.models import ApiToken, AuditEvent, Team
from tests.api_calls import ApiClient, post_memory
from tests.factories import memory_config, race

pytestmark = pytest.mark.django_db(transaction=True)

WRITERS = 8
ROUNDS = 3


def test_eight_concurrent_writers_leave_a_valid_chain() -> None:
    team = Team.objects.create(slug="acme", name="Acme")
    _token, raw = ApiToken.objects.issue(team)
    assert ApiClient(raw).put("/api/agents/wren", memory_config()).status_code == 201
    before = AuditEvent.objects.filter(team=team).count()

    def work(n: int) -> None:
        client = ApiClient(raw)
        for round_ in range(ROUNDS):
            # Three kinds of change, each appending from its own code path.
            if n % 3 == 0:
                assert client.put(f"/api/kv/k{n}", {"payload": f"v{round_}"}).status_code in (
                    200,
                    201,
                )
            elif n % 3 == 1:
                post_memory(client, {"kind": "profile", "content": f"Fact {n}.{round_}"})
            else:
                assert client.post("/api/agents/wren/deliveries", {}).status_code == 201

    race(WRITERS, work)

    rows = list(AuditEvent.objects.filter(team=team).order_by("seq"))
    assert [row.seq for row in rows] == list(range(1, len(rows) + 1))
    assert len(rows) == before + WRITERS * ROUNDS
    found = verify(team)
    assert found.first_bad is None
    assert found.events == len(rows)


def test_appending_outside_a_transaction_is_refused() -> None:
    team = Team.objects.create(slug="acme", name="Acme")
    before = AuditEvent.objects.count()
    with pytest.raises(RuntimeError, match="transaction"):
        append(team.pk, "system", [Entry("kv.written", "kv", "k")])
    assert AuditEvent.objects.count() == before


def test_saves_deliveries_and_changes_of_one_agent_at_once_never_deadlock() -> None:
    """A save or a delivery refers to its agent (checked at the commit), a change of the
    agent locks it: each appends to the same chain, and all take the agent first."""
    team = Team.objects.create(slug="acme", name="Acme")
    _token, raw = ApiToken.objects.issue(team)
    assert ApiClient(raw).put("/api/agents/wren", memory_config()).status_code == 201

    def work(n: int) -> list[int]:
        client = ApiClient(raw)
        statuses = []
        for round_ in range(ROUNDS):
            if n % 3 == 0:
                config = memory_config(persona=f"Version {n}.{round_}")
                statuses.append(client.put("/api/agents/wren", config).status_code)
            elif n % 3 == 1:
                body = {"kind": "profile", "content": f"Fact {n}.{round_}"}
                statuses.append(client.post("/api/agents/wren/memories", body).status_code)
            else:
                statuses.append(client.post("/api/agents/wren/deliveries", {}).status_code)
        return statuses

    answers = race(WRITERS, work)

    assert all(status in (200, 201) for statuses in answers for status in statuses)
    assert verify(team).first_bad is None
