"""The approval queue as pages read it: pending promotions with where each would land
and what it would replace. A read model: it decides nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from django.db.models import QuerySet

from lens.core.diffs import WordOp, word_diff
from lens.models import Agent, AuthoredEntry, SectionDeclaration, Team
from memory.models import MemoryRecord, Promotion, PromotionStatus


def pending(team: Team, agent: str = "", section: str = "") -> QuerySet[Promotion]:
    """``team``'s pending promotions, oldest first, optionally of one agent or section."""
    rows = Promotion.objects.filter(agent__team=team, status=PromotionStatus.PENDING)
    if agent:
        rows = rows.filter(agent__slug=agent)
    if section:
        rows = rows.filter(section=section)
    return rows.select_related("record", "record__supersedes", "agent").order_by(
        "promoted_at", "record_id"
    )


def guarded_sections(team: Team) -> list[str]:
    """The ids of every guarded section any of ``team``'s agents declares (the filter)."""
    return sorted(
        set(
            SectionDeclaration.objects.filter(agent__team=team, promotion="guarded").values_list(
                "section_id", flat=True
            )
        )
    )


def team_agents(team: Team) -> list[Agent]:
    return list(Agent.objects.filter(team=team).order_by("name"))


@dataclass(frozen=True)
class Replaces:
    """What approving a row would replace: an authored entry (which keeps winning) or
    the approved memory the row supersedes, as a word diff.
    """

    kind: Literal["authored", "memory"]
    diff: list[tuple[WordOp, str]]
    id: str | None = None


@dataclass(frozen=True)
class QueueRow:
    promotion: Promotion
    record: MemoryRecord
    section_title: str | None
    replaces: Replaces | None


def queue_rows(promotions: list[Promotion]) -> list[QueueRow]:
    """Queue rows with their section titles and what each would replace (3 queries)."""
    agent_ids = {p.agent_id for p in promotions}
    titles = {
        (agent_id, section_id): title
        for agent_id, section_id, title in SectionDeclaration.objects.filter(
            agent_id__in=agent_ids
        ).values_list("agent_id", "section_id", "title")
    }
    # Keyed as it is looked up below, with a promotion's nullable section and key.
    authored: dict[tuple[int, str | None, str | None], Any] = {
        (agent_id, section_id, key): value
        for agent_id, section_id, key, value in AuthoredEntry.objects.filter(
            section__agent_id__in=agent_ids, key__in={p.key for p in promotions}
        ).values_list("section__agent_id", "section__section_id", "key", "value")
    }
    older_ids = [p.record.supersedes_id for p in promotions if p.record.supersedes_id]
    older_places = {
        record_id: (section, key)
        for record_id, section, key in Promotion.objects.filter(
            record_id__in=older_ids
        ).values_list("record_id", "section", "key")
    }
    rows = []
    for promotion in promotions:
        record = promotion.record
        replaces = None
        authored_value = authored.get((promotion.agent_id, promotion.section, promotion.key))
        older = record.supersedes
        if authored_value is not None:
            replaces = Replaces("authored", word_diff(str(authored_value), record.content))
        elif older is not None and older_places.get(older.pk) == (promotion.section, promotion.key):
            replaces = Replaces("memory", word_diff(older.content, record.content), older.pk)
        rows.append(
            QueueRow(
                promotion=promotion,
                record=record,
                section_title=titles.get((promotion.agent_id, promotion.section or "")),
                replaces=replaces,
            )
        )
    return rows
