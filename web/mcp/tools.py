"""The MCP server on the official SDK: five tools, bearer-token auth, the §8 envelope.

Tools are declared with typed parameters, so each has a JSON schema (``kv_store``'s
``command`` is an enum) and the SDK validates the arguments. Every call then runs on a
bounded pool of threads, each with its own database connection (the ORM is
synchronous), for the calling token's team (``LENS_TOKEN`` on stdio, checked again on
every call; over HTTP, the request's bearer token, checked once per request on a lane
of its own), runs ``operations`` and answers with JSON text: the API's answer, or, as a
tool error, the API's error envelope with the same code. Over stdio, a line that is not
a JSON-RPC message is answered with a JSON-RPC error instead of being dropped. The
agents' composed prompts, as resources and a prompt, run on the same pool
(``agent_prompts``).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import json
import logging
import socket
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Annotated, Any, TypeVar

import anyio
import uvicorn
from django.conf import settings
from django.db import close_old_connections
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.lowlevel.server import RequestHandler, Server
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.stdio import stdio_server
from mcp_types import (
    CallToolResult,
    InputRequiredResult,
    SetLevelRequestParams,
    TextContent,
    ToolAnnotations,
)
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.applications import Starlette

from lens.api_tokens import find_token
from lens.core.errors import DomainError, error_body
from lens.envconf import env_bool, env_int
from lens.models import ApiToken
from web.answers.kv_answers import Page, ReadParams, WriteIn
from web.answers.memory_answers import ListParams
from web.api.rendering import iso_utc
from web.mcp import MCP_PATH, client_log, descriptions, operations
from web.mcp.agent_prompts import AgentPrompts
from web.mcp.call_front import CallFront
from web.mcp.calls import (
    INTERNAL_ERROR,
    UNAUTHORIZED,
    Caller,
    caller_token,
    refused_arguments,
)
from web.mcp.operations import Command, validation_failure
from web.mcp.stdio import AnsweringUnreadable
from web.team_shares import TeamShares, share_of

NAME = "composition-lens"

logger = logging.getLogger(__name__)

_T = TypeVar("_T")
_Params = TypeVar("_Params", bound=BaseModel)


# --- running Django code --------------------------------------------------------------


# Calls run side by side on a bounded pool of threads, not on one shared thread: on one
# thread, 8 clients running 64-word memory searches made another client's
# `kv_bootstrap` go from 16 ms to 864 ms (p50), every call waiting for all those before
# it. Each thread keeps its own connection (Django's are per thread), so a process holds
# at most one per thread; PostgreSQL's own pool (DB_POOL=1) lends no more than its
# `max_size`, so more threads than that would only wait for a connection.
DEFAULT_THREADS = 8
THREADS_VARIABLE = "MCP_THREADS"
# One team's calls hold at most this many of them at once (default: half), so a team
# that keeps them all busy still leaves threads for every other team: with all 8 held
# by 8 clients' memory searches, another team's `kv_bootstrap` waited for one of them to
# finish (p50 717 ms against 74 ms alone). Its other calls wait their turn without a
# thread. Over stdio there is one team: it has them all.
TEAM_THREADS_VARIABLE = "MCP_TEAM_THREADS"
# Token checks (one indexed lookup each) have a lane of their own, so a flood of bad
# tokens never takes a thread a tool call could use, and a valid request's check does
# not wait behind slow tool calls.
TOKEN_THREADS = 2
# MCP_FRONT=0 serves every request through the SDK's own session (``call_front``).
FRONT_VARIABLE = "MCP_FRONT"


def tool_threads() -> int:
    """How many tool calls run at once: ``MCP_THREADS`` (default 8), no more than the
    database pool can lend connections to."""
    wanted = env_int(THREADS_VARIABLE, DEFAULT_THREADS, minimum=1)
    pool = settings.DATABASES["default"].get("OPTIONS", {}).get("pool")
    size = pool.get("max_size") if isinstance(pool, dict) else None
    if isinstance(size, int):
        return min(wanted, size)
    return wanted


def team_threads(threads: int) -> int:
    """How many of ``threads`` one team's calls may hold at once: ``MCP_TEAM_THREADS``
    (default half, rounded up), at most all of them."""
    return share_of(threads, env_int(TEAM_THREADS_VARIABLE, 0, minimum=1))


def _with_connections(function: Callable[..., _T], *args: Any) -> _T:
    """``function``, with this thread's connections looked after as Django does around a
    request: a stale or broken one closed before (a persistent one is health-checked
    on its next use, CONN_HEALTH_CHECKS), and after; with ``CONN_MAX_AGE=0`` or the
    pool that closes it (back to the pool), so an idle thread holds none."""
    close_old_connections()
    try:
        return function(*args)
    finally:
        close_old_connections()


class DjangoThreads:
    """A bounded pool of threads that run Django code, each with its own connection.
    Calls beyond its size wait for a thread, first come first served; a call whose
    client has gone still finishes (a thread cannot be interrupted), so it is bounded
    by the size too. Threads start on first use."""

    def __init__(self, name: str, size: int) -> None:
        self._executor = ThreadPoolExecutor(max_workers=size, thread_name_prefix=f"mcp-{name}")

    async def run(self, function: Callable[..., _T], *args: Any) -> _T:
        # The caller's context variables go with the call (tracing spans among them), as
        # in Django's sync_to_async; but straight through the executor: asgiref's
        # wrapper (a shield, and its locals copied back and forth around the call) cost
        # a kv_store read about 15% more CPU in the server, 6% more time.
        call = functools.partial(_with_connections, function, *args)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, contextvars.copy_context().run, call)


# --- answers --------------------------------------------------------------------------


def _json_default(value: object) -> object:
    if isinstance(value, datetime):
        return iso_utc(value)  # as the API renders times
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def json_text(data: object) -> str:
    return json.dumps(data, ensure_ascii=False, default=_json_default)


def answer_result(answer: BaseModel) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=json_text(answer.model_dump()))])


def error_result(envelope: Mapping[str, Any]) -> CallToolResult:
    """A tool error whose text is the §8 error envelope."""
    return CallToolResult(
        content=[TextContent(type="text", text=json_text(envelope))], is_error=True
    )


def run_operation(
    caller: Caller, operation: Callable[..., BaseModel], arguments: dict[str, Any]
) -> CallToolResult:
    """``operation`` for the caller's team, as a tool result (in a pool thread)."""
    token = caller_token(caller)
    if token is None:
        return error_result(UNAUTHORIZED)
    try:
        return answer_result(operation(token, **arguments))
    except DomainError as exc:
        return error_result(exc.envelope())


