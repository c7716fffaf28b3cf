"""The memory API: save (``memory_save``) and list an agent's memories."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from django.http import HttpRequest
from ninja import Query, Router, Status
from pydantic import BaseModel, Field, ValidationError

from lens.apiauth import get_agent, token_of
from lens.apierrors import ApiError
from memory.actors import Actor
from memory.models import MemoryRecord
from memory.records import MemoryInput
from memory.records import MemoryRecord as RecordSchema
from memory.services import Conflict, UnknownSupersedes, save_memory

router = Router(tags=["memories"])


class MemoryView(BaseModel):
    """What the model may see of a record: no routing outcome, ever."""

    id: str
    kind: str
    content: str
    tags: list[str]
    label: str | None
    supersedes: str | None
    created_at: datetime


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


class ListParams(BaseModel):
    q: str | None = None
    kind: str | None = None
    limit: int = Field(50, ge=1, le=200)
    offset: int = Field(0, ge=0)


def view_of(record: MemoryRecord) -> MemoryView:
    parsed = RecordSchema.model_validate(
        {
            "id": record.pk,
            "kind": record.kind,
            "content": record.content,
            "tags": tuple(record.tags or ()),
            "label": record.label,
            "supersedes": record.supersedes_id,
            "created_at": record.created_at,
        }
    )
    return MemoryView(**{**parsed.model_dump(), "tags": list(parsed.tags)})


@router.post("/{slug}/memories", response={201: SavedOut, 409: ConflictOut})
def save(request: HttpRequest, slug: str, memory: MemoryInput) -> Status[SavedOut | ConflictOut]:
    """``memory_save``. The answer is ``saved`` or ``conflict``: it never says whether or
    where the memory was composed (the model would learn to rephrase until it is).
    """
    agent = get_agent(request, slug, full=False)
    try:
        result = save_memory(agent, memory, Actor.for_token(token_of(request)))
    except UnknownSupersedes as exc:
        raise ApiError(422, "unknown_supersedes", str(exc), supersedes=exc.record_id) from None
    if isinstance(result, Conflict):
        return Status(409, ConflictOut(existing=view_of(result.existing), message=result.message))
    return Status(201, SavedOut(id=result.id))


@router.get("/{slug}/memories", response=MemoryList)
def list_memories(request: HttpRequest, slug: str, params: Query[ListParams]) -> MemoryList:
    """Newest first (ties by id). Rows that no longer parse are skipped and counted."""
    agent = get_agent(request, slug, full=False)
    if params.q is not None:
        raise ApiError(422, "search_unavailable", "Search is not available yet; list without q.")
    rows = MemoryRecord.objects.filter(agent=agent).order_by("-created_at", "id")
    if params.kind:
        rows = rows.filter(kind=params.kind)
    page = list(rows[params.offset : params.offset + params.limit + 1])
    more = len(page) > params.limit
    views, skipped = [], 0
    for record in page[: params.limit]:
        try:
            views.append(view_of(record))
        except ValidationError:
            skipped += 1  # one bad row costs one record, never the listing
    return MemoryList(
        memories=views,
        skipped=skipped,
        limit=params.limit,
        offset=params.offset,
        next_offset=params.offset + params.limit if more else None,
    )
