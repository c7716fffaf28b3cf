"""What each MCP tool and read does, synchronously, for the team of the calling token.

Every tool calls the operations the JSON API calls and answers with the API's own
answer models and builders (``web/answers``), so a tool answers exactly what the API
answers; input is validated by the same schemas (``MemoryInput``, the store's
``WriteIn`` / ``ReadParams`` / ``Page``), and refusals are the same domain errors with
the same codes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, get_args

from pydantic import BaseModel, ValidationError

from kvstore import store
from kvstore.bootstrap import bootstrap
from lens.actors import Actor
from lens.agents import get_agent
from lens.core.config import is_agent_slug
from lens.core.errors import InvalidInput, invalid_input, pydantic_problems
from lens.models import Agent, ApiToken
from memory.composed import current_composition, stamped_agent
from memory.core.records import MemoryInput
from web.answers.composition_answers import composition_answer
from web.answers.kv_answers import (
    BootstrapOut,
    DeletedOut,
    Page,
    ReadParams,
    WriteIn,
    history_out,
    key_list,
    value_out,
    written_out,
)
from web.answers.memory_answers import (
    ConflictOut,
    ListParams,
    MemoryList,
    RecallOut,
    SavedOut,
    memory_list,
    recall_answer,
    save_answer,
)

Command = Literal["read", "write", "delete", "list", "history"]
COMMANDS: tuple[str, ...] = get_args(Command)

# The optional kv_store parameters each command takes; any other one is refused, so a
# model that confuses ``version`` with ``if_version`` hears about it.
KV_OPTIONS: dict[Command, frozenset[str]] = {
    "read": frozenset({"version"}),
    "write": frozenset({"payload", "if_version"}),
    "delete": frozenset(),
    "list": frozenset({"limit", "offset"}),
    "history": frozenset({"limit", "offset"}),
}

_Model = TypeVar("_Model", bound=BaseModel)


def validation_failure(errors: Iterable[Any]) -> InvalidInput:
    """pydantic's errors as the API's validation error (``invalid_kind``, ...)."""
    return invalid_input(pydantic_problems(errors))


def validated(model: type[_Model], data: dict[str, Any]) -> _Model:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise validation_failure(exc.errors()) from None


def _given(**values: Any) -> dict[str, Any]:
    """The optional arguments the caller gave (a missing one arrives as None)."""
    return {name: value for name, value in values.items() if value is not None}


# --- memories -------------------------------------------------------------------------


def memory_save(
    token: ApiToken,
    *,
    agent: str,
    kind: str,
    content: str,
    tags: list[str] | None,
    label: str | None,
    supersedes: str | None,
    session: str | None = None,
    valid_until: str | None = None,
) -> SavedOut | ConflictOut:
    """``memory_save`` as ``POST /api/agents/{slug}/memories``: saved, or a conflict."""
    memory = validated(
        MemoryInput,
        _given(
            kind=kind,
            content=content,
            tags=tags,
            label=label,
            supersedes=supersedes,
            session=session,
            valid_until=valid_until,
        ),
    )
    return save_answer(get_agent(token.team, agent, full=False), memory, Actor.for_token(token))


def memory_search(
    token: ApiToken, *, agent: str, query: str, kind: str | None, limit: int | None
) -> MemoryList:
    """``GET /api/agents/{slug}/memories?q=…&kind=…&limit=…``."""
    params = validated(ListParams, _given(q=query, kind=kind, limit=limit))
    return memory_list(get_agent(token.team, agent, full=False), params)


def memory_recall(token: ApiToken, *, agent: str, message: str) -> RecallOut:
    """``GET /api/agents/{slug}/recall?message=…``."""
    return recall_answer(get_agent(token.team, agent), message)


# --- the key/value store --------------------------------------------------------------


def kv_store(
    token: ApiToken,
    *,
    command: Command,
    id: str,
    payload: str | None,
    version: int | None,
    if_version: int | None,
    limit: int | None,
    offset: int | None,
) -> BaseModel:
    """One key/value command, answered as the matching ``/api/kv`` endpoint answers."""
    options = _given(
        payload=payload, version=version, if_version=if_version, limit=limit, offset=offset
    )
    if unused := sorted(set(options) - KV_OPTIONS[command]):
        raise invalid_input(
            (name, f"not a parameter of the {command!r} command") for name in unused
        )
    team = token.team
    if command == "read":
        return value_out(id, store.read(team, id, validated(ReadParams, options).version))
    if command == "write":
        body = validated(WriteIn, options)
        return written_out(
            id, store.write(team, id, body.payload, body.if_version, Actor.for_token(token))
        )
    if command == "delete":
        return DeletedOut(id=id, deleted_versions=store.delete(team, id, Actor.for_token(token)))
    page = validated(Page, options)
    if command == "list":
        return key_list(team, id, page)
    return history_out(team, id, page)


def kv_bootstrap(token: ApiToken) -> BootstrapOut:
    """``GET /api/bootstrap`` (SPEC §7.1)."""
    return BootstrapOut.model_validate(bootstrap(token.team).answer())


# --- the agents' composed prompts (resources and the prompt, SPEC §16) -----------------
# Reads only, like ``GET /api/agents/{slug}/composition``: no delivery, no event.


@dataclass(frozen=True)
class AgentRef:
    slug: str
    name: str


def agent_page(token: ApiToken, after: str | None, size: int) -> tuple[list[AgentRef], bool]:
    """At most ``size`` of the team's agents in slug order, those after ``after`` (None:
    from the first), and whether more follow: one indexed query, whatever the team's
    size."""
    agents = Agent.objects.filter(team_id=token.team_id).order_by("slug")
    if after is not None:
        agents = agents.filter(slug__gt=after)
    rows = list(agents.values_list("slug", "name")[: size + 1])
    return [AgentRef(slug, name) for slug, name in rows[:size]], len(rows) > size


@dataclass(frozen=True)
class SlugMatches:
    slugs: list[str]  # at most the limit asked for, in slug order
    total: int  # how many of the team's agents match


def agent_slugs(token: ApiToken, prefix: str, limit: int) -> SlugMatches:
    """The slugs of the team's agents that start with ``prefix``, the first ``limit`` in
    slug order, and how many match: one indexed query when they fit (the usual case),
    a count besides when they do not. Slugs are lowercase, so the prefix is too (``W``
    offers ``wren``), alike on every backend; a prefix no slug can start with matches
    nothing, without a query."""
    prefix = prefix.lower()
    if prefix and not is_agent_slug(prefix):
        return SlugMatches([], 0)
    agents = Agent.objects.filter(team_id=token.team_id, slug__startswith=prefix)
    slugs = list(agents.order_by("slug").values_list("slug", flat=True)[: limit + 1])
    if len(slugs) <= limit:
        return SlugMatches(slugs, len(slugs))
    return SlugMatches(slugs[:limit], agents.count())


def agent_prompt(token: ApiToken, slug: str) -> str:
    """The agent's composed prompt, the text a delivery would hand the model now."""
    return current_composition(stamped_agent(token.team, slug)).prompt.text


def agent_composition(token: ApiToken, slug: str) -> str:
    """The agent's composition, exactly the body ``GET /api/agents/{slug}/composition``
    answers."""
    return composition_answer(stamped_agent(token.team, slug))
