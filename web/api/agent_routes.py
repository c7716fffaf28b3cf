"""``/api/agents``: list a team's agents, read and replace one's authored
configuration, and compose its prompt."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from django.http import HttpResponse
from ninja import Query, Router, Status
from pydantic import BaseModel, BeforeValidator, Field, StrictInt

from lens.actors import Actor
from lens.agents import get_agent, with_config
from lens.core.config import AgentConfig
from lens.core.counts import Counts
from lens.models import Agent, Via
from lens.revisions import revised_config
from memory.composed import stamped_agent
from memory.composition import compose_many
from memory.configuring import store_config
from web.answers.composition_answers import CompositionOut, composition_answer
from web.answers.proposal_answers import ProposedOut
from web.api.auth import ApiRequest, team_of, token_of
from web.api.params import INT_MAX, iso_8601

CONFIG_FIELDS = tuple(AgentConfig.model_fields)


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


class RevisedConfig(AgentConfig):
    """An agent's config as stored, with the number of its newest revision (SPEC §14)."""

    revision: int


class ConfigInput(AgentConfig):
    """A whole config to store. ``if_revision``: store it only if the agent's newest
    revision is this one (0: only if the agent does not exist yet). ``revision`` is
    accepted and ignored, so a config read with GET can be sent back as it is."""

    if_revision: StrictInt | None = Field(None, ge=0, le=INT_MAX)
    revision: StrictInt | None = Field(None, ge=0, le=INT_MAX)


def _revised(agent: Agent) -> RevisedConfig:
    config, number = revised_config(agent)
    # Validated already: only the revision number is added.
    return RevisedConfig.model_construct(**dict(config), revision=number)


@agents.get("/{slug}", response=RevisedConfig)
def get_agent_config(request: ApiRequest, slug: str) -> RevisedConfig:
    return _revised(get_agent(team_of(request), slug))


@agents.put("/{slug}", response={200: RevisedConfig, 201: RevisedConfig, 202: ProposedOut})
def put_agent_config(
    request: ApiRequest, slug: str, config: ConfigInput
) -> Status[RevisedConfig | ProposedOut]:
    """200 or 201 with the config as stored; 202 when the agent is protected: nothing
    changed, the change waits as a proposal (SPEC §14)."""
    given = AgentConfig.model_construct(**{name: getattr(config, name) for name in CONFIG_FIELDS})
    stored = store_config(
        team_of(request),
        slug,
        given,
        actor=Actor.for_token(token_of(request)),
        via=Via.API,
        if_revision=config.if_revision,
    )
    if stored.proposal is not None:
        return Status(202, ProposedOut.of(stored.proposal))
    # The config and number as the write's own transaction read them: read again here,
    # after the commit, they could be a later writer's.
    answer = RevisedConfig.model_construct(**dict(stored.config), revision=stored.revision)
    return Status(201 if stored.created else 200, answer)


class CompositionParams(BaseModel):
    # ISO 8601: the composition as it stood then (SPEC §14).
    as_of: Annotated[datetime | None, BeforeValidator(iso_8601)] = None


@agents.get("/{slug}/composition", response=CompositionOut)
def get_composition(
    request: ApiRequest, slug: str, params: Query[CompositionParams]
) -> HttpResponse:
    """The agent's composed prompt as it would be delivered now, or as it stood at
    ``as_of``. Records nothing."""
    # Now: the agent's row and its stamp only; its declarations are read when the
    # composition kept for that stamp is not there (``memory.composed``).
    team, as_of = team_of(request), params.as_of
    agent = get_agent(team, slug) if as_of else stamped_agent(team, slug)
    body = composition_answer(agent, as_of)
    return HttpResponse(body, content_type="application/json")
