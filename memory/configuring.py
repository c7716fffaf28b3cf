"""Operations on an agent's configuration that involve memory: storing a config (it
names a routing spec) and applying a preset (a spec plus the sections it expects).
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import Max

from lens.agents import check_slug, write_config
from lens.core.config import AgentConfig
from lens.models import Agent, SectionDeclaration, Team
from memory.core.presets import Preset
from memory.registry import check_spec_key


def store_agent(team: Team, slug: str, config: AgentConfig) -> tuple[Agent, bool]:
    """Create or replace ``team``'s agent ``slug`` with ``config``, all or nothing.
    Returns the agent and whether it was created.

    Raises InvalidSlug or UnknownRoutingSpec, having written nothing.
    """
    check_slug(slug)
    check_spec_key(config.routing_spec)
    return write_config(team, slug, config)


@transaction.atomic
def apply_preset(agent: Agent, spec: Preset) -> list[str]:
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