# --- arguments ------------------------------------------------------------------------


def _bounds(model: type[BaseModel], field: str) -> dict[str, Any]:
    """The JSON-schema bounds the API's model sets on ``field``, for the tool's schema
    (so a model sees them) without a second copy of the numbers; the API's model
    itself validates the value."""
    schema = model.model_json_schema()["properties"][field]
    found: dict[str, Any] = {}
    for part in (schema, *schema.get("anyOf", ())):  # an optional field's bounds: in anyOf
        found.update({key: part[key] for key in ("minimum", "maximum") if key in part})
    return found


# --- the server -----------------------------------------------------------------------

TokenOfCall = Callable[[], Caller]


class TeamAccessToken(AccessToken):
    """The SDK's record of a verified bearer token, with the API token it is."""

    api_token: ApiToken | None = Field(default=None, exclude=True)

    model_config = ConfigDict(arbitrary_types_allowed=True)


def request_token() -> Caller:
    """The API token the HTTP request being served was verified as (None: none was)."""
    access = get_access_token()
    return access.api_token if isinstance(access, TeamAccessToken) else None


class LensMCP(MCPServer[Any]):
    """The tools, for the team of the token ``token_of_call`` gives for each call."""

    def __init__(
        self,
        token_of_call: TokenOfCall,
        *,
        token_verifier: TokenVerifier | None = None,
        auth: AuthSettings | None = None,
        threads: DjangoThreads | None = None,
    ) -> None:
        super().__init__(
            NAME,
            title="Composition Lens",
            instructions=descriptions.INSTRUCTIONS,
            token_verifier=token_verifier,
            auth=auth,
            log_level="WARNING",
        )
        self._token_of_call = token_of_call
        size = tool_threads()
        self._threads = threads or DjangoThreads("tools", size)
        # Waiting calls take no thread here (the event loop holds them): no room bound.
        self._shares = TeamShares(team_threads(size))
        self._parameters: dict[str, frozenset[str]] = {}
        _register_tools(self)
        AgentPrompts(self).register()
        # Registering the handler declares the ``logging`` capability (as registering
        # ``completion/complete`` declares ``completions``).
        self.add_request_handler(client_log.METHOD, SetLevelRequestParams, client_log.set_level)

    def add_request_handler(
        self, method: str, params_type: type[_Params], handler: RequestHandler[Any, _Params]
    ) -> None:
        """Serve ``method`` with ``handler``, in place of the SDK's (which serves only
        what was registered up front, the same for every caller)."""
        self._lowlevel_server.add_request_handler(method, params_type, handler)

    def add_lens_tool(
        self, fn: Callable[..., Any], description: str, annotations: ToolAnnotations
    ) -> None:
        self.add_tool(fn, name=fn.__name__, description=description, annotations=annotations)
        self._parameters[fn.__name__] = frozenset(inspect.signature(fn).parameters)

    @property
    def lowlevel(self) -> Server[Any]:
        """The SDK's protocol-level server under this one."""
        return self._lowlevel_server

    async def for_caller(self, function: Callable[..., _T], *args: Any) -> _T:
        """``function(caller, *args)`` for the calling token on a pool thread, once its
        team has a turn (over HTTP, where many teams share the pool)."""
        caller = self._token_of_call()
        if not isinstance(caller, ApiToken):
            return await self._threads.run(function, caller, *args)
        async with self._shares.turn(caller.team_id):
            return await self._threads.run(function, caller, *args)

    async def answer(self, operation: Callable[..., BaseModel], **arguments: Any) -> CallToolResult:
        """Run ``operation`` for the calling token's team, as a tool result."""
        return await self.for_caller(run_operation, operation, arguments)

    async def run_stdio_async(self) -> None:
        """The SDK's stdio serving, with every line that is not a message answered with
        a JSON-RPC error instead of dropped (``web.mcp.stdio``)."""
        async with stdio_server() as (read_stream, write_stream):
            lowlevel = self._lowlevel_server
            await lowlevel.run(
                AnsweringUnreadable(read_stream, write_stream),
                write_stream,
                lowlevel.create_initialization_options(),
            )

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        """Every error is the §8 envelope: arguments refused here or by the tool's schema,
        domain errors (``run_operation``), an unknown tool, and a crash (logged)."""
        parameters = self._parameters.get(name)
        if parameters is None:
            tools = ", ".join(self._parameters)
            return error_result(
                error_body("invalid_request", f"No tool {name!r}; the tools are: {tools}.")
            )
        if refused := refused_arguments(arguments, parameters):
            return error_result(refused.envelope())
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            logger.exception("MCP tool %r failed", name)
            return error_result(INTERNAL_ERROR)
        except ToolError as exc:
            # Arguments that fail the tool's schema: the API's validation error.
            if isinstance(exc.__cause__, ValidationError):
                return error_result(validation_failure(exc.__cause__.errors()).envelope())
            raise


