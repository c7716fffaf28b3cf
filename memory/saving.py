"""``memory_save``: validate, route, then gate and commit record + promotion + events in
one transaction.

Over the API a save is seven round trips on PostgreSQL: the token with the agent and its
declarations (``memory.save_reads``); then ``BEGIN``; the gate's probe with the agent's
newest time (one statement); the record, its search document, its promotion row and its
events (one statement, ``lens.inserts``); the audit head's bump with the agent's lock;
the audit events with the head's hash and the team's webhook endpoints; ``COMMIT``.
``docs/performance.md`` times each.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from lens.actors import SYSTEM, Actor
from lens.core.errors import DomainError
from lens.inserts import insert_rows
from lens.models import Agent, SectionDeclaration
from lens.rows import aware
from lens.sql import statement_cursor
from lens.tracing import MEMORY_ID, agent_attributes, span
from memory import search
from memory.core.outcome import route_outcome, screened
from memory.core.records import MemoryInput
from memory.core.routing import (
    DeclaredSection,
    Placement,
    RoutableRecord,
    RoutingContext,
    RoutingSpec,
    evaluate,
    placement_key,
    spec_key_source,
)
from memory.core.screening import Screen, screen
from memory.core.sightings import same_content
from memory.events import saved_details, write_events
from memory.models import (
    HOLDING,
    EventKind,
    MemoryRecord,
    Promotion,
    PromotionStatus,
    new_event,
)
from memory.moments import after_newest, moment_after
from memory.registry import get_spec
from memory.sightings import HolderMoved, approve_earned, lock_holder, sightings_of

CONFLICT_HINT = "supersede it or use a different label"

# The screen a save applies (SPEC §19.4). A name of this module only so that the
# benchmark can time a save without it (``bench/screening_bench.py``, a save's p50 with
# against without); nothing else replaces it, and no setting turns it off.
save_screen: Callable[[str], Screen] = screen


class UnknownSupersedes(DomainError):
    code = "unknown_supersedes"

    def __init__(self, record_id: str) -> None:
        super().__init__(
            f"No memory {record_id!r} of this agent to supersede.", supersedes=record_id
        )


class InvalidValidUntil(DomainError):
    """A ``valid_until`` that does not fall after the moment it is set (SPEC §19.2)."""

    code = "invalid_valid_until"


def check_valid_until(valid_until: datetime | None, at: datetime) -> None:
    """Raise InvalidValidUntil unless ``valid_until`` is None or after ``at``."""
    if valid_until is not None and valid_until <= at:
        raise InvalidValidUntil(
            f"valid_until must be after {at.isoformat()}; {valid_until.isoformat()} is not.",
            valid_until=valid_until.isoformat(),
        )


@dataclass(frozen=True)
class Saved:
    id: str


@dataclass(frozen=True)
class SightingOf:
    """The gate's answer for a save that saw an earning memory again (SPEC §19.1)."""

    holder: str


@dataclass(frozen=True)
class Conflict:
    existing: MemoryRecord
    message: str = f"Another memory already holds this address: {CONFLICT_HINT}."


_DECLARATIONS = (
    f"SELECT section_id, title, promotion FROM {SectionDeclaration._meta.db_table} "
    "WHERE agent_id = %s ORDER BY position, id"
)
# The holder and, for a sighting's comparison, its tier and content: the record is
# joined on its primary key, so this stays one indexed lookup.
_HOLDER = (
    f"SELECT p.record_id, p.tier, r.content FROM {Promotion._meta.db_table} p "
    f"JOIN {MemoryRecord._meta.db_table} r ON r.id = p.record_id "
    "WHERE p.agent_id = %s AND p.placement_key = %s AND p.status IN (%s, %s) LIMIT 1"
)
_HOLDING = [status.value for status in HOLDING]
# The gate's probe in the save's transaction: the holder of the address (none for a NULL
# address) and the agent's newest record time (``next_timestamp``), one statement. Both
# are index lookups: (agent, placement_key, status) and (agent, created_at, id).
_PROBE = (
    f"SELECT (SELECT created_at FROM {MemoryRecord._meta.db_table} "
    "WHERE agent_id = a.id ORDER BY created_at DESC LIMIT 1), "
    f"p.record_id, p.tier, r.content FROM {Agent._meta.db_table} a "
    f"LEFT JOIN {Promotion._meta.db_table} p ON p.agent_id = a.id AND p.placement_key = %s "
    "AND p.status IN (%s, %s) "
    f"LEFT JOIN {MemoryRecord._meta.db_table} r ON r.id = p.record_id "
    "WHERE a.id = %s LIMIT 1"
)


def routing_context(agent: Agent) -> RoutingContext:
    """The agent's section declarations only — never their entries. Plain SQL, in the
    declarations' order, as the gate's lookup: both run with every save, and the ORM's
    query building cost more than either query."""
    with connection.cursor() as cursor:
        cursor.execute(_DECLARATIONS, [agent.pk])
        rows = cursor.fetchall()
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


