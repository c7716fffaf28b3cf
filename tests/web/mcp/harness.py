"""Driving ``manage.py mcp`` from tests: the team and tokens it serves, the test
database's URL for the server process, the SDK's own clients (stdio and streamable
HTTP) behind a blocking portal, and raw HTTP for what must be refused before MCP.

The server runs in a subprocess against the test database, so tests that use it
commit their data (``django_db(transaction=True)``); the database is emptied after
each test, so every test builds the same world again with the same raw tokens.
"""

from __future__ import annotations

import functools
import json
import os
import re
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import quote

import httpx2
from anyio.from_thread import BlockingPortal
from django.db import connection
from mcp import Client, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import (
    CallToolResult,
    CompleteResult,
    Completion,
    EmptyResult,
    GetPromptResult,
    ListResourcesResult,
    LoggingLevel,
    Prompt,
    PromptReference,
    ReadResourceResult,
    ResourceTemplate,
    ResourceTemplateReference,
    ServerCapabilities,
    Tool,
)

from kvstore.models import Key, Version
from lens.models import Agent, ApiToken, Team, hash_token
from memory.models import MemoryEvent, MemoryRecord, Promotion
from tests.factories import create_agent, memory_config

ROOT = Path(__file__).resolve().parents[3]  # tests/web/mcp/ -> the project
TOOL_NAMES = {"memory_save", "memory_search", "memory_recall", "kv_store", "kv_bootstrap"}
TIMEOUT = 60  # seconds any one step may take before the test fails instead of hanging


# --- the world the server serves ------------------------------------------------------


@dataclass(frozen=True)
class Raws:
    """The raw API tokens of our team and of another one, fixed for a test module."""

    ours: str
    theirs: str


def new_raw() -> str:
    return "cl_" + secrets.token_urlsafe(32)


@dataclass(frozen=True)
class World:
    team: Team
    token: ApiToken
    agent: Agent  # wren, routed by user-background (profile: auto, preference: guarded)
    other_team: Team
    other_token: ApiToken
    other_agent: Agent  # atlas, of the other team


def _team_with_token(slug: str, raw: str) -> tuple[Team, ApiToken]:
    team, _ = Team.objects.get_or_create(slug=slug, defaults={"name": slug.title()})
    token = ApiToken.objects.filter(digest=hash_token(raw)).first()
    if token is None:
        token = ApiToken.objects.create(team=team, prefix=raw[:10], digest=hash_token(raw))
    return team, token


def ensure_world(raws: Raws) -> World:
    """Our team (acme) with wren, another team (globex) with atlas, and a token each
    whose raw values are ``raws``; idempotent."""
    team, token = _team_with_token("acme", raws.ours)
    other_team, other_token = _team_with_token("globex", raws.theirs)
    return World(
        team=team,
        token=token,
        agent=create_agent(team, "wren", memory_config()),
        other_team=other_team,
        other_token=other_token,
        other_agent=create_agent(other_team, "atlas", memory_config(name="Atlas")),
    )


def row_counts() -> dict[str, int]:
    """What a refused call must leave unchanged."""
    models = (Key, Version, MemoryRecord, MemoryEvent, Promotion)
    return {model.__name__: model.objects.count() for model in models}


# --- the server process ---------------------------------------------------------------


def database_url() -> str:
    """The test database (set up by pytest-django) as a ``DATABASE_URL``."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{Path(db['NAME']).resolve()}"
    user = quote(db.get("USER") or "", safe="")
    password = f":{quote(db['PASSWORD'], safe='')}" if db.get("PASSWORD") else ""
    host = db.get("HOST") or "127.0.0.1"
    port = db.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{db['NAME']}"


def server_env(database: str, **extra: str) -> dict[str, str]:
    """The environment of a ``manage.py mcp`` process: this one's, on the test database."""
    env = {k: v for k, v in os.environ.items() if k not in ("LENS_TOKEN", "SECRET_KEY")}
    env.update(DEBUG="1", DATABASE_URL=database, **extra)
    return env


