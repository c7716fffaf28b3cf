"""Agents between the ORM and the pure core: find, load and write authored configurations.

Storing a config through an operation goes through ``memory.agents.store_agent``, which
also checks the routing spec the config names (specs belong to memory).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from lens.core.background import Background
from lens.core.config import AgentConfig, is_agent_slug
from lens.core.errors import DomainError
from lens.models import (
    Agent,
    AuthoredEntry,
    AwarenessSource,
    Capability,
    SectionDeclaration,
    Team,
)


class AgentNotFound(DomainError):
    code = "agent_not_found"


class InvalidSlug(DomainError):
    code = "invalid_slug"


def check_slug(slug: str) -> str:
    if not is_agent_slug(slug):
        raise InvalidSlug(
            f"Agent slug {slug!r} must be 1-64 lowercase letters, digits or '-', "
            "starting with a letter or digit."
        )
    return slug


def get_agent(team: Team, slug: str, *, full: bool = True) -> Agent:
    """``team``'s agent ``slug``. Another team's agent does not exist here.

    ``full`` prefetches the authored configuration, for composition.
    """
    queryset = Agent.objects.filter(team=team, slug=slug)
    agent = (with_config(queryset) if full else queryset).first()
    if agent is None:
        raise AgentNotFound(f"No agent {slug!r} in this team.")
    agent.team = team  # already loaded; saves a query
    return agent


def with_config(queryset: QuerySet[Agent]) -> QuerySet[Agent]:
    """Prefetch the small relations ``config_of`` reads; entries come in one more query
    (``_entry_values``), so a page costs a fixed number of queries whatever its size.
    """
    return queryset.prefetch_related("capabilities", "awareness_sources", "sections")


def load_entry_values(agents: Sequence[Agent]) -> None:
    """Load the authored entries of ``agents`` in one query, as plain values.

    Thousands of entries are read as tuples, not model instances: building instances
    cost several times the query itself.
    """
    missing = [agent for agent in agents if not hasattr(agent, "_lens_entries")]
    if not missing:
        return
    by_section: dict[int, list[tuple[str, Any]]] = defaultdict(list)
    rows = (
        AuthoredEntry.objects.filter(section__agent__in=[agent.pk for agent in missing])
        .order_by("section_id", "position", "id")
        .values_list("section_id", "key", "value")
    )
    for section_pk, key, value in rows:
        by_section[section_pk].append((key, value))
    for agent in missing:
        agent._lens_entries = by_section


def _entry_values(agent: Agent) -> dict[int, list[tuple[str, Any]]]:
    load_entry_values([agent])
    return agent._lens_entries


def background_of(agent: Agent) -> Background:
    entries = _entry_values(agent)
    return Background.model_validate(
        {
            "sections": [
                {
                    "id": section.section_id,
                    "title": section.title,
                    "promotion": section.promotion,
                    "entries": [{"key": key, "value": value} for key, value in entries[section.pk]],
                }
                for section in agent.sections.all()
            ]
        }
    )


def config_of(agent: Agent) -> AgentConfig:
    return AgentConfig.model_validate(
        {
            "name": agent.name,
            "persona": agent.persona,
            "tone": agent.tone,
            "objective": agent.objective,
            "capabilities": [
                {"name": c.name, "description": c.description} for c in agent.capabilities.all()
            ],
            "manual": agent.manual,
            "routing_spec": agent.routing_spec,
            "background": background_of(agent),
            "awareness": [
                {"name": a.name, "description": a.description, "access_method": a.access_method}
                for a in agent.awareness_sources.all()
            ],
            "recall_pinned_candidates": agent.recall_pinned_candidates,
        }
    )


@transaction.atomic
def write_config(team: Team, slug: str, config: AgentConfig) -> tuple[Agent, bool]:
    """Create or replace an agent's whole authored configuration, all or nothing
    (the slug and the routing spec are checked by ``memory.agents.store_agent``).

    Declarations are rewritten wholesale; promotion rows refer to sections by their
    string id, so nothing that memory decided is lost when declarations change.
    """
    agent, created = Agent.objects.select_for_update().get_or_create(
        team=team, slug=slug, defaults={"name": config.name}
    )
    for field in ("name", "persona", "tone", "objective", "manual", "routing_spec"):
        setattr(agent, field, getattr(config, field))
    agent.recall_pinned_candidates = config.recall_pinned_candidates
    agent.save()

    agent.capabilities.all().delete()
    agent.awareness_sources.all().delete()
    agent.sections.all().delete()
    Capability.objects.bulk_create(
        Capability(agent=agent, name=c.name, description=c.description, position=i)
        for i, c in enumerate(config.capabilities)
    )
    AwarenessSource.objects.bulk_create(
        AwarenessSource(
            agent=agent,
            name=a.name,
            description=a.description,
            access_method=a.access_method,
            position=i,
        )
        for i, a in enumerate(config.awareness)
    )
    declared = SectionDeclaration.objects.bulk_create(
        SectionDeclaration(
            agent=agent, section_id=s.id, title=s.title, promotion=s.promotion, position=i
        )
        for i, s in enumerate(config.background.sections)
    )
    AuthoredEntry.objects.bulk_create(
        AuthoredEntry(section=row, key=entry.key, value=entry.value, position=i)
        for row, section in zip(declared, config.background.sections, strict=True)
        for i, entry in enumerate(section.entries)
    )
    return agent, created