def next_timestamp(agent: Agent) -> datetime:
    """One agent's sequential saves get strictly increasing timestamps."""
    return after_newest(MemoryRecord.objects.filter(agent=agent), "created_at")


@dataclass(frozen=True)
class Routed:
    """What routing decides for a candidate memory before anything is written."""

    spec: RoutingSpec | None
    ctx: RoutingContext
    routable: RoutableRecord
    placement: Placement | None
    # The placement_key the gate checks: set only for a placement in a declared section.
    address: str | None
    older: MemoryRecord | None


def route(agent: Agent, data: MemoryInput, ctx: RoutingContext | None = None) -> Routed:
    """Route ``data`` for ``agent`` as a save would, reading but writing nothing.
    ``ctx``: the agent's routing context when the caller read it already.

    Raises InvalidValidUntil when ``valid_until`` is not after now, UnknownSupersedes
    when ``supersedes`` names no record of this agent.
    """
    check_valid_until(data.valid_until, timezone.now())
    older = None
    if data.supersedes is not None:
        older = MemoryRecord.objects.filter(agent=agent, pk=data.supersedes).first()
        if older is None:
            raise UnknownSupersedes(data.supersedes)
    spec = get_spec(agent.routing_spec)
    if ctx is None:
        ctx = routing_context(agent)
    routable = RoutableRecord(
        kind=data.kind, content=data.content, tags=tuple(data.tags), label=data.label
    )
    placement = evaluate(spec, routable, ctx) if spec is not None else None
    address = None
    if placement is not None and ctx.section(placement.section) is not None:
        address = placement_key(placement)
    return Routed(spec, ctx, routable, placement, address, older)


@dataclass(frozen=True)
class Held:
    """Who holds an address: the record, its tier at promotion, its content."""

    record_id: str
    tier: str | None
    content: str


def held_at(agent: Agent, address: str) -> Held | None:
    """``holder_of`` as plain SQL, with what a sighting is compared on."""
    with connection.cursor() as cursor:
        cursor.execute(_HOLDER, [agent.pk, address, *_HOLDING])
        found = cursor.fetchone()
    return None if found is None else Held(str(found[0]), found[1], found[2])


def holder_id(agent: Agent, address: str) -> str | None:
    """``holder_of``'s record id alone: the same indexed lookup, as plain SQL."""
    held = held_at(agent, address)
    return None if held is None else held.record_id


def gate(agent: Agent, routed: Routed, supersedes: str | None) -> Conflict | SightingOf | None:
    """The collision gate: the record holding the address, unless it is superseded
    (read whole only when it is a conflict). At an earned memory's address, a save of
    the same content (normalised) that supersedes nothing is a sighting of it."""
    if routed.address is None:
        return None
    return _gated(held_at(agent, routed.address), routed, supersedes)


def _gated(
    held: Held | None, routed: Routed, supersedes: str | None
) -> Conflict | SightingOf | None:
    """``gate``'s answer once the holder was read."""
    if held is None or held.record_id == supersedes:
        return None
    if (
        supersedes is None
        and held.tier == "earned"
        and same_content(held.content, routed.routable.content)
    ):
        return SightingOf(held.record_id)
    return Conflict(MemoryRecord.objects.get(pk=held.record_id))


def save_memory(
    agent: Agent, data: MemoryInput, actor: Actor, ctx: RoutingContext | None = None
) -> Saved | Conflict:
    """Save one memory for ``agent``. The answer never says where (or if) it composed.
    ``ctx``: the agent's routing context, when the caller read it with the agent."""
    with span("memory.save") as current:
        result = _save(agent, data, actor, ctx)
        if current.is_recording():
            current.set_attributes(agent_attributes(agent))
            if isinstance(result, Saved):
                current.set_attribute(MEMORY_ID, result.id)
        return result


def _save(
    agent: Agent, data: MemoryInput, actor: Actor, ctx: RoutingContext | None
) -> Saved | Conflict:
    routed = route(agent, data, ctx)
    for _attempt in range(3):
        try:
            return _settle(agent, data, actor, routed)
        except IntegrityError:
            # A concurrent save took the address between our lookup and our insert
            # (the partial unique index refused ours): look again and answer conflict.
            continue
        except HolderMoved:
            # The memory this one saw stopped holding its address meanwhile: look again.
            continue
    raise RuntimeError("memory_save could not settle a concurrent conflict")  # pragma: no cover


