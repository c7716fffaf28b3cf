"""Over stdio, a line that is not a JSON-RPC message is answered with a JSON-RPC error
at once (SPEC §12), as over HTTP, instead of leaving the client to its own timeout; the
server keeps serving afterwards. ``manage.py mcp`` runs as a subprocess, spoken to
line by line.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import IO, Any

import pytest
from mcp_types import jsonrpc_message_adapter
from pydantic import ValidationError

from kvstore.models import Key
from tests.web.mcp.harness import ROOT, Raws, World, server_env
from web.mcp.stdio import error_for

STARTUP = 30  # seconds: the first answer also waits for Django and the SDK to load
ANSWER = 5  # seconds any later answer may take

PARSE_ERROR, INVALID_REQUEST = -32700, -32600
SURROGATE = "\\ud800"  # the escape itself, as a client would write it in JSON text


class Wire:
    """``manage.py mcp`` over stdio: lines written to it, answers read with a timeout."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.answers: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, args=(process.stdout,), daemon=True).start()

    def _read(self, stdout: IO[bytes]) -> None:
        for line in stdout:
            self.answers.put(line)

    def send(self, line: str | bytes) -> None:
        assert self.process.stdin is not None
        data = line.encode() if isinstance(line, str) else line
        self.process.stdin.write(data + b"\n")
        self.process.stdin.flush()

    def answer(self, timeout: float = ANSWER) -> dict[str, Any]:
        try:
            line = self.answers.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no answer within {timeout} s") from None
        found: dict[str, Any] = json.loads(line)
        return found

    def request(
        self, request_id: int, method: str, params: dict[str, Any], timeout: float = ANSWER
    ) -> dict[str, Any]:
        self.send(
            json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        )
        return self.answer(timeout)

    def nothing_more(self) -> None:
        assert self.answers.empty(), self.answers.get()


def rpc_error(answer: dict[str, Any], code: int, request_id: int | str | None) -> str:
    assert set(answer) == {"jsonrpc", "id", "error"}, answer
    assert answer["jsonrpc"] == "2.0"
    assert answer["id"] == request_id, answer
    assert answer["error"]["code"] == code, answer
    message = answer["error"]["message"]
    assert isinstance(message, str)
    assert message.strip()
    return message


@pytest.fixture
def wire(mcp_database: str, world: World, raws: Raws) -> Iterator[Wire]:
    process = subprocess.Popen(
        [sys.executable, "manage.py", "mcp"],
        cwd=ROOT,
        env=server_env(mcp_database, LENS_TOKEN=raws.ours),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield Wire(process)
    finally:
        assert process.stdin is not None
        process.stdin.close()  # end of input: the server stops
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def initialize(wire: Wire) -> None:
    answer = wire.request(
        1,
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
        timeout=STARTUP,
    )
    assert "result" in answer, answer
    wire.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))


@pytest.mark.django_db(transaction=True)
def test_a_line_that_is_not_json_gets_a_parse_error_and_serving_goes_on(wire: Wire) -> None:
    wire.send("not json")
    message = rpc_error(wire.answer(STARTUP), PARSE_ERROR, None)
    assert message.startswith("Parse error")
    initialize(wire)
    tools = wire.request(2, "tools/list", {})["result"]["tools"]
    assert {tool["name"] for tool in tools} >= {"kv_store", "kv_bootstrap"}


@pytest.mark.django_db(transaction=True)
def test_every_kind_of_unreadable_line_is_answered_in_turn(wire: Wire, world: World) -> None:
    cases: list[tuple[str, int, int | str | None]] = [
        ("not json", PARSE_ERROR, None),
        ('{"jsonrpc": "2.0", "id": 3, "method": "tools/list"', PARSE_ERROR, None),  # cut short
        ("{'single': 'quotes'}", PARSE_ERROR, None),
        ("[" * 100_000, PARSE_ERROR, None),  # deeper than either parser goes
        (
            '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"' + SURROGATE + '"}}',
            INVALID_REQUEST,
            1,
        ),
        (
            '{"jsonrpc":"2.0","id":"s-1","method":"tools/call","params":{"name":"kv_store",'
            '"arguments":{"command":"write","id":"k","payload":"a' + SURROGATE + 'b"}}}',
            INVALID_REQUEST,
            "s-1",
        ),
        (
            '{"jsonrpc":"2.0","method":"x","params":{"y":"' + SURROGATE + '"}}',
            INVALID_REQUEST,
            None,
        ),
        ('{"jsonrpc":"2.0","id":true,"method":"x","p":"' + SURROGATE + '"}', INVALID_REQUEST, None),
        ("[1, 2]", INVALID_REQUEST, None),
        ('{"id": 5, "foo": 1}', INVALID_REQUEST, None),
        ("42", INVALID_REQUEST, None),
    ]
    for number, (line, code, request_id) in enumerate(cases):
        wire.send(line)
        answer = wire.answer(STARTUP if number == 0 else ANSWER)
        rpc_error(answer, code, request_id)
    assert not Key.objects.filter(team=world.team).exists()  # the refused write did nothing
    # A blank line needs no answer; the next request is answered as usual.
    wire.send("")
    wire.send("   ")
    initialize(wire)
    written = wire.request(
        4,
        "tools/call",
        {"name": "kv_store", "arguments": {"command": "write", "id": "k", "payload": "ok"}},
    )
    assert written["result"]["isError"] is False, written
    assert json.loads(written["result"]["content"][0]["text"])["version"] == 1
    wire.nothing_more()


@pytest.mark.django_db(transaction=True)
def test_invalid_utf8_bytes_are_read_as_replacement_characters(wire: Wire) -> None:
    # The transport decodes with errors="replace": such a line is JSON after all.
    initialize(wire)
    line = json.dumps({"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {}})
    wire.send(line.replace("{}", '{"x": "_"}').encode().replace(b"_", b"\xff\xfe"))
    assert wire.answer()["id"] == 8


@pytest.mark.parametrize(
    ("line", "code", "request_id"),
    [
        ("not json", PARSE_ERROR, None),
        (
            '{"jsonrpc":"2.0","id":7,"method":"m","params":{"x":"' + SURROGATE + '"}}',
            INVALID_REQUEST,
            7,
        ),
        (
            '{"jsonrpc":"2.0","id":7,"method":"m","params":{"x":"\\udc00\\ud800"}}',
            INVALID_REQUEST,
            7,
        ),
        ("[1]", INVALID_REQUEST, None),
    ],
)
def test_error_for_each_refusal(line: str, code: int, request_id: int | None) -> None:
    """The same answers, without a process: what the SDK's parse raises, answered."""
    with pytest.raises(ValidationError) as raised:
        jsonrpc_message_adapter.validate_json(line, by_name=False)
    answer = error_for(raised.value)
    assert answer is not None
    assert (answer.id, answer.error.code) == (request_id, code)


def test_a_blank_line_needs_no_answer() -> None:
    with pytest.raises(ValidationError) as raised:
        jsonrpc_message_adapter.validate_json(" \n", by_name=False)
    assert error_for(raised.value) is None
