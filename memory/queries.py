"""Reading what the fold needs, in a fixed number of queries for any number of agents."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django.db.models.functions import Substr

from lens.models import Agent
from memory.models import Promotion, Status
from memory.report import PromotionState
from memory.routing import PlacedRecord


def promotion_states(agent_ids: Iterable[int]) -> dict[int, list[PromotionState]]:
    """Every record's promotion status and save-time reason, by agent (one query)."""
    states: dict[int, list[PromotionState]] = defaultdict(list)
    rows = Promotion.objects.filter(agent_id__in=list(agent_ids)).values_list(
        "agent_id", "record_id", "status", "reason"
    )
    for agent_id, record_id, status, reason in rows:
        states[agent_id].append(PromotionState(memory_id=record_id, status=status, reason=reason))
    return states


def placed_records(agent_ids: Iterable[int]) -> dict[int, list[PlacedRecord]]:
    """Approved records joined with their committed placement, by agent (one query).

    Approved rows are never superseded: superseding moves the row to ``superseded``.
    """
    placed: dict[int, list[PlacedRecord]] = defaultdict(list)
    rows = Promotion.objects.filter(
        agent_id__in=list(agent_ids), status=Status.APPROVED, section__isnull=False
    ).values_list(
        "agent_id",
        "record_id",
        "record__kind",
        "record__content",
        "record__tags",
        "record__label",
        "record__created_at",
        "section",
        "key",
        "key_source",
    )
    for agent_id, rid, kind, content, tags, label, created, section, key, source in rows:
        placed[agent_id].append(
            PlacedRecord(
                id=rid,
                kind=kind,
                content=content,
                tags=tuple(tags or ()),
                label=label,
                created_at=created,
                section=section,
                key=key,
                key_source=source or "content",
            )
        )
    return placed


SNIPPET_CHARS = 140


def record_briefs(agent: Agent) -> tuple[dict[str, dict[str, Any]], list[PromotionState]]:
    """Id, kind, label and the start of the content of every record, with its
    promotion state — one query serving both the page and the composition.

    Only the first characters of the content are read, so an agent with thousands of
    long memories stays cheap to show.
    """
    rows = Promotion.objects.filter(agent=agent).values_list(
        "record_id",
        "status",
        "reason",
        "record__kind",
        "record__label",
        Substr("record__content", 1, SNIPPET_CHARS + 1),
    )
    briefs = {}
    states = []
    for record_id, status, reason, kind, label, head in rows:
        snippet = head if len(head) <= SNIPPET_CHARS else head[:SNIPPET_CHARS].rstrip() + "…"
        briefs[record_id] = {"kind": kind, "label": label, "snippet": snippet}
        states.append(PromotionState(memory_id=record_id, status=status, reason=reason))
    return briefs, states