@transaction.atomic
def _settle(agent: Agent, data: MemoryInput, actor: Actor, routed: Routed) -> Saved | Conflict:
    """The gate, then the write, in one transaction: a conflict writes nothing."""
    with statement_cursor() as cursor:
        cursor.execute(_PROBE, [routed.address, *_HOLDING, agent.pk])
        newest, record_id, tier, content = cursor.fetchone()
    held = None if record_id is None else Held(str(record_id), tier, content)
    found = _gated(held, routed, data.supersedes)
    if isinstance(found, Conflict):
        return found
    if isinstance(found, SightingOf):
        return Saved(_commit_sighting(agent, data, actor, routed, found.holder))
    at = moment_after(None if newest is None else aware(newest))
    return Saved(_commit(agent, data, actor, routed, at))


def _commit(agent: Agent, data: MemoryInput, actor: Actor, routed: Routed, at: datetime) -> str:
    """Write a save that holds no other memory's address (in ``_settle``'s transaction)."""
    spec, routable, placement, older = routed.spec, routed.routable, routed.placement, routed.older
    check_valid_until(data.valid_until, at)
    record = MemoryRecord(
        agent=agent,
        kind=data.kind,
        content=data.content,
        tags=list(data.tags),
        label=data.label,
        supersedes=older,
        created_at=at,
        session=data.session,
        valid_until=data.valid_until,
    )
    events = [new_event(record.pk, agent.pk, EventKind.SAVED, actor, at)]
    if older is not None:
        # Superseding is immediate and final, whatever becomes of the newer record. An
        # erased record stays erased: that reason comes first (SPEC §5.6).
        Promotion.objects.filter(record=older).exclude(
            status__in=(PromotionStatus.SUPERSEDED, PromotionStatus.ERASED)
        ).update(status=PromotionStatus.SUPERSEDED)
        events.append(new_event(older.pk, agent.pk, EventKind.SUPERSEDED, actor, at, by=record.id))

    # Screened here, in the transaction: an instruction-shaped memory waits for a person.
    outcome = screened(route_outcome(placement, routed.ctx), data.content, screener=save_screen)
    promotion = Promotion(
        record=record,
        agent=agent,
        section=placement.section if placement else None,
        key=placement.key if placement else None,
        placement_key=placement_key(placement) if placement else None,
        key_source=spec_key_source(spec, routable) if placement and spec else None,
        spec_key=spec.key if spec else "",
        spec_version=spec.version if spec else "",
        tier=outcome.tier,
        status=outcome.status,
        reason=outcome.reason or "",
        promoted_at=at,
        decided_at=at if outcome.status == "approved" else None,
    )
    if placement is not None and outcome.status == "approved":
        events.append(
            new_event(
                record.pk, agent.pk, EventKind.PROMOTED, SYSTEM, at, section=placement.section
            )
        )
    elif placement is not None and outcome.status == "pending":
        events.append(
            new_event(record.pk, agent.pk, EventKind.QUEUED, SYSTEM, at, section=placement.section)
        )
    else:
        events.append(
            new_event(record.pk, agent.pk, EventKind.DECLINED, SYSTEM, at, reason=outcome.reason)
        )
    # The record indexed in the same statement: a saved memory is searchable at once, or
    # not saved. The promotion row's unique index refuses a second holder of its address.
    insert_rows([[record], [search.document(record)], [promotion], events])
    write_events(events, agent=agent, saved={record.pk: saved_details(record)}, stored=True)
    return record.id


def _commit_sighting(
    agent: Agent, data: MemoryInput, actor: Actor, routed: Routed, holder_id: str
) -> str:
    """Write a sighting of ``holder_id``: its record, a ``corroborates`` row at the
    holder's address, and, when this sighting earns the holder its place, the holder's
    approval, all in one transaction. The holder's row is locked first, so concurrent
    sightings are counted one at a time and exactly one of them approves it."""
    holder = lock_holder(holder_id)
    row = holder.promotion
    at = next_timestamp(agent)
    check_valid_until(data.valid_until, at)
    record = MemoryRecord.objects.create(
        agent=agent,
        kind=data.kind,
        content=data.content,
        tags=list(data.tags),
        label=data.label,
        created_at=at,
        session=data.session,
        # Its own window (SPEC §19.2): once it closes, this sighting leaves its holder's
        # line (``expired``), whatever the holder's window.
        valid_until=data.valid_until,
    )
    search.document(record).save()
    Promotion.objects.create(
        record=record,
        agent=agent,
        **row.placement_columns(),
        status=PromotionStatus.CORROBORATES,
        promoted_at=at,
        corroborates_id=holder_id,
    )
    events = [
        new_event(record.pk, agent.pk, EventKind.SAVED, actor, at),
        new_event(
            record.pk,
            agent.pk,
            EventKind.CORROBORATES,
            SYSTEM,
            at,
            section=row.section,
            holder=holder_id,
        ),
    ]
    events += approve_earned(holder, sightings_of([holder_id])[holder_id], at)
    write_events(events, agent=agent, saved={record.pk: saved_details(record)})
    return record.id
