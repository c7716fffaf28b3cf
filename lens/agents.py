"""Agents between the ORM and the pure core: load, store and compose configurations."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db import transaction
from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce

from lens.core.background import Background
from lens.core.config import AgentConfig
from lens.models import (
    Agent,
    AuthoredEntry,
    AwarenessSource,
    Capability,
    SectionDeclaration,
    Team,
)


def with_config(queryset: QuerySet[Agent]) -> QuerySet[Agent]:
    """Prefetch the small relations ``config_of`` reads; entries come in one more query
    (``_entry_values``), so a page costs a fixed number of queries whatever its size.
    """
    return queryset.prefetch_related("capabilities", "awareness_sources", "sections")


def _entry_values(agent: Agent) -> dict[int, list[tuple[str, Any]]]:
    """Authored entries by section pk, in order, as plain tuples.

    Thousands of entries are read as values, not model instances: building instances
    cost several times the query itself.
    """
    cached: dict[int, list[tuple[str, Any]]] | None = getattr(agent, "_lens_entries", None)
    if cached is None:
        cached = defaultdict(list)
        rows = (
            AuthoredEntry.objects.filter(section__agent=agent)
            .order_by("section_id", "position", "id")
            .values_list("section_id", "key", "value")
        )
        for section_pk, key, value in rows:
            cached[section_pk].append((key, value))
        agent._lens_entries = cached  # type: ignore[attr-defined]
    return cached


def with_counts(queryset: QuerySet[Agent]) -> QuerySet[Agent]:
    """Annotate declared sections and authored entries without loading them."""
    sections = (
        SectionDeclaration.objects.filter(agent=OuterRef("pk"))
        .order_by()
        .values("agent")
        .annotate(n=Count("pk"))
        .values("n")
    )
    entries = (
        AuthoredEntry.objects.filter(section__agent=OuterRef("pk"))
        .order_by()
        .values("section__agent")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return queryset.annotate(
        section_count=Coalesce(Subquery(sections), 0),
        authored_entry_count=Coalesce(Subquery(entries), 0),
    )


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
def store_config(team: Team, slug: str, config: AgentConfig) -> tuple[Agent, bool]:
    """Create or replace an agent's whole authored configuration, all or nothing.

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
