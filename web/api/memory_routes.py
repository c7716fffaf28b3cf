"""The memory API: save (``memory_save``) and list an agent's memories."""

from __future__ import annotations

from typing import Literal

from ninja import Query, Router, Status
from pydantic import BaseModel, Field

from lens.actors import Actor
from lens.agents import get_agent
from lens.models import Agent
from memory.core.records import MemoryInput, MemoryView
from memory.preview import preview_save
from memory.queries import memory_page, view_of
from memory.recall import recall
from memory.saving import Conflict, save_memory
from web.api.auth import ApiRequest, team_of, token_of
from web.api.params import INT_MAX
from web.costly import costly_when, searching

router = Router(tags=["memories"])


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


@router.post("/{slug}/memories", response={201: SavedOut, 409: ConflictOut})
def save(request: ApiRequest, slug: str, memory: MemoryInput) -> Status[SavedOut | ConflictOut]:
    """``memory_save``. The answer is ``saved`` or ``conflict``: it never says whether or
    where the memory was composed (the model would learn to rephrase until it is).
    """
    agent = get_agent(team_of(request), slug, full=False)
    answer = save_answer(agent, memory, Actor.for_token(token_of(request)))
    return Status(409 if isinstance(answer, ConflictOut) else 201, answer)


def save_answer(agent: Agent, memory: MemoryInput, actor: Actor) -> SavedOut | ConflictOut:
    """``memory_save`` as this API answers it (the MCP tool too): saved, or a conflict."""
    result = save_memory(agent, memory, actor)
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


class PlacementOut(BaseModel):
    section: str
    key: str


class PreviewOut(BaseModel):
    outcome: Literal["approved", "pending", "declined", "conflict"]
    placement: PlacementOut | None
    key_source: Literal["label", "content"] | None
    tier: Literal["auto", "guarded", "locked", "earned"] | None
    reason: Literal["spec-declined", "undeclared-section", "locked-section", "earned-inert"] | None
    existing: MemoryView | None = Field(description="The holder, when the outcome is conflict")
    would_compose: bool = Field(description="Approved, and the fold would render it now")
    fold_reason: Literal["authored-wins", "over-budget"] | None


@router.post("/{slug}/memories/preview", response=PreviewOut)
def preview(request: ApiRequest, slug: str, memory: MemoryInput) -> PreviewOut:
    """What saving this memory would do, without saving it: where it would land (the
    placement, its key source and tier), the outcome, the holder a conflict would name,
    and whether the fold would compose it now. Writes nothing. For people and tools that
    configure agents; ``memory_save`` itself never reveals routing.
    """
    found = preview_save(get_agent(team_of(request), slug), memory)
    placement = found.placement
    return PreviewOut(
        outcome=found.outcome,
        placement=PlacementOut(section=placement.section, key=placement.key) if placement else None,
        key_source=found.key_source,
        tier=found.tier,
        reason=found.reason,
        existing=view_of(found.existing) if found.existing is not None else None,
        would_compose=found.would_compose,
        fold_reason=found.fold_reason
        if found.fold_reason in ("authored-wins", "over-budget")
        else None,
    )


@router.get("/{slug}/memories", response=MemoryList)
@costly_when(searching)
def list_memories(request: ApiRequest, slug: str, params: Query[ListParams]) -> MemoryList:
    """Newest first (ties by id). Rows that no longer parse are skipped and counted."""
    return memory_list(get_agent(team_of(request), slug, full=False), params)


class RecallParams(BaseModel):
    message: str


class RecallOut(BaseModel):
    text: str
    memory_ids: list[str]


@router.get("/{slug}/recall", response=RecallOut)
def recall_for(request: ApiRequest, slug: str, params: Query[RecallParams]) -> RecallOut:
    """The ``### Recalled Memories`` block for a message: profile memories, pinned
    candidates (when the agent opts in), then what the message's words find; never a
    memory already in the prompt, never a superseded one.
    """
    return recall_answer(get_agent(team_of(request), slug), params.message)


def recall_answer(agent: Agent, message: str) -> RecallOut:
    found = recall(agent, message)
    return RecallOut(text=found.text, memory_ids=list(found.memory_ids))
