"""The MCP tools end to end (SPEC §12), through the SDK's own client, over stdio and over
streamable HTTP: the catalogue, answers identical to the API's, and every refusal as a
tool error carrying the §8 envelope with the API's code.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from kvstore import store
from kvstore.models import Version
from memory.models import EventKind, MemoryEvent, MemoryRecord
from tests.api_calls import ApiClient, db_snapshot
from tests.web.mcp.harness import TOOL_NAMES, McpTools, Raws, World, row_counts, text_of

pytestmark = pytest.mark.django_db(transaction=True)

VIEW_KEYS = {
    "id",
    "kind",
    "content",
    "tags",
    "label",
    "supersedes",
    "created_at",
    "valid_until",
}


# --- the catalogue --------------------------------------------------------------------


def test_the_server_lists_exactly_the_five_tools_each_described_with_a_schema(
    tools: McpTools,
) -> None:
    listed = {tool.name: tool for tool in tools.list_tools()}
    assert set(listed) == TOOL_NAMES
    for tool in listed.values():
        assert tool.description is not None
        assert len(tool.description) > 200, tool.name  # written for a model, not a label
        assert tool.input_schema["type"] == "object"
    save = listed["memory_save"].input_schema
    assert set(save["properties"]) == {
        "agent",
        "kind",
        "content",
        "tags",
        "label",
        "supersedes",
        "session",
        "valid_until",
    }
    assert "conversation id" in save["properties"]["session"]["description"]
    assert set(save["required"]) == {"agent", "kind", "content"}
    assert set(listed["memory_search"].input_schema["properties"]) == {
        "agent",
        "query",
        "kind",
        "limit",
    }
    assert set(listed["memory_recall"].input_schema["required"]) == {"agent", "message"}
    kv = listed["kv_store"].input_schema
    assert kv["properties"]["command"]["enum"] == ["read", "write", "delete", "list", "history"]
    assert set(kv["properties"]) == {
        "command",
        "id",
        "payload",
        "version",
        "if_version",
        "limit",
        "offset",
    }
    assert set(kv["required"]) == {"command", "id"}
    assert kv["properties"]["limit"]["minimum"] == 1
    assert kv["properties"]["limit"]["maximum"] == 200
    assert listed["kv_bootstrap"].input_schema.get("properties", {}) == {}


# --- memories -------------------------------------------------------------------------


def test_memory_save_saves_and_records_the_token_as_the_actor(
    tools: McpTools, world: World
) -> None:
    answer = tools.ok(
        "memory_save",
        agent="wren",
        kind="profile",
        content="The user's name is Doug.",
        label="name",
        tags=["identity"],
    )
    # Nothing says whether or where the memory was composed.
    assert answer == {"status": "saved", "id": answer["id"]}
    record = MemoryRecord.objects.get(pk=answer["id"])
    assert record.agent == world.agent
    assert (record.kind, record.label, record.tags) == ("profile", "name", ["identity"])
    saved = MemoryEvent.objects.get(record=record, kind=EventKind.SAVED)
    assert saved.actor_token == world.token
    assert saved.actor.startswith(f"token {world.token.prefix}")


def test_memory_save_stores_the_session_and_the_validity_window(
    tools: McpTools, world: World, raws: Raws
) -> None:
    """SPEC §19.1, §19.2 through MCP: ``session`` and ``valid_until`` are stored as the
    API stores them, and the memory's view carries the window."""
    answer = tools.ok(
        "memory_save",
        agent="wren",
        kind="profile",
        content="In Lisbon for a conference this week.",
        label="travel",
        session="chat-1041",
        valid_until="2099-01-31T12:00:00Z",
    )
    assert answer == {"status": "saved", "id": answer["id"]}
    record = MemoryRecord.objects.get(pk=answer["id"])
    assert record.session == "chat-1041"
    assert record.valid_until == datetime(2099, 1, 31, 12, tzinfo=UTC)
    listed = ApiClient(raws.ours).get("/api/agents/wren/memories").json()["memories"]
    (view,) = [view for view in listed if view["id"] == answer["id"]]
    assert datetime.fromisoformat(view["valid_until"]) == record.valid_until
    # No zone: UTC.
    plain = tools.ok(
        "memory_save",
        agent="wren",
        kind="fact",
        content="The upgrade window closes at the end of the quarter.",
        valid_until="2099-03-31T00:00:00",
    )
    assert MemoryRecord.objects.get(pk=plain["id"]).valid_until == datetime(2099, 3, 31, tzinfo=UTC)


