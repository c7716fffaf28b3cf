"""A memory save's answer (saved or a conflict), a page of memories and a recall: as
``/api/agents/{slug}/memories`` and ``/recall`` answer, and the MCP tools
``memory_save``, ``memory_search`` and ``memory_recall`` with them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from lens.actors import Actor
from lens.models import Agent
from memory.core.recall import RecallTier
from memory.core.records import MemoryInput, MemoryView
from memory.core.routing import RoutingContext
from memory.queries import memory_page, view_of
from memory.recall import recall
from memory.saving import Conflict, save_memory
from web.api.params import INT_MAX


class SavedOut(BaseModel):
    status: Literal["saved"] = "saved"
    id: str


class ConflictOut(BaseModel):
    status: Literal["conflict"] = "conflict"
    existing: MemoryView
    message: str


class MemoryList(BaseModel):
    memories: list[MemoryView]
    skipped: int = Field(description="Stored rows that no longer parse and were left out")
    limit: int
    offset: int
    next_offset: int | None


# Offsets are bounded like the database's integers: a larger one would overflow the
# query instead of finding nothing, so it is refused as invalid (422).
OFFSET_MAX = INT_MAX


class ListParams(BaseModel):
    q: str | None = None
    kind: str | None = None
    limit: int = Field(50, ge=1, le=200)
    offset: int = Field(0, ge=0, le=OFFSET_MAX)


def save_answer(
    agent: Agent, memory: MemoryInput, actor: Actor, ctx: RoutingContext | None = None
) -> SavedOut | ConflictOut:
    """``memory_save`` as the API answers it (the MCP tool too): saved, or a conflict.
    ``ctx``: the agent's routing context, when the caller read it with the agent."""
    result = save_memory(agent, memory, actor, ctx)
    if isinstance(result, Conflict):
        return ConflictOut(existing=view_of(result.existing), message=result.message)
    return SavedOut(id=result.id)


def memory_list(agent: Agent, params: ListParams) -> MemoryList:
    page = memory_page(agent, params.kind, params.limit, params.offset, query=params.q)
    return MemoryList(
        memories=page.memories,
        skipped=page.skipped,
        limit=params.limit,
        offset=params.offset,
        next_offset=page.next_offset,
    )


class RecallTierOut(BaseModel):
    tier: RecallTier
    memory_ids: list[str]


class RecallOut(BaseModel):
    text: str
    memory_ids: list[str]
    tiers: list[RecallTierOut] = Field(
        description="Every tier in order (profile, pinned, spilled, hits), an empty one "
        "included, with the ids of the lines it brought"
    )


def recall_answer(agent: Agent, message: str) -> RecallOut:
    found = recall(agent, message)
    return RecallOut(
        text=found.text,
        memory_ids=list(found.memory_ids),
        tiers=[RecallTierOut(tier=tier, memory_ids=list(ids)) for tier, ids in found.tiers],
    )
