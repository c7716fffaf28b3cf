"""A single tool call over streamable HTTP (``web.mcp.call_front``) is answered as
the SDK's own session answers it: for every request below, the server with the front
and the server without it (``MCP_FRONT=0``) give the same status, headers and bytes (for
a write, the same answer but for its time and id, and the same rows), and the front
answers the ones it is meant to, and only those.

Both servers run in this process on one event loop (a thread of the test's), each with
its own pools of threads, against the test database.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest
from anyio.from_thread import BlockingPortal
from django.db import connection
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from kvstore import store
from kvstore.core.keys import PAYLOAD_MAX_RUNES
from kvstore.models import Key
from lens.models import AuditEvent
from memory.models import MemoryRecord
from tests.web.mcp.harness import Raws, World, row_counts, tools_call
from web.mcp import MCP_PATH, operations
from web.mcp.call_front import CallFront
from web.mcp.kv_read_front import KvReadFront
from web.mcp.tools import http_app

pytestmark = pytest.mark.django_db(transaction=True)

BASE = "http://127.0.0.1:8000"
JSON_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-06-18",
}


@dataclass(frozen=True)
class Answer:
    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class Servers:
    portal: BlockingPortal
    front: httpx2.AsyncClient
    sdk: httpx2.AsyncClient
    call_front: CallFront
    read_front: KvReadFront

    @property
    def answered(self) -> int:
        """How many calls the two fronts answered themselves."""
        return self.call_front.answered + self.read_front.answered

    def _post(self, client: httpx2.AsyncClient, body: bytes, headers: dict[str, str]) -> Answer:
        async def post() -> httpx2.Response:
            return await client.post(MCP_PATH, content=body, headers=headers)

        response = self.portal.call(post)
        return Answer(response.status_code, sorted(response.headers.items()), response.content)

    def one(self, message: Any, headers: dict[str, str], *, front: bool = True) -> Answer:
        body = message if isinstance(message, bytes) else json.dumps(message).encode()
        return self._post(self.front if front else self.sdk, body, headers)

    def both(self, message: Any, raw: str, **headers: str) -> tuple[Answer, Answer, bool]:
        """The answer without the front, the answer with it, and whether it gave it."""
        sent = {**JSON_HEADERS, "Authorization": f"Bearer {raw}", **headers}
        sent = {name: value for name, value in sent.items() if value}
        alone = self.one(message, sent, front=False)
        before = self.answered
        answer = self.one(message, sent)
        return alone, answer, self.answered == before + 1


@asynccontextmanager
async def _client(front: bool) -> AsyncIterator[tuple[httpx2.AsyncClient, Any]]:
    app = http_app("127.0.0.1", 8000, front=front)
    async with app.router.lifespan_context(app):
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url=BASE) as client:
            del client.headers["accept"]  # each request says what it accepts, or nothing
            yield client, app


@asynccontextmanager
async def _servers() -> AsyncIterator[
    tuple[httpx2.AsyncClient, httpx2.AsyncClient, CallFront, KvReadFront]
]:
    async with _client(True) as (front, app), _client(False) as (sdk, _):
        yield front, sdk, app.state.call_front, app.state.kv_read_front


@pytest.fixture(scope="module")
def servers(portal: BlockingPortal, django_db_blocker: Any) -> Iterator[Servers]:
    # The servers' threads open their own connections: closed after each call (as the
    # served process's pool does), so none outlives the test database.
    settings = connection.settings_dict
    kept = settings["CONN_MAX_AGE"]
    settings["CONN_MAX_AGE"] = 0
    try:
        with (
            django_db_blocker.unblock(),
            portal.wrap_async_context_manager(_servers()) as (
                front,
                sdk,
                call_front,
                read_front,
            ),
        ):
            yield Servers(portal, front, sdk, call_front, read_front)
    finally:
        settings["CONN_MAX_AGE"] = kept


@pytest.fixture
def filled(world: World) -> World:
    store.write(world.team, "must.tone", "Plain words, short sentences.")
    store.write(world.team, "must.tone", "Plain words ☃ \U0001f600, short sentences.")
    store.write(world.other_team, "must.theirs", "secret")
    return world


def same(alone: Answer, answer: Answer) -> None:
    assert answer.status == alone.status, answer.body
    assert answer.headers == alone.headers
    assert answer.body == alone.body


def read(key: str, **more: Any) -> dict[str, Any]:
    return tools_call("kv_store", {"command": "read", "id": key, **more})


def with_params(**params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}


# Each one the front answers: a result, a tool error, or a JSON-RPC error.
ANSWERED: list[tuple[str, Any, dict[str, str]]] = [
    ("read", read("must.tone"), {}),
    ("an older version", read("must.tone", version=1), {}),
    ("a missing key", read("must.none"), {}),
    ("a missing version", read("must.tone", version=9), {}),
    ("another team's key", read("must.theirs"), {}),
    ("history", tools_call("kv_store", {"command": "history", "id": "must.tone"}), {}),
    ("bootstrap", tools_call("kv_bootstrap", {}), {}),
    ("search", tools_call("memory_search", {"agent": "wren", "query": "tone"}), {}),
    ("recall", tools_call("memory_recall", {"agent": "wren", "message": "hello"}), {}),
    ("another team's agent", tools_call("memory_search", {"agent": "atlas", "query": "x"}), {}),
    ("an unknown tool", tools_call("kv_delete", {"id": "must.tone"}), {}),
    ("an unknown argument", read("must.tone", colour="red"), {}),
    ("a wrong type", read("must.tone", version="first"), {}),
    ("a version out of range", read("must.tone", version=0), {}),
    ("a missing argument", tools_call("kv_store", {"id": "must.tone"}), {}),
    ("no arguments at all", with_params(name="kv_bootstrap"), {}),
    ("a NUL", read("must.\x00"), {}),
    ("a name that is not text", with_params(name=5, arguments={}), {}),
    ("arguments that are not an object", with_params(name="kv_store", arguments=[1]), {}),
    ("no params", {"jsonrpc": "2.0", "id": 7, "method": "tools/call"}, {}),
    ("a progress token", with_params(name="kv_bootstrap", _meta={"progressToken": "p"}), {}),
    ("a string id", {**read("must.tone"), "id": "call-α"}, {}),
    ("a large id", {**read("must.tone"), "id": 2**62}, {}),
    ("a negative id", {**read("must.tone"), "id": -1}, {}),
    ("no protocol version", read("must.tone"), {"MCP-Protocol-Version": ""}),
    *[
        (f"version {v}", read("must.tone"), {"MCP-Protocol-Version": v})
        for v in HANDSHAKE_PROTOCOL_VERSIONS
    ],
    ("JSON only accepted", read("must.tone"), {"Accept": "application/json"}),
    ("anything accepted", read("must.tone"), {"Accept": "*/*"}),
    ("a charset", read("must.tone"), {"Content-Type": "application/json; charset=utf-8"}),
    ("a local origin", read("must.tone"), {"Origin": "http://localhost:3000"}),
    (
        "spaces in the body",
        b' { "jsonrpc" : "2.0", "id": 3, "method": "tools/call", "params": {"name": "kv_bootstrap"} } ',
        {},
    ),  # fmt: skip
]


@pytest.mark.parametrize(("why", "message", "headers"), ANSWERED, ids=[c[0] for c in ANSWERED])
def test_the_front_answers_as_the_session_does(
    servers: Servers, raws: Raws, filled: World, why: str, message: Any, headers: dict[str, str]
) -> None:
    before = row_counts()
    alone, answer, by_front = servers.both(message, raws.ours, **headers)
    same(alone, answer)
    assert answer.status == 200
    assert by_front
    assert row_counts() == before


def test_the_answers_checked_are_results_tool_errors_and_protocol_errors(
    servers: Servers, raws: Raws, filled: World
) -> None:
    """The cases above are not all one kind of answer."""
    kinds = set()
    for _why, message, headers in ANSWERED:
        _alone, answer, _ = servers.both(message, raws.ours, **headers)
        reply = answer.json()
        if "error" in reply:
            kinds.add("protocol error")
        else:
            kinds.add("tool error" if reply["result"].get("isError") else "result")
    assert kinds == {"result", "tool error", "protocol error"}


def test_a_crash_in_a_tool_is_answered_alike_and_logged(
    servers: Servers, raws: Raws, filled: World, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    def crash(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("the disk is on fire")

    monkeypatch.setattr(operations, "kv_bootstrap", crash)
    alone, answer, by_front = servers.both(tools_call("kv_bootstrap", {}), raws.ours)
    same(alone, answer)
    assert by_front
    assert "the disk is on fire" not in answer.body.decode()
    assert answer.json()["result"]["isError"] is True
    crashes = [r for r in caplog.records if r.getMessage() == "MCP tool 'kv_bootstrap' failed"]
    assert len(crashes) == 2  # once by each server
    assert all(r.exc_info for r in crashes)


# Of those, the ones the key/value read front answers in one statement
# (``web.mcp.kv_read_front``); ``CallFront`` answers the others.
READ_FRONT = {
    "read",
    "an older version",
    "a missing key",
    "a missing version",
    "another team's key",
    "a string id",
    "a large id",
    "a negative id",
    "no protocol version",
    *(f"version {v}" for v in HANDSHAKE_PROTOCOL_VERSIONS),
    "JSON only accepted",
    "anything accepted",
    "a charset",
    "a local origin",
}


def test_the_read_front_answers_the_plain_reads_and_leaves_the_rest(
    servers: Servers, raws: Raws, filled: World
) -> None:
    answered = set()
    for why, message, headers in ANSWERED:
        before = servers.read_front.answered
        servers.both(message, raws.ours, **headers)
        if servers.read_front.answered > before:
            answered.add(why)
    assert answered == READ_FRONT


# Reads the read front leaves to the server, answered alike all the same.
READS_LEFT: list[tuple[str, Any, dict[str, str]]] = [
    ("a null version", read("must.tone", version=None), {}),
    ("a version as text", read("must.tone", version="1"), {}),
    ("a version as a float", read("must.tone", version=1.0), {}),
    ("a version as a boolean", read("must.tone", version=True), {}),
    ("a version too large", read("must.tone", version=2**31), {}),
    ("an invalid key", read("Must Tone"), {}),
    ("a key with a slash", read("must/tone"), {}),
    ("a key that is not text", tools_call("kv_store", {"command": "read", "id": 5}), {}),
    ("a payload beside", read("must.tone", payload="x"), {}),
    ("another command", tools_call("kv_store", {"command": "list", "id": "must."}), {}),
    (
        "a progress token",
        {
            **read("must.tone"),
            "params": {**read("must.tone")["params"], "_meta": {"progressToken": 1}},
        },
        {},
    ),
    ("lowercase bearer", read("must.tone"), {"Authorization": "__LOWER__"}),
]


@pytest.mark.parametrize(("why", "message", "headers"), READS_LEFT, ids=[c[0] for c in READS_LEFT])
def test_reads_the_read_front_leaves_are_answered_alike(
    servers: Servers, raws: Raws, filled: World, why: str, message: Any, headers: dict[str, str]
) -> None:
    if headers.get("Authorization") == "__LOWER__":
        headers = {"Authorization": f"bearer {raws.ours}"}
    before = servers.read_front.answered
    alone, answer, _ = servers.both(message, "" if headers else raws.ours, **headers)
    same(alone, answer)
    assert answer.status == 200
    if why == "lowercase bearer":
        assert servers.read_front.answered == before + 1  # the SDK takes any case too
    else:
        assert servers.read_front.answered == before


def test_a_read_with_a_token_that_is_not_live_is_refused_by_the_server(
    servers: Servers, raws: Raws, filled: World
) -> None:
    filled_token = raws.ours
    before = servers.read_front.answered
    for raw in ("cl_" + "A" * 43, " ", filled_token + " "):
        alone, answer, _ = servers.both(read("must.tone"), raw)
        same(alone, answer)
        assert answer.status == 401
    assert servers.read_front.answered == before


def test_a_database_error_during_a_read_leaves_it_to_the_server(
    servers: Servers, raws: Raws, filled: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []

    def failing(*args: Any) -> None:
        calls.append(args)
        raise RuntimeError("the database went away")

    monkeypatch.setattr(store, "read_as", failing)
    alone, answer, _ = servers.both(read("must.tone"), raws.ours)
    same(alone, answer)
    assert answer.json()["result"]["isError"] is False
    assert len(calls) == 1


# Each one the SDK's session answers (or what stands before it), the front untouched.
LEFT: list[tuple[str, Any, dict[str, str]]] = [
    ("list tools", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {}),
    ("ping", {"jsonrpc": "2.0", "id": 1, "method": "ping"}, {}),
    ("read a resource", {"jsonrpc": "2.0", "id": 1, "method": "resources/list"}, {}),
    (
        "complete a slug",
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "completion/complete",
            "params": {
                "ref": {"type": "ref/prompt", "name": "agent_system_prompt"},
                "argument": {"name": "agent", "value": "w"},
            },
        },
        {},
    ),  # fmt: skip
    (
        "set the log level",
        {"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "info"}},
        {},
    ),
    (
        "an unknown log level",
        {"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "loud"}},
        {},
    ),
    (
        "initialize",
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        {},
    ),  # fmt: skip
    ("a notification", {"jsonrpc": "2.0", "method": "notifications/initialized"}, {}),
    ("a batch", [read("must.tone")], {}),
    ("a response", {"jsonrpc": "2.0", "id": 1, "result": {}}, {}),
    ("not JSON", b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call"', {}),
    ("not JSON-RPC", {"id": 1, "method": "tools/call"}, {}),
    ("an id that is not one", {**read("must.tone"), "id": 1.5}, {}),
    ("a null id", {**read("must.tone"), "id": None}, {}),
    ("an empty body", b"", {}),
    # JSON's parser in the SDK refuses an escaped lone surrogate: a parse error.
    ("a lone surrogate", read("must.\ud800"), {}),
    ("not UTF-8", b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "x": "\xff"}', {}),
    ("plain text", read("must.tone"), {"Content-Type": "text/plain"}),
    ("no content type", read("must.tone"), {"Content-Type": ""}),
    ("events only accepted", read("must.tone"), {"Accept": "text/event-stream"}),
    ("nothing accepted", read("must.tone"), {"Accept": ""}),
    ("another host", read("must.tone"), {"Host": "evil.example"}),
    ("another origin", read("must.tone"), {"Origin": "http://evil.example"}),
    ("a newer version", read("must.tone"), {"MCP-Protocol-Version": "2026-07-28"}),
    ("an unknown version", read("must.tone"), {"MCP-Protocol-Version": "1999-01-01"}),
]


@pytest.mark.parametrize(("why", "message", "headers"), LEFT, ids=[c[0] for c in LEFT])
def test_the_front_leaves_everything_else_to_the_session(
    servers: Servers, raws: Raws, filled: World, why: str, message: Any, headers: dict[str, str]
) -> None:
    before = row_counts()
    alone, answer, by_front = servers.both(message, raws.ours, **headers)
    same(alone, answer)
    assert not by_front
    assert row_counts() == before


UNISSUED = "Bearer cl_" + "A" * 43


@pytest.mark.parametrize(
    ("padding", "headers", "status"),
    [
        (0, {"Authorization": ""}, 401),
        (0, {"Authorization": UNISSUED}, 401),
        (5_000_000, {}, 413),  # over the SDK's 4 MiB body limit
    ],
    ids=["no token", "an unknown token", "a body over the limit"],
)
def test_what_is_refused_before_the_front_never_reaches_it(
    servers: Servers, raws: Raws, filled: World, padding: int, headers: dict[str, str], status: int
) -> None:
    # The padding is built here, not at collection, so only this case pays for it.
    message = read("must.tone", **({"payload": "x" * padding} if padding else {}))
    alone, answer, by_front = servers.both(message, raws.ours, **headers)
    same(alone, answer)
    assert answer.status == status
    assert not by_front


def test_a_duplicated_version_header_is_left_to_the_session(
    servers: Servers, raws: Raws, filled: World
) -> None:
    headers = [
        (b"content-type", b"application/json"),
        (b"accept", b"application/json"),
        (b"authorization", f"Bearer {raws.ours}".encode()),
        (b"mcp-protocol-version", b"2025-06-18"),
        (b"mcp-protocol-version", b"2025-06-18"),
    ]
    body = json.dumps(read("must.tone")).encode()
    before = servers.answered

    async def post(client: httpx2.AsyncClient) -> httpx2.Response:
        return await client.post(MCP_PATH, content=body, headers=headers)

    alone = servers.portal.call(post, servers.sdk)
    answer = servers.portal.call(post, servers.front)
    assert (answer.status_code, answer.content) == (alone.status_code, alone.content)
    assert servers.answered == before


# --- writes: the same answer but for its time and id, and the same rows ---------------

TIMES = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


def masked(answer: Answer) -> tuple[int, list[tuple[str, str]], Any]:
    """The answer with the tool's answer parsed, its ids and times masked: what two
    writes of the same thing share."""
    reply = answer.json()
    for part in reply["result"]["content"]:
        tool_answer = json.loads(part["text"])
        if isinstance(tool_answer.get("id"), str) and "status" in tool_answer:
            tool_answer["id"] = "<memory id>"
        part["text"] = TIMES.sub("<time>", json.dumps(tool_answer))
    headers = [(k, v) for k, v in answer.headers if k != "content-length"]
    return answer.status, headers, reply


def write(key: str, payload: str, **more: Any) -> dict[str, Any]:
    return tools_call("kv_store", {"command": "write", "id": key, "payload": payload, **more})


def twice(servers: Servers, raw: str, message: Any, undo: Any) -> tuple[Answer, Answer, bool]:
    """``message`` through the session, ``undo()``, then through the front: each starts
    from the same rows."""
    headers = {**JSON_HEADERS, "Authorization": f"Bearer {raw}"}
    alone = servers.one(message, headers, front=False)
    undo()
    before = servers.answered
    answer = servers.one(message, headers)
    return alone, answer, servers.answered == before + 1


def test_a_write_is_answered_alike_and_writes_alike(
    servers: Servers, raws: Raws, filled: World
) -> None:
    message = write("must.new", "First words.")
    audit_before = AuditEvent.objects.count()
    alone, answer, by_front = twice(
        servers, raws.ours, message, lambda: Key.objects.filter(key="must.new").delete()
    )
    assert by_front
    assert masked(answer) == masked(alone)
    assert answer.json()["result"]["isError"] is False
    assert store.read(filled.team, "must.new").payload == "First words."
    assert AuditEvent.objects.count() == audit_before + 2  # one for each write


@pytest.mark.parametrize(
    ("why", "message"),
    [
        ("a conflict", write("must.tone", "Later.", if_version=1)),
        ("over the cap", write("must.tone", "x" * (PAYLOAD_MAX_RUNES + 1))),
        ("an invalid key", write("Must Tone", "words")),
    ],
)
def test_a_refused_write_is_answered_alike_and_changes_nothing(
    servers: Servers, raws: Raws, filled: World, why: str, message: Any
) -> None:
    before = row_counts()
    alone, answer, by_front = servers.both(message, raws.ours)
    same(alone, answer)
    assert by_front
    assert answer.json()["result"]["isError"] is True
    assert row_counts() == before


def test_a_saved_memory_is_answered_alike(servers: Servers, raws: Raws, filled: World) -> None:
    content = "The user's name is Quillon."
    message = tools_call("memory_save", {"agent": "wren", "kind": "profile", "content": content})
    alone, answer, by_front = twice(
        servers, raws.ours, message, lambda: MemoryRecord.objects.all().delete()
    )
    assert by_front
    assert masked(answer) == masked(alone)
    assert list(MemoryRecord.objects.values_list("content", flat=True)) == [content]
