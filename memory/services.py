"""``memory_save``: validate, route, gate, then commit record + promotion + events at once."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from lens.models import Agent, SectionDeclaration
from memory.actors import SYSTEM, Actor
from memory.models import HOLDING, EventKind, MemoryEvent, MemoryRecord, Promotion, Status
from memory.records import MemoryInput
from memory.registry import get_spec
from memory.routing import (
    Placement,
    RoutableRecord,
    RoutingContext,
    evaluate,
    placement_key,
    spec_key_source,
)
from memory.routing import SectionDeclaration as DeclaredSection

CONFLICT_HINT = "supersede it or use a different label"


class UnknownSupersedes(Exception):
    def __init__(self, record_id: str) -> None:
        super().__init__(f"No memory {record_id!r} of this agent to supersede.")
        self.record_id = record_id


@dataclass(frozen=True)
class Saved:
    id: str


@dataclass(frozen=True)
class Conflict:
    existing: MemoryRecord
    message: str = f"Another memory already holds this address: {CONFLICT_HINT}."


def routing_context(agent: Agent) -> RoutingContext:
    """The agent's section declarations only — never their entries."""
    rows = SectionDeclaration.objects.filter(agent=agent).values_list(
        "section_id", "title", "promotion"
    )
    return RoutingContext(
        sections=tuple(DeclaredSection(id=i, title=t, promotion=p) for i, t, p in rows)
    )


def holder_of(agent: Agent, address: str) -> Promotion | None:
    """The collision gate's lookup: one indexed equality query on promotion rows."""
    return (
        Promotion.objects.select_related("record")
        .filter(agent=agent, placement_key=address, status__in=HOLDING)
        .first()
    )


def _next_timestamp(agent: Agent) -> datetime:
    # One agent's sequential saves get strictly increasing timestamps, even when the
    # clock has not moved a microsecond (or stepped back).
    now = timezone.now()
    last = (
        MemoryRecord.objects.filter(agent=agent)
        .order_by("-created_at")
        .values_list("created_at", flat=True)
        .first()
    )
    if last is not None and now <= last:
        return last + timedelta(microseconds=1)
    return now


def _outcome(placement: Placement | None, ctx: RoutingContext) -> tuple[str, str, str | None]:
    """(status, reason, tier) for a fresh save."""
    if placement is None:
        return Status.DECLINED, "spec-declined", None
    section = ctx.section(placement.section)
    if section is None:
        return Status.DECLINED, "undeclared-section", None
    tier = section.promotion
    if tier == "locked":
        return Status.DECLINED, "locked-section", tier
    if tier == "earned":
        return Status.DECLINED, "earned-inert", tier
    if tier == "auto":
        return Status.APPROVED, "", tier
    return Status.PENDING, "", tier


def event(
    record_id: str, agent_id: int, kind: str, actor: Actor, at: datetime, **detail: object
) -> MemoryEvent:
    return MemoryEvent(
        record_id=record_id,
        agent_id=agent_id,
        kind=kind,
        actor=actor.label,
        actor_user=actor.user,
        actor_token=actor.token,
        detail=detail,
        at=at,
    )


def save_memory(agent: Agent, data: MemoryInput, actor: Actor) -> Saved | Conflict:
    """Save one memory for ``agent``. The answer never says where (or if) it composed."""
    older = None
    if data.supersedes is not None:
        older = MemoryRecord.objects.filter(agent=agent, pk=data.supersedes).first()
        if older is None:
            raise UnknownSupersedes(data.supersedes)

    spec = get_spec(agent.routing_spec)
    ctx = routing_context(agent)
    routable = RoutableRecord(
        kind=data.kind, content=data.content, tags=tuple(data.tags), label=data.label
    )
    placement = evaluate(spec, routable, ctx) if spec is not None else None
    address = None
    if placement is not None and ctx.section(placement.section) is not None:
        address = placement_key(placement)

    for _attempt in range(3):
        if address is not None:
            holder = holder_of(agent, address)
            if holder is not None and holder.record_id != data.supersedes:
                return Conflict(holder.record)
        try:
            return Saved(_commit(agent, data, actor, spec, routable, placement, ctx, older))
        except IntegrityError:
            # A concurrent save took the address between our lookup and our insert
            # (the partial unique index refused ours): look again and answer conflict.
            continue
    raise RuntimeError("memory_save could not settle a concurrent conflict")  # pragma: no cover


@transaction.atomic
def _commit(
    agent: Agent,
    data: MemoryInput,
    actor: Actor,
    spec: object,
    routable: RoutableRecord,
    placement: Placement | None,
    ctx: RoutingContext,
    older: MemoryRecord | None,
) -> str:
    at = _next_timestamp(agent)
    record = MemoryRecord.objects.create(
        agent=agent,
        kind=data.kind,
        content=data.content,
        tags=list(data.tags),
        label=data.label,
        supersedes=older,
        created_at=at,
    )
    events = [event(record.pk, record.agent_id, EventKind.SAVED, actor, at)]
    if older is not None:
        # Superseding is immediate and final, whatever becomes of the newer record.
        Promotion.objects.filter(record=older).exclude(status=Status.SUPERSEDED).update(
            status=Status.SUPERSEDED
        )
        events.append(
            event(older.pk, older.agent_id, EventKind.SUPERSEDED, actor, at, by=record.id)
        )

    status, reason, tier = _outcome(placement, ctx)
    Promotion.objects.create(
        record=record,
        agent=agent,
        section=placement.section if placement else None,
        key=placement.key if placement else None,
        placement_key=placement_key(placement) if placement else None,
        key_source=spec_key_source(spec, routable) if placement else None,  # type: ignore[arg-type]
        spec_key=getattr(spec, "key", ""),
        spec_version=getattr(spec, "version", ""),
        tier=tier,
        status=status,
        reason=reason,
        promoted_at=at,
        decided_at=at if status == Status.APPROVED else None,
    )
    if status == Status.APPROVED:
        events.append(
            event(
                record.pk,
                record.agent_id,
                EventKind.PROMOTED,
                SYSTEM,
                at,
                section=placement.section,
            )
        )  # type: ignore[union-attr]
    elif status == Status.PENDING:
        events.append(
            event(
                record.pk, record.agent_id, EventKind.QUEUED, SYSTEM, at, section=placement.section
            )
        )  # type: ignore[union-attr]
    else:
        events.append(
            event(record.pk, record.agent_id, EventKind.DECLINED, SYSTEM, at, reason=reason)
        )
    MemoryEvent.objects.bulk_create(events)
    return record.id
