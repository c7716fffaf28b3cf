"""Revisions through the API (SPEC §14): every PUT that changes an agent writes one, with
who, which way and what changed; ``if_revision`` refuses a stale write with nothing
changed; the history pages, reads, compares and restores.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from lens.core.revisions import canonical_config
from lens.models import Agent, ApiToken, Revision, StoredConfig, Team
from lens.revisions import stored_config
from tests.api_calls import ApiClient, assert_error
from tests.samples import SAMPLE_CONFIG

pytestmark = pytest.mark.django_db


def config(**changes: Any) -> dict[str, Any]:
    return {**json.loads(json.dumps(SAMPLE_CONFIG)), **changes}


def snapshot(agent_slug: str = "wren") -> tuple[Any, ...]:
    """Everything a refused write must leave as it was."""
    agent = Agent.objects.filter(slug=agent_slug).first()
    return (
        list(Revision.objects.order_by("pk").values_list("pk", "number", "config_id")),
        StoredConfig.objects.count(),
        None if agent is None else (agent.name, agent.persona, agent.sections.count()),
    )


def test_creating_an_agent_writes_revision_1_by_its_token(api: ApiClient, team: Team) -> None:
    answer = api.put("/api/agents/wren", config())
    assert answer.status_code == 201
    assert answer.json()["revision"] == 1
    assert api.get("/api/agents/wren").json()["revision"] == 1
    token = ApiToken.objects.get(team=team)
    [row] = api.get("/api/agents/wren/revisions").json()["revisions"]
    assert row["revision"] == 1
    assert row["actor"] == f"token {token.prefix}…"
    assert row["via"] == "api"
    assert row["approved_by"] is None
    assert [c["change"] for c in row["summary"]] == ["section_added"] * len(
        SAMPLE_CONFIG["background"]["sections"]
    )
    stored = api.get("/api/agents/wren/revisions/1").json()
    without_revision = {
        k: v for k, v in api.get("/api/agents/wren").json().items() if k != "revision"
    }
    assert stored["config"] == without_revision
    canonical = json.dumps(
        without_revision, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    assert stored["config_sha256"] == hashlib.sha256(canonical.encode()).hexdigest()


def test_a_put_that_changes_nothing_writes_no_revision(api: ApiClient) -> None:
    api.put("/api/agents/wren", config())
    again = api.put("/api/agents/wren", config())
    assert again.status_code == 200
    assert again.json()["revision"] == 1
    # A config read with GET can be sent back as it is, revision and all.
    assert api.put("/api/agents/wren", api.get("/api/agents/wren").json()).json()["revision"] == 1
    assert Revision.objects.count() == 1


def test_each_change_writes_the_next_revision_with_its_summary(api: ApiClient) -> None:
    api.put("/api/agents/wren", config())
    changed = config(persona="You are Wren, briefly.")
    answer = api.put("/api/agents/wren", changed)
    assert answer.json()["revision"] == 2
    newest = api.get("/api/agents/wren/revisions").json()["revisions"][0]
    assert newest["revision"] == 2
    assert newest["summary"] == [{"change": "field_changed", "field": "persona"}]
    assert stored_config(Revision.objects.get(number=2)).persona == "You are Wren, briefly."


def test_recording_a_change_reads_no_stored_config_and_locks_the_agent_once(
    api: ApiClient,
) -> None:
    api.put("/api/agents/wren", config())
    with CaptureQueriesContext(connection) as ctx:
        answer = api.put("/api/agents/wren", config(persona="You are Wren, briefly."))
    assert answer.json()["revision"] == 2
    statements = [query["sql"] for query in ctx.captured_queries]
    # The config compared with was parsed when it was written: its text is not read.
    assert not [sql for sql in statements if sql.startswith("SELECT") and "storedconfig" in sql]
    # Proposals are looked for in the same read as the newest revision: none wait.
    assert [sql for sql in statements if "lens_proposal" in sql] == [
        sql for sql in statements if "lens_revision" in sql and "EXISTS" in sql
    ]
    if connection.vendor == "postgresql":
        # The agent's row is locked by the write (its read, then write_config's), and
        # the revision is recorded under that lock without taking it again.
        locks = [sql for sql in statements if sql.startswith('SELECT "lens_agent"')]
        assert sum("FOR UPDATE" in sql for sql in locks) == 2


def test_identical_configs_are_stored_once(api: ApiClient) -> None:
    api.put("/api/agents/wren", config())
    api.put("/api/agents/wren", config(persona="Other."))
    api.put("/api/agents/wren", config())
    api.put("/api/agents/robin", config())
    assert Revision.objects.count() == 4
    assert StoredConfig.objects.count() == 2


def test_if_revision_stores_only_over_the_newest(api: ApiClient) -> None:
    assert api.put("/api/agents/wren", config(if_revision=0)).status_code == 201
    assert api.put("/api/agents/wren", config(persona="A.", if_revision=1)).json()["revision"] == 2
    before = snapshot()
    refused = api.put("/api/agents/wren", config(persona="B.", if_revision=1))
    error = assert_error(refused, 409, "revision_conflict")
    assert error["current_revision"] == 2
    assert snapshot() == before
    # Creating only: 0 refuses an agent that exists.
    assert_error(api.put("/api/agents/wren", config(if_revision=0)), 409, "revision_conflict")
    assert snapshot() == before


@pytest.mark.parametrize("value", [-1, 2**31, "1", 1.5, True])
def test_a_bad_if_revision_is_refused_with_422(api: ApiClient, value: Any) -> None:
    api.put("/api/agents/wren", config())
    before = snapshot()
    assert_error(api.put("/api/agents/wren", config(if_revision=value)), 422, "invalid_request")
    assert snapshot() == before


def test_an_invalid_config_writes_no_revision(api: ApiClient) -> None:
    api.put("/api/agents/wren", config())
    before = snapshot()
    assert_error(api.put("/api/agents/wren", config(routing_spec="telepathy")), 422)
    assert_error(api.put("/api/agents/wren", config(name="")), 422)
    assert snapshot() == before


def test_the_history_pages_newest_first(api: ApiClient) -> None:
    for n in range(5):
        api.put("/api/agents/wren", config(persona=f"Version {n}."))
    first = api.get("/api/agents/wren/revisions?limit=2").json()
    assert [r["revision"] for r in first["revisions"]] == [5, 4]
    assert (first["total"], first["limit"], first["offset"], first["next_offset"]) == (5, 2, 0, 2)
    last = api.get("/api/agents/wren/revisions?limit=2&offset=4").json()
    assert [r["revision"] for r in last["revisions"]] == [1]
    assert last["next_offset"] is None
    assert "config" not in first["revisions"][0]
    for bad in ("limit=0", "limit=201", "offset=-1", f"offset={2**31}"):
        assert_error(api.get(f"/api/agents/wren/revisions?{bad}"), 422)


def test_unknown_revisions_and_agents_are_404(api: ApiClient, other_api: ApiClient) -> None:
    api.put("/api/agents/wren", config())
    assert_error(api.get("/api/agents/wren/revisions/2"), 404, "revision_not_found")
    assert_error(api.get("/api/agents/wren/revisions/2/diff"), 404, "revision_not_found")
    assert_error(api.post("/api/agents/wren/revisions/2/restore"), 404, "revision_not_found")
    assert_error(api.get("/api/agents/wren/revisions/0"), 404, "revision_not_found")
    assert_error(api.get(f"/api/agents/wren/revisions/{2**31}"), 422)
    # Another team's agent is not found, whatever its history.
    for path in ("revisions", "revisions/1", "revisions/1/diff"):
        assert_error(other_api.get(f"/api/agents/wren/{path}"), 404, "agent_not_found")
    assert_error(other_api.post("/api/agents/wren/revisions/1/restore"), 404, "agent_not_found")


def test_anonymous_calls_are_401(api: ApiClient, anon_api: ApiClient) -> None:
    api.put("/api/agents/wren", config())
    assert_error(anon_api.get("/api/agents/wren/revisions"), 401, "unauthorized")
    assert_error(anon_api.post("/api/agents/wren/revisions/1/restore"), 401, "unauthorized")
    assert Revision.objects.count() == 1


def test_a_diff_says_what_changed_in_the_config_and_the_prompt(api: ApiClient) -> None:
    api.put("/api/agents/wren", config())
    api.put("/api/agents/wren", config(persona="You are Wren, briefly."))
    diff = api.get("/api/agents/wren/revisions/2/diff").json()
    assert (diff["from"], diff["to"]) == (1, 2)
    assert diff["summary"] == [{"change": "field_changed", "field": "persona"}]
    assert diff["config_diff"].startswith("--- revision 1\n+++ revision 2\n")
    assert '+  "persona": "You are Wren, briefly.",\n' in diff["config_diff"]
    assert "+You are Wren, briefly.\n" in diff["prompt_diff"]
    assert diff["tokens"]["from"] > diff["tokens"]["to"] > 0
    # The first revision against nothing; any two against each other.
    first = api.get("/api/agents/wren/revisions/1/diff").json()
    assert (first["from"], first["tokens"]["from"]) == (0, 0)
    back = api.get("/api/agents/wren/revisions/1/diff?against=2").json()
    assert (back["from"], back["to"]) == (2, 1)
    assert "-You are Wren, briefly.\n" in back["prompt_diff"]
    same = api.get("/api/agents/wren/revisions/2/diff?against=2").json()
    assert (same["summary"], same["config_diff"], same["prompt_diff"]) == ([], "", "")
    assert_error(api.get("/api/agents/wren/revisions/2/diff?against=3"), 404, "revision_not_found")


def test_restore_writes_a_new_revision_with_the_old_config(api: ApiClient) -> None:
    api.put("/api/agents/wren", config())
    api.put("/api/agents/wren", config(persona="Changed."))
    answer = api.post("/api/agents/wren/revisions/1/restore")
    assert answer.status_code == 201
    restored = answer.json()
    assert (restored["revision"], restored["via"]) == (3, "restore")
    assert restored["summary"] == [{"change": "field_changed", "field": "persona"}]
    assert (
        restored["config_sha256"] == api.get("/api/agents/wren/revisions/1").json()["config_sha256"]
    )
    assert api.get("/api/agents/wren").json()["persona"] == SAMPLE_CONFIG["persona"]
    # Restoring what is already in force changes nothing.
    again = api.post("/api/agents/wren/revisions/3/restore")
    assert (again.status_code, again.json()["revision"]) == (200, 3)
    assert Revision.objects.count() == 3


def test_the_canonical_text_is_what_the_api_answers(api: ApiClient) -> None:
    api.put("/api/agents/wren", config())
    row = Revision.objects.get()
    assert row.config.text == canonical_config(stored_config(row))
    answered = {k: v for k, v in api.get("/api/agents/wren").json().items() if k != "revision"}
    assert json.loads(row.config.text) == answered
