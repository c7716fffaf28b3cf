"""The agents' composed prompts as MCP resources and an MCP prompt (SPEC §16).

For each agent of the calling token's team, two resources:
``lens://agents/{slug}/prompt`` (the composed prompt, ``text/plain``) and
``lens://agents/{slug}/composition`` (``application/json``, exactly the body of
``GET /api/agents/{slug}/composition``, written by the same function); the same two as
resource templates, so a client can address any agent by its slug; and the prompt
``agent_system_prompt`` (argument ``agent``): one message whose text is the composed
prompt. Reading any of them records nothing, as the composition endpoint does not: no
delivery, no audit event, no memory event.

The agent's slug, where a client asks for it (the templates' ``{slug}``, the prompt's
``agent``), completes (``completion/complete``) to the slugs of the team's agents that
start with what was typed, at most ``COMPLETION_VALUES`` of them with the total.

The SDK's ``MCPServer`` serves resources and prompts registered up front, the same for
every caller; these are the caller's team's, so the six methods have handlers of their
own on the low-level server. Each read runs like a tool call: on the pool, within the
team's share of it, for the token of the call (checked again on every call over stdio).

The list is paged with the protocol's cursor, ``PAGE_AGENTS`` agents (two resources
each) a page in slug order, so a team of any size costs one bounded, indexed query a
page; the cursor is the last slug listed. Refusals are JSON-RPC errors, since a read
has no ``isError`` result: ``-32602`` (invalid params, as the SDK answers an unknown
resource) whose ``data`` holds the §8 envelope, so an unknown agent and another team's
agent are the same ``agent_not_found``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar, get_args

from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    CompleteRequestParams,
    CompleteResult,
    Completion,
    GetPromptRequestParams,
    GetPromptResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    PaginatedRequestParams,
    Prompt,
    PromptArgument,
    PromptMessage,
    PromptReference,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    TextContent,
    TextResourceContents,
)

from lens.core.config import is_agent_slug
from lens.core.errors import DomainError, error_body, invalid_input
from web.mcp import calls, descriptions, operations
from web.mcp.calls import Caller, Unauthorized, caller_token, refused_arguments

if TYPE_CHECKING:
    from web.mcp.tools import LensMCP

logger = logging.getLogger(__name__)

_T = TypeVar("_T")
Context = ServerRequestContext[Any, Any]

View = Literal["prompt", "composition"]
VIEWS: Final[tuple[View, ...]] = get_args(View)
MIME_TYPES: Final[Mapping[View, str]] = {"prompt": "text/plain", "composition": "application/json"}
TITLES: Final[Mapping[View, str]] = {"prompt": "composed prompt", "composition": "composition"}
URI_PREFIX = "lens://agents/"

# Agents a page of the resource list (two resources each). A client that does not follow
# the cursor still sees the first PAGE_AGENTS agents, and the templates reach the rest.
PAGE_AGENTS = 50

PROMPT_NAME = "agent_system_prompt"
PROMPT_ARGUMENT = "agent"
PROMPT_PARAMETERS = frozenset({PROMPT_ARGUMENT})
SLUG_ARGUMENT = "slug"  # the templates' variable

# The most values one completion answers: the protocol's own bound on ``values``.
COMPLETION_VALUES = 100


# --- names ----------------------------------------------------------------------------


def agent_uri(slug: str, view: View) -> str:
    return f"{URI_PREFIX}{slug}/{view}"


def named_by(uri: str) -> tuple[str, View] | None:
    """The slug and view ``uri`` names (any slug text: whether an agent has it is the
    read's to say), or None when it is none of these resources."""
    if not uri.startswith(URI_PREFIX):
        return None
    slug, _, view = uri.removeprefix(URI_PREFIX).partition("/")
    for known in VIEWS:
        if slug and view == known:
            return slug, known
    return None


def cursor_after(cursor: str | None) -> str | None:
    """The slug a page starts after (None: the first page); a cursor this server never
    gave is refused, as the protocol asks (invalid params)."""
    if cursor is None:
        return None
    if not is_agent_slug(cursor):
        raise _refusal(invalid_input([("cursor", "not a cursor this server gave")]))
    return cursor


def _no_cursor(params: PaginatedRequestParams) -> None:
    """The short lists come in one page: no cursor continues them."""
    if params.cursor is not None:
        raise _refusal(invalid_input([("cursor", "this list has one page")]))


def _resource(slug: str, name: str, view: View) -> Resource:
    text = descriptions.PROMPT_RESOURCE if view == "prompt" else descriptions.COMPOSITION_RESOURCE
    return Resource(
        uri=agent_uri(slug, view),
        name=f"{slug}/{view}",
        title=f"{name}: {TITLES[view]}",
        description=text.format(slug=slug),
        mime_type=MIME_TYPES[view],
    )


TEMPLATES: Final[tuple[ResourceTemplate, ...]] = (
    ResourceTemplate(
        uri_template=agent_uri("{slug}", "prompt"),
        name="agent-prompt",
        title="An agent's composed prompt",
        description=descriptions.PROMPT_TEMPLATE,
        mime_type=MIME_TYPES["prompt"],
    ),
    ResourceTemplate(
        uri_template=agent_uri("{slug}", "composition"),
        name="agent-composition",
        title="An agent's composition",
        description=descriptions.COMPOSITION_TEMPLATE,
        mime_type=MIME_TYPES["composition"],
    ),
)

PROMPT: Final = Prompt(
    name=PROMPT_NAME,
    title="An agent's system prompt",
    description=descriptions.AGENT_SYSTEM_PROMPT,
    arguments=[
        PromptArgument(name=PROMPT_ARGUMENT, description=descriptions.PROMPT_AGENT, required=True)
    ],
)


# --- errors ---------------------------------------------------------------------------


def _refusal(error: DomainError, **data: Any) -> MCPError:
    """The JSON-RPC error for a refusal: its sentence, and the §8 envelope (with the
    code) in ``data``. A token no longer valid is an invalid request; anything else the
    caller asked for (an unknown agent, bad arguments) is invalid params."""
    code = INVALID_REQUEST if isinstance(error, Unauthorized) else INVALID_PARAMS
    return MCPError(code=code, message=error.message, data={**data, **error.envelope()})


def _as_token(caller: Caller, read: Callable[..., _T], *args: Any) -> _T:
    """``read(token, *args)`` for the caller's live token (in a pool thread)."""
    token = caller_token(caller)
    if token is None:
        raise Unauthorized(calls.UNAUTHORIZED["error"]["message"])
    return read(token, *args)


# --- the handlers ---------------------------------------------------------------------


def completes_a_slug(params: CompleteRequestParams) -> bool:
    """Whether the argument completed is an agent's slug: ``{slug}`` of one of the
    resource templates, or the prompt's ``agent``."""
    ref, name = params.ref, params.argument.name
    if isinstance(ref, PromptReference):
        return ref.name == PROMPT_NAME and name == PROMPT_ARGUMENT
    templates = {template.uri_template for template in TEMPLATES}
    return ref.uri in templates and name == SLUG_ARGUMENT


class AgentPrompts:
    """The handlers of the six methods, reading for the token of each call."""

    def __init__(self, server: LensMCP) -> None:
        self._server = server

    def register(self) -> None:
        add = self._server.add_request_handler
        add("resources/list", PaginatedRequestParams, self.list_resources)
        add("resources/templates/list", PaginatedRequestParams, self.list_templates)
        add("resources/read", ReadResourceRequestParams, self.read_resource)
        add("prompts/list", PaginatedRequestParams, self.list_prompts)
        add("prompts/get", GetPromptRequestParams, self.get_prompt)
        add("completion/complete", CompleteRequestParams, self.complete)

    async def _read(self, read: Callable[..., _T], *args: Any, **data: Any) -> _T:
        """``read(token, *args)`` on the pool for the token of the call; refusals and
        crashes as JSON-RPC errors (``data`` joins their data)."""
        try:
            return await self._server.for_caller(_as_token, read, *args)
        except DomainError as exc:
            raise _refusal(exc, **data) from None
        except Exception:
            # Logged here, with the traceback; the client hears only that it happened.
            logger.exception("MCP read %s%r failed", read.__name__, args)
            error = calls.INTERNAL_ERROR
            raise MCPError(INTERNAL_ERROR, error["error"]["message"], {**data, **error}) from None

    async def list_resources(
        self, ctx: Context, params: PaginatedRequestParams
    ) -> ListResourcesResult:
        after = cursor_after(params.cursor)
        agents, more = await self._read(operations.agent_page, after, PAGE_AGENTS)
        return ListResourcesResult(
            resources=[_resource(a.slug, a.name, view) for a in agents for view in VIEWS],
            next_cursor=agents[-1].slug if more else None,
        )

    async def list_templates(
        self, ctx: Context, params: PaginatedRequestParams
    ) -> ListResourceTemplatesResult:
        _no_cursor(params)
        return ListResourceTemplatesResult(resource_templates=list(TEMPLATES))

    async def read_resource(
        self, ctx: Context, params: ReadResourceRequestParams
    ) -> ReadResourceResult:
        uri = params.uri
        named = named_by(uri)
        if named is None:
            shapes = " and ".join(template.uri_template for template in TEMPLATES)
            message = f"No resource {uri!r}; the resources are {shapes}."
            raise MCPError(
                INVALID_PARAMS, message, {"uri": uri, **error_body("invalid_request", message)}
            )
        slug, view = named
        read = operations.agent_prompt if view == "prompt" else operations.agent_composition
        text = await self._read(read, slug, uri=uri)
        # Cached by no client: the defaults say stale at once (ttl 0), and private to the
        # token's team.
        return ReadResourceResult(
            contents=[TextResourceContents(uri=uri, mime_type=MIME_TYPES[view], text=text)]
        )

    async def complete(self, ctx: Context, params: CompleteRequestParams) -> CompleteResult:
        """The slugs of the team's agents that start with what was typed, for an agent's
        slug (the templates' ``{slug}``, the prompt's ``agent``); for anything else this
        server has nothing to offer: no values, not an error, as the protocol asks."""
        if not completes_a_slug(params):
            return CompleteResult(completion=Completion(values=[], total=0, has_more=False))
        found = await self._read(operations.agent_slugs, params.argument.value, COMPLETION_VALUES)
        return CompleteResult(
            completion=Completion(
                values=found.slugs,
                total=found.total,
                has_more=found.total > len(found.slugs),
            )
        )

    async def list_prompts(self, ctx: Context, params: PaginatedRequestParams) -> ListPromptsResult:
        _no_cursor(params)
        return ListPromptsResult(prompts=[PROMPT])

    async def get_prompt(self, ctx: Context, params: GetPromptRequestParams) -> GetPromptResult:
        if params.name != PROMPT_NAME:
            message = f"No prompt {params.name!r}; the prompts are: {PROMPT_NAME}."
            raise MCPError(INVALID_PARAMS, message, error_body("invalid_request", message))
        arguments = params.arguments or {}
        if refused := refused_arguments(arguments, PROMPT_PARAMETERS):
            raise _refusal(refused)
        if PROMPT_ARGUMENT not in arguments:
            raise _refusal(invalid_input([(PROMPT_ARGUMENT, "Field required")]))
        text = await self._read(operations.agent_prompt, arguments[PROMPT_ARGUMENT])
        # MCP gives a prompt's messages the roles "user" and "assistant" only; there is
        # no system role. "user": the text instructs the model, and a client that puts
        # it into a conversation (rather than into its system prompt, which the
        # description asks for) has it read as instructions from the side that gives
        # them. As "assistant" the model would take its instructions for something it
        # said itself, and several model APIs refuse a conversation that opens with an
        # assistant turn. The SDK, too, makes plain text a user message.
        return GetPromptResult(
            description=descriptions.AGENT_SYSTEM_PROMPT,
            messages=[PromptMessage(role="user", content=TextContent(type="text", text=text))],
        )