def test_a_conflict_is_an_ordinary_result_with_the_existing_memory_and_the_hint(
    tools: McpTools, world: World
) -> None:
    first = tools.ok("memory_save", agent="wren", kind="profile", content="Doug", label="name")
    result = tools.call("memory_save", agent="wren", kind="profile", content="Dan", label="name")
    assert not result.is_error  # an ordinary result: the model needs its hint
    answer = json.loads(text_of(result))
    assert set(answer) == {"status", "existing", "message"}
    assert answer["status"] == "conflict"
    assert set(answer["existing"]) == VIEW_KEYS
    assert answer["existing"]["id"] == first["id"]
    assert answer["existing"]["content"] == "Doug"
    assert "supersede it or use a different label" in answer["message"]
    assert MemoryRecord.objects.filter(agent=world.agent).count() == 1
    # The hint works: superseding the holder saves.
    fixed = tools.ok(
        "memory_save",
        agent="wren",
        kind="profile",
        content="Dan",
        label="name",
        supersedes=first["id"],
    )
    assert fixed["status"] == "saved"
    assert MemoryRecord.objects.get(pk=fixed["id"]).supersedes_id == first["id"]


def test_memory_search_answers_what_the_api_answers(
    tools: McpTools, world: World, raws: Raws
) -> None:
    tea = tools.ok("memory_save", agent="wren", kind="preference", content="Tea, never coffee.")
    tools.ok("memory_save", agent="wren", kind="fact", content="Visited Café Nero in Kraków.")
    tools.ok("memory_save", agent="wren", kind="fact", content="Plays chess on Sundays.")

    answer = tools.ok("memory_search", agent="wren", query="COFFEE cafe")
    assert set(answer) == {"memories", "skipped", "limit", "offset", "next_offset"}
    assert len(answer["memories"]) == 2
    assert all(set(view) == VIEW_KEYS for view in answer["memories"])
    api = ApiClient(raws.ours).get("/api/agents/wren/memories?q=COFFEE%20cafe").json()
    assert answer == api

    only = tools.ok("memory_search", agent="wren", query="coffee cafe", kind="preference")
    assert [view["id"] for view in only["memories"]] == [tea["id"]]
    one = tools.ok("memory_search", agent="wren", query="coffee cafe", limit=1)
    assert (len(one["memories"]), one["limit"], one["next_offset"]) == (1, 1, 1)
    assert tools.ok("memory_search", agent="wren", query="tennis")["memories"] == []


def test_memory_recall_answers_the_recalled_block(
    tools: McpTools, world: World, raws: Raws
) -> None:
    cat = tools.ok("memory_save", agent="wren", kind="fact", content="Adopted a cat named Miso.")
    tools.ok("memory_save", agent="wren", kind="fact", content="Plays chess on Sundays.")
    answer = tools.ok("memory_recall", agent="wren", message="How is Miso doing?")
    assert answer == {
        "text": "### Recalled Memories\n- Adopted a cat named Miso.\n",
        "memory_ids": [cat["id"]],
        "tiers": [
            {"tier": "profile", "memory_ids": []},
            {"tier": "pinned", "memory_ids": []},
            {"tier": "spilled", "memory_ids": []},
            {"tier": "hits", "memory_ids": [cat["id"]]},
        ],
    }
    api = ApiClient(raws.ours).get("/api/agents/wren/recall?message=How%20is%20Miso%20doing%3F")
    assert answer == api.json()


# --- the key/value store --------------------------------------------------------------


def test_every_kv_store_command_answers_what_the_api_answers(
    tools: McpTools, world: World, raws: Raws
) -> None:
    api = ApiClient(raws.ours)
    first = tools.ok("kv_store", command="write", id="must.craft.traps", payload="one\ntwo")
    assert set(first) == {"id", "version", "written_at", "runes"}
    assert (first["id"], first["version"], first["runes"]) == ("must.craft.traps", 1, 7)
    assert first["written_at"].endswith("Z")
    second = tools.ok("kv_store", command="write", id="must.craft.traps", payload="three")
    assert second["version"] == 2
    tools.ok("kv_store", command="write", id="must.crafty", payload="x")
    tools.ok("kv_store", command="write", id="ref.guide", payload="y")

    latest = tools.ok("kv_store", command="read", id="must.craft.traps")
    assert latest == api.get("/api/kv/must.craft.traps").json()
    assert (latest["version"], latest["payload"]) == (2, "three")
    pinned = tools.ok("kv_store", command="read", id="must.craft.traps", version=1)
    assert (pinned["version"], pinned["payload"]) == (1, "one\ntwo")

    history = tools.ok("kv_store", command="history", id="must.craft.traps")
    assert history == api.get("/api/kv/must.craft.traps/history").json()
    assert [v["version"] for v in history["versions"]] == [2, 1]
    assert history["versions"][1]["first_line"] == "one"
    assert history["total_versions"] == 2
    assert "payload" not in history["versions"][0]
    paged = tools.ok("kv_store", command="history", id="must.craft.traps", limit=1, offset=1)
    assert [v["version"] for v in paged["versions"]] == [1]
    assert paged["next_offset"] is None

    listed = tools.ok("kv_store", command="list", id="must.craft")
    assert listed == api.get("/api/kv?prefix=must.craft").json()
    assert [k["id"] for k in listed["keys"]] == ["must.craft.traps", "must.crafty"]
    namespace = tools.ok("kv_store", command="list", id="must.craft.")
    assert [k["id"] for k in namespace["keys"]] == ["must.craft.traps"]
    everything = tools.ok("kv_store", command="list", id="", limit=2)
    assert (everything["total"], everything["next_offset"]) == (3, 2)

    deleted = tools.ok("kv_store", command="delete", id="must.craft.traps")
    assert deleted == {"id": "must.craft.traps", "deleted_versions": 2}
    tools.error("kv_store", "key_not_found", command="read", id="must.craft.traps")
    again = tools.ok("kv_store", command="write", id="must.craft.traps", payload="anew")
    assert again["version"] == 1


