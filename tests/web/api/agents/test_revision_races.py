"""Revisions under concurrent writers, on the real database (SQLite file in WAL mode,
PostgreSQL): numbers stay gapless and unique, ``if_revision`` lets exactly one of many
stale-free writers through, and a restore racing a PUT loses neither (SPEC §14).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from lens.models import Agent, ApiToken, Revision, Team
from lens.revisions import stored_config
from tests.api_calls import ApiClient, assert_error, without_revision
from tests.factories import race
from tests.samples import SAMPLE_CONFIG

pytestmark = pytest.mark.django_db(transaction=True)

WRITERS = 6


def config_for(n: int, **changes: Any) -> dict[str, Any]:
    base = json.loads(json.dumps(SAMPLE_CONFIG))
    return {**base, "persona": f"You are Wren, version {n}.", **changes}


def revisions_of(slug: str) -> list[Revision]:
    return list(Revision.objects.filter(agent__slug=slug).order_by("number"))


def stored_json(revision: Revision) -> dict[str, Any]:
    """The revision's whole config as the API answers a config (less ``revision``)."""
    return stored_config(revision).model_dump(mode="json")


def setup_agent() -> str:
    team = Team.objects.create(slug="acme", name="Acme")
    _token, raw = ApiToken.objects.issue(team)
    assert ApiClient(raw).put("/api/agents/wren", config_for(0)).status_code == 201
    return raw


def test_concurrent_puts_number_their_revisions_without_gap_or_duplicate() -> None:
    raw = setup_agent()

    answers = race(
        WRITERS, lambda n: ApiClient(raw).put("/api/agents/wren", config_for(n + 1)).json()
    )

    rows = revisions_of("wren")
    assert [row.number for row in rows] == list(range(1, WRITERS + 2))
    # Each writer's change is one revision of its own: six different configs, each
    # with the one change that tells them apart.
    personas = [stored_config(row).persona for row in rows[1:]]
    assert sorted(personas) == sorted(f"You are Wren, version {n + 1}." for n in range(WRITERS))
    assert all(row.summary == [{"change": "field_changed", "field": "persona"}] for row in rows[1:])
    assert all(row.via == "api" for row in rows)
    # Every answer is its own write: its number is the revision that holds its config.
    assert sorted(answer["revision"] for answer in answers) == list(range(2, WRITERS + 2))
    for answer in answers:
        assert without_revision(answer) == stored_json(rows[answer["revision"] - 1])
    got = ApiClient(raw).get("/api/agents/wren").json()
    assert got["revision"] == WRITERS + 1
    assert without_revision(got) == stored_json(rows[-1])


def test_of_concurrent_puts_over_the_same_revision_exactly_one_lands() -> None:
    raw = setup_agent()

    responses = race(
        WRITERS,
        lambda n: ApiClient(raw).put("/api/agents/wren", config_for(n + 1, if_revision=1)),
    )

    landed = [r for r in responses if r.status_code == 200]
    assert len(landed) == 1
    for refused in (r for r in responses if r.status_code != 200):
        assert assert_error(refused, 409, "revision_conflict")["current_revision"] == 2
    rows = revisions_of("wren")
    assert [row.number for row in rows] == [1, 2]
    winner = landed[0].json()
    assert winner["revision"] == 2
    assert without_revision(winner) == stored_json(rows[1])
    got = ApiClient(raw).get("/api/agents/wren").json()
    assert got == winner


def test_of_concurrent_creators_with_if_revision_0_exactly_one_creates() -> None:
    team = Team.objects.create(slug="acme", name="Acme")
    _token, raw = ApiToken.objects.issue(team)

    responses = race(
        WRITERS,
        lambda n: ApiClient(raw).put("/api/agents/fresh", config_for(n + 1, if_revision=0)),
    )

    assert sorted(r.status_code for r in responses) == [201] + [409] * (WRITERS - 1)
    for refused in (r for r in responses if r.status_code == 409):
        assert assert_error(refused, 409, "revision_conflict")["current_revision"] == 1
    assert [row.number for row in revisions_of("fresh")] == [1]


def test_reads_racing_writes_answer_a_config_with_its_own_revision() -> None:
    raw = setup_agent()

    def work(n: int) -> list[Any]:
        client = ApiClient(raw)
        if n % 2:
            for round_ in range(5):
                client.put("/api/agents/wren", config_for(10 * n + round_))
            return []
        return [client.get("/api/agents/wren").json() for _ in range(10)]

    for answer in (a for answers in race(4, work) for a in answers):
        row = Revision.objects.get(agent__slug="wren", number=answer["revision"])
        assert without_revision(answer) == stored_json(row)


def test_a_restore_racing_a_put_both_land_as_consecutive_revisions() -> None:
    raw = setup_agent()
    api = ApiClient(raw)
    assert api.put("/api/agents/wren", config_for(1)).json()["revision"] == 2
    first = stored_json(revisions_of("wren")[0])

    def act(i: int) -> Any:
        client = ApiClient(raw)
        if i == 0:
            return client.post("/api/agents/wren/revisions/1/restore")
        return client.put("/api/agents/wren", config_for(2))

    restored, put = race(2, act)

    assert restored.status_code == 201
    assert put.status_code == 200
    rows = revisions_of("wren")
    assert [row.number for row in rows] == [1, 2, 3, 4]
    assert {restored.json()["revision"], put.json()["revision"]} == {3, 4}
    by_number = {row.number: row for row in rows}
    assert by_number[restored.json()["revision"]].via == "restore"
    assert stored_json(by_number[restored.json()["revision"]]) == first
    assert by_number[put.json()["revision"]].via == "api"
    assert stored_config(by_number[put.json()["revision"]]).persona == "You are Wren, version 2."
    # Nothing lost: the agent holds the config of whichever landed last.
    got = ApiClient(raw).get("/api/agents/wren").json()
    assert got["revision"] == 4
    assert without_revision(got) == stored_json(rows[-1])
    assert Agent.objects.get(slug="wren").name == "Wren"
