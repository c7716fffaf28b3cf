"""Applying a routing preset to an agent: its spec plus the sections it expects."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Max

from lens.models import Agent, SectionDeclaration


@transaction.atomic
def apply_preset(agent: Agent, spec: Any) -> list[str]:
    """Select ``spec`` for ``agent`` and declare the preset's sections it lacks.

    Sections the agent already declares are left as they are (their tiers are the
    developer's decision); new ones are appended. Returns the ids added.
    """
    existing = set(agent.sections.values_list("section_id", flat=True))
    position = (agent.sections.aggregate(top=Max("position"))["top"] or 0) + 1
    added = []
    for declaration in spec.sections:
        if declaration.id in existing:
            continue
        SectionDeclaration.objects.create(
            agent=agent,
            section_id=declaration.id,
            title=declaration.title,
            promotion=declaration.promotion,
            position=position,
        )
        position += 1
        added.append(declaration.id)
    agent.routing_spec = spec.key
    agent.save(update_fields=["routing_spec", "updated_at"])
    return added