def test_if_version_is_compare_and_swap_and_zero_means_only_if_absent(
    tools: McpTools, world: World
) -> None:
    created = tools.ok("kv_store", command="write", id="plan", payload="a", if_version=0)
    assert created["version"] == 1
    error = tools.error(
        "kv_store", "version_conflict", command="write", id="plan", payload="b", if_version=0
    )
    assert error["current_version"] == 1
    assert (
        tools.ok("kv_store", command="write", id="plan", payload="b", if_version=1)["version"] == 2
    )
    before = row_counts()
    error = tools.error(
        "kv_store", "version_conflict", command="write", id="plan", payload="c", if_version=1
    )
    assert error["current_version"] == 2
    assert row_counts() == before
    assert store.read(world.team, "plan").payload == "b"
    absent = tools.error(
        "kv_store", "version_conflict", command="write", id="nothing", payload="c", if_version=3
    )
    assert absent["current_version"] == 0


def test_reading_a_missing_key_or_version_is_an_error(tools: McpTools, world: World) -> None:
    tools.error("kv_store", "key_not_found", command="read", id="root")
    tools.error("kv_store", "key_not_found", command="history", id="root")
    tools.error("kv_store", "key_not_found", command="delete", id="root")
    store.write(world.team, "root", "hello")
    error = tools.error("kv_store", "version_not_found", command="read", id="root", version=2)
    assert error["version"] == 2


def test_kv_bootstrap_answers_what_the_api_answers(
    tools: McpTools, world: World, raws: Raws
) -> None:
    error = tools.error("kv_bootstrap", "key_not_found")
    assert error["key"] == "root"
    store.write(world.team, "root", "Start here.")
    store.write(world.team, "must.a", "A" * 30_000)
    store.write(world.team, "must.b", "B" * 20_000)  # does not fit: named in omitted
    store.write(world.team, "must.c", "C")
    store.write(world.team, "ref.guide", "Guide\nlong text")
    store.write(world.other_team, "must.theirs", "not ours")
    answer = tools.ok("kv_bootstrap")
    assert answer == ApiClient(raws.ours).get("/api/bootstrap").json()
    assert answer["root"] == {"id": "root", "version": 1, "payload": "Start here.", "runes": 11}
    assert [m["id"] for m in answer["must"]] == ["must.a", "must.c"]
    assert answer["omitted"] == ["must.b"]
    assert answer["ref"] == [{"id": "ref.guide", "version": 1, "runes": 15, "first_line": "Guide"}]
    assert (answer["budget"], answer["used"]) == (40_000, 11 + 30_000 + 1)


# --- refusals: tool errors with the API's codes, nothing written ----------------------

LONG = "x" * 36_001  # one code point over the key/value store's limit

