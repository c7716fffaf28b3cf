"""The memory API: save (``memory_save``) and list an agent's memories."""

from __future__ import annotations

from typing import Literal

from ninja import Query, Router, Status
from pydantic import BaseModel, Field

from lens.actors import Actor
from lens.agents import get_agent
from memory.core.records import MemoryInput, MemoryView
from memory.preview import preview_save
from memory.queries import view_of
from memory.save_reads import SaveReads, token_with_agent
from web.answers.memory_answers import (
    ConflictOut,
    ListParams,
    MemoryList,
    RecallOut,
    SavedOut,
    memory_list,
    recall_answer,
    save_answer,
)
from web.api.auth import ApiRequest, TeamToken, team_of, token_of, with_agent_reads
from web.costly import costly_when, searching

router = Router(tags=["memories"])

_SAVE_READS = "memory_save_reads"


# A save's token check, with its agent and the agent's declarations in the same statement
# (one round trip where there were three): they wait on the request for ``save``.
_token_with_agent = with_agent_reads(token_with_agent, _SAVE_READS)


@router.post(
    "/{slug}/memories",
    response={201: SavedOut, 409: ConflictOut},
    auth=TeamToken(lookup=_token_with_agent),
)
def save(request: ApiRequest, slug: str, memory: MemoryInput) -> Status[SavedOut | ConflictOut]:
    """``memory_save``. The answer is ``saved`` or ``conflict``: it never says whether or
    where the memory was composed (the model would learn to rephrase until it is).
    """
    found = getattr(request, _SAVE_READS, None)
    actor = Actor.for_token(token_of(request))
    if isinstance(found, SaveReads) and found.agent is not None and found.agent.slug == slug:
        answer = save_answer(found.agent, memory, actor, found.ctx)
    else:
        # No such agent: ``get_agent`` refuses it as every route does.
        answer = save_answer(get_agent(team_of(request), slug, full=False), memory, actor)
    return Status(409 if isinstance(answer, ConflictOut) else 201, answer)


class PlacementOut(BaseModel):
    section: str
    key: str


class SignalOut(BaseModel):
    kind: Literal["override", "role", "imperative", "prompt-structure"]
    text: str = Field(description="The exact span of the content that matched")


class ScreenOut(BaseModel):
    verdict: Literal["fact", "instruction"]
    signals: list[SignalOut]


class PreviewOut(BaseModel):
    outcome: Literal["approved", "pending", "declined", "conflict"]
    placement: PlacementOut | None
    key_source: Literal["label", "content"] | None
    tier: Literal["auto", "guarded", "locked", "earned"] | None
    reason: (
        Literal[
            "spec-declined",
            "undeclared-section",
            "locked-section",
            "earning",
            "instruction-shaped",
            "earned",
        ]
        | None
    )
    existing: MemoryView | None = Field(description="The holder, when the outcome is conflict")
    would_compose: bool = Field(description="Approved, and the fold would render it now")
    fold_reason: Literal["authored-wins", "over-budget"] | None
    screen: ScreenOut = Field(description="Whether the content reads as an instruction")


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
        screen=ScreenOut(
            verdict=found.screen.verdict,
            signals=[SignalOut(kind=s.kind, text=s.text) for s in found.screen.signals],
        ),
    )


@router.get("/{slug}/memories", response=MemoryList)
@costly_when(searching)
def list_memories(request: ApiRequest, slug: str, params: Query[ListParams]) -> MemoryList:
    """Newest first (ties by id). Rows that no longer parse are skipped and counted."""
    return memory_list(get_agent(team_of(request), slug, full=False), params)


class RecallParams(BaseModel):
    message: str


@router.get("/{slug}/recall", response=RecallOut)
def recall_for(request: ApiRequest, slug: str, params: Query[RecallParams]) -> RecallOut:
    """The ``### Recalled Memories`` block for a message: profile memories, pinned
    candidates (when the agent opts in), then what the message's words find; never a
    memory already in the prompt, never a superseded one.
    """
    return recall_answer(get_agent(team_of(request), slug), params.message)
