"""``/api/agents``: list a team's agents, read and replace one's authored
configuration, and compose its prompt."""

from __future__ import annotations

from django.http import HttpResponse
from ninja import Router, Status
from pydantic import BaseModel

from lens.agents import config_of, get_agent, with_config
from lens.core.config import AgentConfig
from lens.core.counts import Counts
from lens.models import Agent
from lens.web.api.auth import ApiRequest, team_of
from memory.composition import compose, compose_many
from memory.configuring import store_agent
from memory.core.composition import Composition
from memory.deliveries.ledger import canonical_json


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