REFUSALS: list[tuple[str, str, dict[str, Any]]] = [
    ("invalid_kind", "memory_save", {"agent": "wren", "kind": "Profile", "content": "x"}),
    (
        "invalid_label",
        "memory_save",
        {"agent": "wren", "kind": "profile", "content": "x", "label": "na\nme"},
    ),
    ("invalid_content", "memory_save", {"agent": "wren", "kind": "fact", "content": LONG}),
    ("invalid_content", "memory_save", {"agent": "wren", "kind": "fact", "content": ""}),
    ("invalid_content", "memory_save", {"agent": "wren", "kind": "fact", "content": "a\x00b"}),
    ("invalid_content", "memory_save", {"agent": "wren", "kind": "fact"}),
    (
        "invalid_tags",
        "memory_save",
        {"agent": "wren", "kind": "fact", "content": "x", "tags": [""]},
    ),
    (
        "unknown_supersedes",
        "memory_save",
        {"agent": "wren", "kind": "fact", "content": "x", "supersedes": "nope"},
    ),
    ("agent_not_found", "memory_save", {"agent": "nobody", "kind": "fact", "content": "x"}),
    ("agent_not_found", "memory_save", {"agent": "atlas", "kind": "fact", "content": "x"}),
    ("agent_not_found", "memory_search", {"agent": "atlas", "query": "x"}),
    ("agent_not_found", "memory_recall", {"agent": "atlas", "message": "x"}),
    ("invalid_request", "memory_search", {"agent": "wren", "query": "x", "limit": 0}),
    ("invalid_query", "memory_search", {"agent": "wren", "query": "x" * 4001}),
    ("invalid_message", "memory_recall", {"agent": "wren", "message": "x" * 4001}),
    ("invalid_request", "memory_save", {"agent": "wren", "kind": "fact", "content": "x", "x": 1}),
    (
        "invalid_request",
        "memory_save",
        {"agent": "wren", "kind": "fact", "content": "x", "session": "chat\n7"},
    ),
    (
        "invalid_request",
        "memory_save",
        {"agent": "wren", "kind": "fact", "content": "x", "session": "s" * 129},
    ),
    (
        "invalid_request",
        "memory_save",
        {"agent": "wren", "kind": "fact", "content": "x", "session": ""},
    ),
    (
        "invalid_valid_until",
        "memory_save",
        {"agent": "wren", "kind": "fact", "content": "x", "valid_until": "2001-01-01T00:00:00Z"},
    ),
    (
        "invalid_valid_until",
        "memory_save",
        {"agent": "wren", "kind": "fact", "content": "x", "valid_until": "next tuesday"},
    ),
    ("payload_too_large", "kv_store", {"command": "write", "id": "root", "payload": LONG}),
    ("invalid_key", "kv_store", {"command": "write", "id": "a/b", "payload": "x"}),
    ("invalid_key", "kv_store", {"command": "read", "id": "must..craft"}),
    ("invalid_key", "kv_store", {"command": "write", "id": "", "payload": "x"}),
    ("invalid_request", "kv_store", {"command": "upsert", "id": "root", "payload": "x"}),
    ("invalid_request", "kv_store", {"command": "write", "id": "root"}),
    ("invalid_request", "kv_store", {"command": "write", "id": "root", "payload": 5}),
    ("invalid_request", "kv_store", {"command": "write", "id": "root", "payload": "a\x00"}),
    (
        "invalid_request",
        "kv_store",
        {"command": "write", "id": "root", "payload": "x", "if_version": -1},
    ),
    (
        "invalid_request",
        "kv_store",
        {"command": "write", "id": "root", "payload": "x", "version": 1},
    ),
    ("invalid_request", "kv_store", {"command": "read", "id": "root", "payload": "x"}),
    ("invalid_request", "kv_store", {"command": "read", "id": "root", "version": 0}),
    ("invalid_request", "kv_store", {"command": "list", "id": "", "limit": 201}),
    ("invalid_request", "kv_store", {"command": "history", "id": "root", "offset": -1}),
    ("invalid_request", "kv_bootstrap", {"force": True}),
    ("invalid_request", "memory_delete", {"agent": "wren"}),
]


def test_every_refusal_is_a_tool_error_with_the_api_code_and_writes_nothing(
    tools: McpTools, world: World, subtests: pytest.Subtests
) -> None:
    before = db_snapshot()
    counts = row_counts()
    for index, (code, tool, arguments) in enumerate(REFUSALS):
        with subtests.test(msg=f"{index}: {tool} {code}"):
            tools.error(tool, code, **arguments)
            assert row_counts() == counts
    assert db_snapshot() == before


def test_limits_come_with_the_numbers(tools: McpTools, world: World) -> None:
    error = tools.error("kv_store", "payload_too_large", command="write", id="root", payload=LONG)
    assert (error["limit"], error["runes"]) == (36_000, 36_001)
    assert "36000" in error["message"]
    assert "36001" in error["message"]
    # Exactly at the limit is fine.
    written = tools.ok("kv_store", command="write", id="root", payload="é" * 36_000)
    assert written["runes"] == 36_000
    error = tools.error("memory_save", "invalid_content", agent="wren", kind="fact", content=LONG)
    assert error["errors"] == [{"loc": "content", "message": error["errors"][0]["message"]}]
    assert "10000" in error["message"]


def test_an_unknown_command_is_refused_by_the_schema(tools: McpTools, world: World) -> None:
    error = tools.error("kv_store", "invalid_request", command="upsert", id="root", payload="x")
    assert error["errors"][0]["loc"] == "command"
    for command in ("read", "write", "delete", "list", "history"):
        assert f"'{command}'" in error["message"]
    assert not Version.objects.exists()
