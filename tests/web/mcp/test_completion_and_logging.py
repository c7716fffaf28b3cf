"""``completion/complete`` and ``logging/setLevel`` through the SDK's own client, over
stdio and streamable HTTP: the slugs offered are the token's team's only, those that
start with what was typed, at most 100 with the total; anything else completes to
nothing; the log level is acknowledged with ``{}`` and a level the protocol does not
name is invalid params. Both capabilities are declared.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any, cast

import pytest
from anyio.from_thread import BlockingPortal
from django.db import connection as db_connection
from django.test.utils import CaptureQueriesContext
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp_types import (
    INVALID_PARAMS,
    LoggingLevel,
    PromptReference,
    ResourceTemplateReference,
    SetLevelRequestParams,
)

from lens.models import Agent
from tests.event_loops import run_async
from tests.factories import create_agent
from tests.web.mcp.harness import (
    McpTools,
    Raws,
    World,
    ensure_world,
    http_session,
    raw_post,
    stdio_params,
    stdio_session,
)
from web.mcp import client_log
from web.mcp.agent_prompts import COMPLETION_VALUES
from web.mcp.operations import agent_slugs

pytestmark = pytest.mark.django_db(transaction=True)

PROMPT = PromptReference(name="agent_system_prompt")
PROMPT_TEMPLATE = ResourceTemplateReference(uri="lens://agents/{slug}/prompt")
COMPOSITION_TEMPLATE = ResourceTemplateReference(uri="lens://agents/{slug}/composition")
# Where an agent's slug is asked for: each ref with the name of its argument.
Ref = PromptReference | ResourceTemplateReference
SLUG_ARGUMENTS: list[tuple[Ref, str]] = [
    (PROMPT, "agent"),
    (PROMPT_TEMPLATE, "slug"),
    (COMPOSITION_TEMPLATE, "slug"),
]


def add_agents(world: World, *slugs: str) -> None:
    for slug in slugs:
        create_agent(world.team, slug, {"name": slug.title(), "background": {"sections": []}})


# --- the capabilities -----------------------------------------------------------------


def test_the_server_declares_logging_and_completions(tools: McpTools, world: World) -> None:
    capabilities = tools.capabilities()
    assert capabilities.logging is not None
    assert capabilities.completions is not None


# --- completion -----------------------------------------------------------------------


@pytest.mark.parametrize(("ref", "argument"), SLUG_ARGUMENTS)
def test_an_agents_slug_completes_to_the_teams_slugs_that_start_with_what_was_typed(
    tools: McpTools, world: World, ref: Ref, argument: str
) -> None:
    add_agents(world, "ada", "atlas-two", "warbler")
    # atlas is the other team's: never offered, whatever is typed.
    offered = tools.complete(ref, argument, "a")
    assert (offered.values, offered.total, offered.has_more) == (["ada", "atlas-two"], 2, False)
    assert tools.complete(ref, argument, "w").values == ["warbler", "wren"]
    assert tools.complete(ref, argument, "W").values == ["warbler", "wren"]  # slugs are lowercase
    assert tools.complete(ref, argument, "wre").values == ["wren"]
    everything = tools.complete(ref, argument, "")
    assert everything.values == ["ada", "atlas-two", "warbler", "wren"]
    assert "atlas" not in everything.values


def test_another_teams_slug_is_never_offered_even_typed_in_full(
    tools: McpTools, world: World
) -> None:
    for ref, argument in SLUG_ARGUMENTS:
        offered = tools.complete(ref, argument, "atlas")
        assert (offered.values, offered.total, offered.has_more) == ([], 0, False)


def test_the_other_teams_token_is_offered_its_own_agents_only(
    portal: BlockingPortal, raws: Raws, http_url: str, world: World
) -> None:
    with portal.wrap_async_context_manager(http_session(http_url, raws.theirs)) as client:
        theirs = McpTools(portal, client)
        assert theirs.complete(PROMPT, "agent", "").values == ["atlas"]
        assert theirs.complete(PROMPT, "agent", "w").values == []


@pytest.mark.parametrize(
    ("ref", "argument"),
    [
        (PromptReference(name="test_prompt_with_arguments"), "agent"),  # no such prompt
        (PROMPT, "slug"),  # the prompt's argument is `agent`
        (ResourceTemplateReference(uri="lens://agents/{slug}/memories"), "slug"),
        (ResourceTemplateReference(uri="lens://agents/wren/prompt"), "slug"),  # not a template
        (PROMPT_TEMPLATE, "agent"),  # the template's variable is `slug`
    ],
)
def test_what_this_server_does_not_know_completes_to_an_empty_list(
    tools: McpTools, world: World, ref: Ref, argument: str
) -> None:
    offered = tools.complete(ref, argument, "w")
    assert (offered.values, offered.total, offered.has_more) == ([], 0, False)


@pytest.mark.parametrize("typed", ["wren!", "-", "w" * 65, "w" * 100_000, "wr en", "%", "_"])
def test_what_no_slug_can_start_with_completes_to_nothing(
    tools: McpTools, world: World, typed: str
) -> None:
    assert tools.complete(PROMPT, "agent", typed).values == []


def test_at_most_100_are_offered_with_the_total_and_that_more_follow(
    tools: McpTools, world: World
) -> None:
    Agent.objects.bulk_create(
        Agent(team=world.team, slug=f"agent-{number:03}", name="A") for number in range(130)
    )
    offered = tools.complete(PROMPT_TEMPLATE, "slug", "agent-")
    assert len(offered.values) == COMPLETION_VALUES
    assert offered.values == [f"agent-{number:03}" for number in range(COMPLETION_VALUES)]
    assert (offered.total, offered.has_more) == (130, True)
    fewer = tools.complete(PROMPT_TEMPLATE, "slug", "agent-12")
    assert (fewer.values, fewer.total, fewer.has_more) == (
        [f"agent-{number}" for number in range(120, 130)],
        10,
        False,
    )


def test_a_completion_is_one_query_when_it_fits_and_two_when_it_does_not(world: World) -> None:
    Agent.objects.bulk_create(
        Agent(team=world.team, slug=f"agent-{number:02}", name="A") for number in range(12)
    )
    with CaptureQueriesContext(db_connection) as queries:
        fits = agent_slugs(world.token, "agent-1", 5)
    assert (fits.slugs, fits.total, len(queries)) == ([f"agent-{n}" for n in range(10, 12)], 2, 1)
    with CaptureQueriesContext(db_connection) as queries:
        more = agent_slugs(world.token, "agent-", 5)
    assert (more.slugs, more.total, len(queries)) == ([f"agent-{n:02}" for n in range(5)], 12, 2)
    with CaptureQueriesContext(db_connection) as queries:
        assert agent_slugs(world.token, "x" * 100_000, 5).slugs == []
    assert len(queries) == 0


# --- the log level --------------------------------------------------------------------


@pytest.fixture(scope="module")
def legacy_stdio_tools(
    portal: BlockingPortal,
    raws: Raws,
    mcp_database: str,
    django_db_blocker: Any,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[McpTools]:
    """``manage.py mcp`` over stdio, its client opening with the initialize handshake:
    one connection for the whole session, as most stdio clients still have it."""
    with django_db_blocker.unblock():
        ensure_world(raws)
    log = tmp_path_factory.mktemp("mcp") / "stdio-legacy.log"
    with log.open("w") as errlog:
        session = stdio_session(stdio_params(mcp_database, raws.ours), errlog, mode="legacy")
        with portal.wrap_async_context_manager(session) as client:
            yield McpTools(portal, client)


@pytest.fixture(params=["legacy_stdio", "legacy"])
def handshake_tools(request: pytest.FixtureRequest) -> McpTools:
    """The clients of the protocol's handshake era, which has ``logging/setLevel`` (the
    newer era dropped it; a request there carries its own level)."""
    found: McpTools = request.getfixturevalue(f"{request.param}_tools")
    return found


@pytest.mark.parametrize("level", ["debug", "info", "warning", "emergency"])
def test_setting_the_log_level_is_acknowledged_with_an_empty_result(
    handshake_tools: McpTools, world: World, level: LoggingLevel
) -> None:
    result = handshake_tools.set_logging_level(level)
    assert result.model_dump(exclude_none=True) == {}
    # The session goes on serving.
    assert handshake_tools.complete(PROMPT, "agent", "w").values == ["wren"]


@pytest.mark.parametrize("level", ["loud", "INFO", "", None, 3])
def test_a_level_the_protocol_does_not_name_is_invalid_params(
    http_url: str, raws: Raws, world: World, level: object
) -> None:
    message = {"jsonrpc": "2.0", "id": 7, "method": "logging/setLevel", "params": {"level": level}}
    status, body = raw_post(http_url, message, f"Bearer {raws.ours}")
    assert status == 200, body
    answer = json.loads(body)
    assert answer["id"] == 7
    assert answer["error"]["code"] == INVALID_PARAMS
    assert "result" not in answer


def test_setting_the_log_level_still_needs_a_valid_token(http_url: str, world: World) -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "info"}}
    assert raw_post(http_url, message, "Bearer cl_unknown")[0] == 401


def _context(connection: Connection) -> ServerRequestContext[Any, Any]:
    """The part of a request's context the handler reads: its session's connection."""
    return cast(
        ServerRequestContext[Any, Any],
        SimpleNamespace(session=SimpleNamespace(_connection=connection)),
    )


def test_the_level_is_kept_for_its_connection_and_sends_what_is_at_or_above_it() -> None:
    first = Connection.from_envelope("2025-11-25", None, None)
    second = Connection.from_envelope("2025-11-25", None, None)
    assert client_log.level_of(first) is None
    # Before a client sets one: warnings and worse.
    assert [client_log.sends(first, level) for level in ("info", "warning", "error")] == [
        False,
        True,
        True,
    ]
    run_async(client_log.set_level, _context(first), SetLevelRequestParams(level="info"))
    assert client_log.level_of(first) == "info"
    assert client_log.level_of(second) is None  # another connection's is its own
    assert not client_log.sends(first, "debug")
    assert client_log.sends(first, "info")
    assert client_log.sends(first, "notice")
    assert not client_log.sends(second, "info")
    run_async(client_log.set_level, _context(first), SetLevelRequestParams(level="critical"))
    assert [level for level in client_log.LEVELS if client_log.sends(first, level)] == [
        "critical",
        "alert",
        "emergency",
    ]