def manage_mcp(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``manage.py mcp`` to its end with nothing on stdin."""
    return subprocess.run(
        [sys.executable, "manage.py", "mcp", *args],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def stdio_params(database: str, raw: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "mcp"],
        cwd=ROOT,
        env={"DEBUG": "1", "DATABASE_URL": database, "LENS_TOKEN": raw},
    )


def stdio_session(params: StdioServerParameters, errlog: TextIO, mode: str = "auto") -> Client:
    """The SDK's client over stdio, spawning the server (its stderr to ``errlog``);
    ``mode`` as for ``http_session``."""
    transport = stdio_client(params, errlog=errlog)
    return Client(transport, read_timeout_seconds=TIMEOUT, mode=mode)


URL_LINE = re.compile(r"MCP server on (http://\S+/mcp)")


def start_http_server(database: str, log: Path, **env: str) -> tuple[subprocess.Popen[bytes], str]:
    """``manage.py mcp --http 127.0.0.1:0`` (a free port) and the URL it announces;
    ``env``: more of its environment."""
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "mcp", "--http", "127.0.0.1:0"],
            cwd=ROOT,
            env=server_env(database, **env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        if found := URL_LINE.search(log.read_text(errors="replace")):
            return process, found.group(1)
        if process.poll() is not None:
            break
        time.sleep(0.05)
    process.kill()
    raise AssertionError(f"the MCP HTTP server did not start:\n{log.read_text()}")


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@asynccontextmanager
async def http_session(url: str, raw: str, mode: str = "auto") -> AsyncIterator[Client]:
    """The SDK's streamable HTTP client, sending ``raw`` as the bearer token; ``mode``
    "auto" speaks the newest protocol the server does (one self-contained request per
    call), "legacy" opens with the initialize handshake, as most clients still do."""
    headers = {"Authorization": f"Bearer {raw}"}
    async with httpx2.AsyncClient(headers=headers, timeout=TIMEOUT) as http:
        transport = streamable_http_client(url, http_client=http)
        client = Client(transport, read_timeout_seconds=TIMEOUT, mode=mode)
        async with client:
            yield client


def raw_post(url: str, body: dict[str, Any], authorization: str | None) -> tuple[int, str]:
    """POST a JSON-RPC message with plain HTTP; the status and the body."""
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if authorization is not None:
        headers["Authorization"] = authorization
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def tools_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A bare JSON-RPC ``tools/call`` message."""
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


# --- calling tools --------------------------------------------------------------------


class McpTools:
    """A connected SDK client, called from synchronous tests through a portal."""

    def __init__(self, portal: BlockingPortal, client: Client) -> None:
        self.portal = portal
        self.client = client

    def list_tools(self) -> list[Tool]:
        return self.portal.call(self.client.list_tools).tools

    def call(self, name: str, **arguments: Any) -> CallToolResult:
        result: CallToolResult = self.portal.call(self.client.call_tool, name, arguments)
        return result

    def ok(self, name: str, **arguments: Any) -> Any:
        """The JSON answer of a call that must succeed."""
        result = self.call(name, **arguments)
        assert not result.is_error, text_of(result)
        return json.loads(text_of(result))

    def error(self, name: str, code: str, **arguments: Any) -> dict[str, Any]:
        """The error of a call that must be a tool error with ``code``: the §8 envelope."""
        result = self.call(name, **arguments)
        assert result.is_error, text_of(result)
        body = json.loads(text_of(result))
        assert set(body) == {"error"}, body
        error = body["error"]
        assert error["code"] == code, error
        assert isinstance(error["message"], str)
        assert error["message"].strip()
        return dict(error)

    # --- resources and prompts (SPEC §16) ---

    def list_resources(self, cursor: str | None = None) -> ListResourcesResult:
        result: ListResourcesResult = self.portal.call(
            functools.partial(self.client.list_resources, cursor=cursor)
        )
        return result

    def read_resource(self, uri: str) -> ReadResourceResult:
        result: ReadResourceResult = self.portal.call(self.client.read_resource, uri)
        return result

    def list_resource_templates(self) -> list[ResourceTemplate]:
        return self.portal.call(self.client.list_resource_templates).resource_templates

    def list_prompts(self) -> list[Prompt]:
        return self.portal.call(self.client.list_prompts).prompts

    def get_prompt(self, name: str, **arguments: str) -> GetPromptResult:
        result: GetPromptResult = self.portal.call(self.client.get_prompt, name, arguments)
        return result

    def complete(
        self, ref: PromptReference | ResourceTemplateReference, name: str, value: str
    ) -> Completion:
        """What the server offers for argument ``name`` of ``ref``, typed so far ``value``."""
        result: CompleteResult = self.portal.call(
            self.client.complete, ref, {"name": name, "value": value}
        )
        return result.completion

    def set_logging_level(self, level: LoggingLevel) -> EmptyResult:
        # The SDK marks the method deprecated: the newer protocol dropped it, and the
        # server serves it to clients of the handshake era.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            result: EmptyResult = self.portal.call(self.client.set_logging_level, level)
        return result

    def capabilities(self) -> ServerCapabilities:
        return self.client.server_capabilities

    def refused(self, request: Callable[[], object]) -> MCPError:
        """The JSON-RPC error ``request`` (a call of this client's) gets; it must get one."""
        try:
            request()
        except MCPError as exc:
            return exc
        raise AssertionError("the request was not refused")


def text_of(result: CallToolResult) -> str:
    (content,) = result.content
    assert content.type == "text"
    return content.text
