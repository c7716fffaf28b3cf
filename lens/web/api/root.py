"""The JSON HTTP API: one NinjaAPI, bearer-authenticated, with the error envelope."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI, Router, Status
from ninja.parser import Parser
from pydantic import BaseModel

from lens.agents import config_of, get_agent, with_config
from lens.core.config import AgentConfig
from lens.core.counts import Counts
from lens.core.text import unstorable_path
from lens.models import Agent
from lens.web.api import errors as apierrors
from lens.web.api.auth import ApiRequest, TeamToken, team_of
from lens.web.api.delivery_routes import agent_deliveries
from lens.web.api.delivery_routes import deliveries as deliveries_router
from lens.web.api.errors import ApiError
from lens.web.api.kv_routes import bootstrap_router
from lens.web.api.kv_routes import router as kv_router
from lens.web.api.memory_routes import router as memory_router
from lens.web.api.rendering import ApiRenderer
from memory.composition import compose, compose_many
from memory.configuring import store_agent
from memory.core.composition import Composition
from memory.deliveries.ledger import canonical_json


class _DuplicateKey(Exception):
    """A JSON object named the same key twice (``args``: the key)."""


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # json.loads would keep the last value silently; the contract refuses the body.
    data = dict(pairs)
    if len(data) != len(pairs):
        seen: set[str] = set()
        for key, _value in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return data


class _JsonParser(Parser):
    def parse_body(self, request: HttpRequest) -> Any:
        if not request.body.strip():
            # No body is an empty object: a bare ``curl -X POST`` of an endpoint whose
            # fields are all optional works; required fields are then reported missing.
            return {}
        try:
            data = json.loads(request.body, object_pairs_hook=_refuse_duplicates)
        except _DuplicateKey as exc:
            loc = ("body", "", *exc.args)
            raise apierrors.validation_error(
                [{"loc": loc, "msg": "duplicate key in a JSON object"}]
            ) from None
        except ValueError as exc:
            raise ApiError(
                422, "invalid_request", f"Request body is not valid JSON: {exc}"
            ) from exc
        # Refused on every backend alike (SQLite would store it, PostgreSQL would fail).
        if (found := unstorable_path(data)) is not None:
            path, why = found
            # validation_error strips ninja's ("body", <parameter>) prefix from a loc.
            loc = ("body", "", *path)
            raise apierrors.validation_error([{"loc": loc, "msg": why}])
        return data


api = NinjaAPI(
    title="Composition Lens API",
    version="1",
    description="Agents, their composed prompts, memories and the versioned key/value store.",
    auth=TeamToken(),
    parser=_JsonParser(),
    renderer=ApiRenderer(),
    docs_url="/docs",
    openapi_url="/openapi.json",
)
apierrors.install(api)


class AgentSummary(BaseModel):
    slug: str
    name: str
    routing_spec: str | None
    counts: Counts


class AgentList(BaseModel):
    agents: list[AgentSummary]


agents = Router(tags=["agents"])


@agents.get("", response=AgentList)
def list_agents(request: ApiRequest) -> AgentList:
    agents = list(with_config(Agent.objects.filter(team=team_of(request))).order_by("slug"))
    compositions = compose_many(agents)
    return AgentList(
        agents=[
            AgentSummary(
                slug=agent.slug,
                name=agent.name,
                routing_spec=agent.routing_spec,
                counts=compositions[agent.pk].counts,
            )
            for agent in agents
        ]
    )


@agents.get("/{slug}", response=AgentConfig)
def get_agent_config(request: ApiRequest, slug: str) -> AgentConfig:
    return config_of(get_agent(team_of(request), slug))


@agents.put("/{slug}", response={200: AgentConfig, 201: AgentConfig})
def put_agent_config(request: ApiRequest, slug: str, config: AgentConfig) -> Status[AgentConfig]:
    agent, created = store_agent(team_of(request), slug, config)
    stored = config_of(with_config(Agent.objects.all()).get(pk=agent.pk))
    return Status(201 if created else 200, stored)


@agents.get("/{slug}/composition", response=Composition)
def get_composition(request: ApiRequest, slug: str) -> HttpResponse:
    """The agent's composed prompt as it would be delivered now. Records nothing."""
    composition = compose(get_agent(team_of(request), slug))
    # Written by pydantic in one call, as a delivery's stored JSON is: for a large agent
    # that is several times faster than dumping to Python values and encoding those.
    return HttpResponse(canonical_json(composition), content_type="application/json")


# The key/value routes first: agents read keys every session, and URL resolution tries
# the patterns in order (no two of these prefixes overlap).
api.add_router("/kv", kv_router)
api.add_router("/bootstrap", bootstrap_router)
api.add_router("/agents", agents)
api.add_router("/agents", memory_router)
api.add_router("/agents", agent_deliveries)
api.add_router("/deliveries", deliveries_router)