_READ = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
_KV = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)

AgentSlug = Annotated[str, Field(description=descriptions.AGENT)]


def _register_tools(server: LensMCP) -> None:
    async def memory_save(
        agent: AgentSlug,
        kind: Annotated[str, Field(description="What this is, e.g. `profile`, `preference`.")],
        content: Annotated[str, Field(description="The memory, in plain prose.")],
        tags: Annotated[list[str] | None, Field(description="Keywords to find it by.")] = None,
        label: Annotated[
            str | None, Field(description="A short name for the thing learned, e.g. `name`.")
        ] = None,
        supersedes: Annotated[
            str | None, Field(description="The id of an earlier memory this one replaces.")
        ] = None,
        session: Annotated[str | None, Field(description=descriptions.SESSION)] = None,
        valid_until: Annotated[
            str | None,
            Field(description="When it stops being true (ISO 8601), e.g. `2030-01-31T12:00Z`."),
        ] = None,
    ) -> CallToolResult:
        return await server.answer(
            operations.memory_save,
            agent=agent,
            kind=kind,
            content=content,
            tags=tags,
            label=label,
            supersedes=supersedes,
            session=session,
            valid_until=valid_until,
        )

    async def memory_search(
        agent: AgentSlug,
        query: Annotated[str, Field(description="Words to look for.")],
        kind: Annotated[str | None, Field(description="Only memories of this kind.")] = None,
        limit: Annotated[
            int | None,
            Field(
                description="How many at most, 1-200 (default 50).",
                json_schema_extra=_bounds(ListParams, "limit"),
            ),
        ] = None,
    ) -> CallToolResult:
        return await server.answer(
            operations.memory_search, agent=agent, query=query, kind=kind, limit=limit
        )

    async def memory_recall(
        agent: AgentSlug,
        message: Annotated[str, Field(description="The message to recall memories for.")],
    ) -> CallToolResult:
        return await server.answer(operations.memory_recall, agent=agent, message=message)

    async def kv_store(
        command: Annotated[Command, Field(description=descriptions.COMMAND)],
        id: Annotated[str, Field(description=descriptions.KEY)],
        payload: Annotated[str | None, Field(description=descriptions.PAYLOAD)] = None,
        version: Annotated[
            int | None,
            Field(
                description=descriptions.VERSION, json_schema_extra=_bounds(ReadParams, "version")
            ),
        ] = None,
        if_version: Annotated[
            int | None,
            Field(
                description=descriptions.IF_VERSION,
                json_schema_extra=_bounds(WriteIn, "if_version"),
            ),
        ] = None,
        limit: Annotated[
            int | None,
            Field(description=descriptions.LIMIT, json_schema_extra=_bounds(Page, "limit")),
        ] = None,
        offset: Annotated[
            int | None,
            Field(description=descriptions.OFFSET, json_schema_extra=_bounds(Page, "offset")),
        ] = None,
    ) -> CallToolResult:
        return await server.answer(
            operations.kv_store,
            command=command,
            id=id,
            payload=payload,
            version=version,
            if_version=if_version,
            limit=limit,
            offset=offset,
        )

    async def kv_bootstrap() -> CallToolResult:
        return await server.answer(operations.kv_bootstrap)

    server.add_lens_tool(memory_save, descriptions.MEMORY_SAVE, _WRITE)
    server.add_lens_tool(memory_search, descriptions.MEMORY_SEARCH, _READ)
    server.add_lens_tool(memory_recall, descriptions.MEMORY_RECALL, _READ)
    server.add_lens_tool(kv_store, descriptions.KV_STORE, _KV)
    server.add_lens_tool(kv_bootstrap, descriptions.KV_BOOTSTRAP, _READ)


