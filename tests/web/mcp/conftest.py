"""Fixtures only: the raw tokens, the test database's URL, one MCP server per test module
and transport (stdio, streamable HTTP) with the SDK's client connected to it, and the
world each test builds again (``tests.web.mcp.harness`` holds the code)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal

from tests.web.mcp.harness import (
    McpTools,
    Raws,
    World,
    database_url,
    ensure_world,
    http_session,
    new_raw,
    start_http_server,
    stdio_params,
    stdio_session,
    stop,
)


@pytest.fixture(scope="module")
def raws() -> Raws:
    return Raws(ours=new_raw(), theirs=new_raw())


@pytest.fixture(scope="module")
def mcp_database(django_db_setup: None, django_db_blocker: Any) -> str:
    """The test database's URL, for server processes."""
    with django_db_blocker.unblock():
        return database_url()


@pytest.fixture(scope="module")
def portal() -> Iterator[BlockingPortal]:
    """An event loop in a thread, for the SDK's async clients."""
    with start_blocking_portal() as running:
        yield running


@pytest.fixture(scope="module")
def stdio_tools(
    portal: BlockingPortal,
    raws: Raws,
    mcp_database: str,
    django_db_blocker: Any,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[McpTools]:
    """``manage.py mcp`` over stdio with our token, one process for the module."""
    with django_db_blocker.unblock():
        ensure_world(raws)  # the token must exist when the server starts
    log = tmp_path_factory.mktemp("mcp") / "stdio.log"
    with log.open("w") as errlog:
        session = stdio_session(stdio_params(mcp_database, raws.ours), errlog)
        with portal.wrap_async_context_manager(session) as client:
            yield McpTools(portal, client)


@pytest.fixture(scope="module")
def http_url(mcp_database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``manage.py mcp --http`` on a free loopback port, one process for the module."""
    process, url = start_http_server(mcp_database, tmp_path_factory.mktemp("mcp") / "http.log")
    yield url
    stop(process)


@pytest.fixture(scope="module")
def http_tools(
    portal: BlockingPortal, raws: Raws, http_url: str, django_db_blocker: Any
) -> Iterator[McpTools]:
    """The SDK's streamable HTTP client with our token as the bearer."""
    with django_db_blocker.unblock():
        ensure_world(raws)  # connecting is a request: the token must exist
    with portal.wrap_async_context_manager(http_session(http_url, raws.ours)) as client:
        yield McpTools(portal, client)


@pytest.fixture(scope="module")
def legacy_tools(
    portal: BlockingPortal, raws: Raws, http_url: str, django_db_blocker: Any
) -> Iterator[McpTools]:
    """The same, speaking the handshake era's protocol: each call is one POST that the
    server's front answers (``web.mcp.call_front``)."""
    with django_db_blocker.unblock():
        ensure_world(raws)
    session = http_session(http_url, raws.ours, mode="legacy")
    with portal.wrap_async_context_manager(session) as client:
        yield McpTools(portal, client)


@pytest.fixture(scope="module", params=["stdio", "http", "legacy"])
def tools(request: pytest.FixtureRequest) -> McpTools:
    """Our team's tools over each transport in turn (HTTP in both protocol eras)."""
    found: McpTools = request.getfixturevalue(f"{request.param}_tools")
    return found


@pytest.fixture
def world(transactional_db: None, raws: Raws) -> World:
    return ensure_world(raws)