# --- transports -----------------------------------------------------------------------


def serve_stdio(raw_token: str) -> None:
    """Serve over stdin/stdout for the team of ``raw_token`` (checked by the caller; each
    call checks it again, so a revoked token stops working at once)."""
    server = LensMCP(lambda: raw_token)
    anyio.run(server.run_stdio_async)


class TeamTokenVerifier(TokenVerifier):
    """Every HTTP request's bearer token: an API token of some team, not revoked. The
    API's one-query check (``find_token``), on the token lane; nothing is cached, so a
    revoked token is refused from the next request on."""

    def __init__(self, threads: DjangoThreads | None = None) -> None:
        self._threads = threads or DjangoThreads("tokens", TOKEN_THREADS)

    async def verify_token(self, token: str) -> AccessToken | None:
        if not token.strip():
            return None  # nothing to look up
        found = await self._threads.run(find_token, token)
        if found is None:
            return None
        return TeamAccessToken(
            token=token,
            client_id=f"lens-token-{found.pk}",
            scopes=[],
            subject=found.team.slug,
            api_token=found,
        )


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def http_app(host: str, port: int, *, front: bool | None = None) -> Starlette:
    """Streamable HTTP at ``/mcp``; 401 before anything runs without a valid token.
    A single tool call is answered by ``call_front`` unless ``front`` is False (default:
    ``MCP_FRONT``, on)."""
    if front is None:
        front = env_bool(FRONT_VARIABLE, default=True)
    base = f"http://{_url_host(host)}:{port}"
    # The token lane: the bearer checks, and the key/value reads that ``kv_read_front``
    # answers with the token's check in the same statement.
    lane = DjangoThreads("tokens", TOKEN_THREADS)
    server = LensMCP(
        request_token,
        token_verifier=TeamTokenVerifier(lane),
        # No OAuth here: API tokens are issued by `manage.py issue_token`. The SDK turns
        # its bearer check on with auth settings; without a resource URL it advertises
        # no authorization server.
        auth=AuthSettings(issuer_url=base, resource_server_url=None),
    )
    # Stateless: every request stands alone (and is authenticated alone), so any app
    # process behind a load balancer can answer it.
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH, stateless_http=True, json_response=True, host=host
    )
    if not front:
        return app
    # Behind the body limit, in front of the session manager (``call_front``).
    manager = server.session_manager
    limit = manager.asgi_app
    app.state.call_front = limit.app = CallFront(limit.app, server.lowlevel, manager)
    # In front of everything, the bearer check included (``kv_read_front``). Imported
    # here: it answers with this module's results.
    from web.mcp.kv_read_front import KvReadFront

    stack = app.build_middleware_stack()
    reads = KvReadFront(stack, lane, app.state.call_front, manager.max_request_body_size)
    app.state.kv_read_front = app.middleware_stack = reads
    return app


def serve_http(host: str, port: int, announce: Callable[[str], None]) -> None:
    """Serve streamable HTTP on ``host:port`` (0: a free port), announcing the URL once
    the socket listens."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.create_server((host, port), family=family)
    # Accepted connections inherit this: a response written in several sends goes out
    # at once instead of waiting for the client's delayed ACK (a 40 ms stall).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    port = sock.getsockname()[1]
    config = uvicorn.Config(http_app(host, port), log_level="warning", lifespan="on")
    announce(f"http://{_url_host(host)}:{port}{MCP_PATH}")
    uvicorn.Server(config).run(sockets=[sock])
