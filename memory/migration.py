"""Migrating placements after a declaration or spec change (SPEC §18.3): the plan for
an agent, and applying it (or some of its moves) in one transaction.

A migration never runs by itself (SPEC §5.4: a committed placement is never silently
recomputed): a person or a token asks for the plan's hash they saw, and when the state
no longer gives that plan, nothing moves (``plan_changed``).

Applying a move keeps ``Promotion`` one row per record: the row as it stood is copied
into ``MigratedPromotion`` (status ``migrated``), then the live row is updated in place
with the new placement, spec, tier and outcome, as a save would commit it. Its events
are a ``migrated`` event (both addresses) and the outcome a save writes (``promoted``,
``queued`` or ``declined``; ``approved`` by the reviewer who applied it at the page for
a move that waits for a person: into a guarded section, or an instruction-shaped one
into an auto section), so the status as of any moment still reads from events. A move
into an earned section stays ``pending`` (``earning``, or ``instruction-shaped``) however
it is applied.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from lens.actors import SYSTEM, Actor
from lens.core.errors import DomainError
from lens.models import Agent
from lens.rows import aware, json_values, raw_rows
from memory.core.migration import (
    MIGRATABLE,
    Address,
    CommittedRow,
    Move,
    Plan,
    plan,
)
from memory.core.routing import RoutingContext
from memory.core.what_if import Moved, MovesChange
from memory.events import write_events
from memory.models import (
    EventKind,
    MemoryEvent,
    MigratedPromotion,
    Promotion,
    PromotionStatus,
    new_event,
)
from memory.registry import get_spec
from memory.saving import routing_context

# The permission that approves guarded moves at the page, and that a migration of a
# protected agent needs (SPEC §5.4's reviewer).
REVIEWER_PERMISSION = "memory.approve_promotion"
# One apply moves at most this many memories (bulk statements, one transaction).
APPLY_MAX = 10_000
_BATCH = 500


class PlanChanged(DomainError):
    code = "plan_changed"

    def __init__(self, current: str) -> None:
        super().__init__(
            "The agent's memories, declarations or routing spec changed since this plan "
            "was read: nothing moved. Read the plan again.",
            plan_sha256=current,
        )


class NotInPlan(DomainError):
    code = "not_in_plan"

    def __init__(self, memory_ids: Sequence[str]) -> None:
        super().__init__(
            f"Not in the plan: {', '.join(memory_ids)}. Nothing moved.",
            memory_ids=list(memory_ids),
        )


class MoveNeedsAnother(DomainError):
    """A chosen move's new address is held by a memory whose own move was not chosen."""

    code = "move_needs_another"

    def __init__(self, pairs: Sequence[tuple[str, str]]) -> None:
        named = "; ".join(f"{mover} needs {holder}" for mover, holder in pairs)
        super().__init__(
            "A chosen move goes to an address another memory holds until its own move: "
            f"choose both ({named}). Nothing moved.",
            needs=[{"memory_id": mover, "needs": holder} for mover, holder in pairs],
        )


class TooManyMoves(DomainError):
    code = "too_many_moves"

    def __init__(self, count: int) -> None:
        super().__init__(
            f"{count:,} moves at once is more than {APPLY_MAX:,}: apply them in parts "
            "(memory_ids).",
            limit=APPLY_MAX,
        )


class MigrationNeedsReviewer(DomainError):
    code = "migration_needs_reviewer"

    def __init__(self) -> None:
        super().__init__(
            "This agent is protected: migrating its memories needs a reviewer "
            f"({REVIEWER_PERMISSION}).",
            permission=REVIEWER_PERMISSION,
        )


@dataclass(frozen=True)
class Applied:
    """What an apply did: the moves made (with the outcome committed), and the plan's
    conflicts and unchosen moves, which stayed."""

    at: datetime
    moved: list[Move]
    outcomes: dict[str, str]  # memory id -> status committed
    stayed: list[Move]


def committed_rows(agent: Agent) -> list[CommittedRow]:
    """The agent's records whose promotion a plan looks at, with what routing reads of
    them (one query)."""
    rows = raw_rows(
        Promotion.objects.filter(agent=agent, status__in=sorted(MIGRATABLE)).values_list(
            "record_id",
            "record__created_at",
            "record__kind",
            "record__content",
            "record__tags",
            "record__label",
            "section",
            "key",
            "status",
        )
    )
    all_tags = json_values([row[4] for row in rows])
    found = []
    for (rid, stamp, kind, content, _t, label, section, key, status), tags in zip(
        rows, all_tags, strict=True
    ):
        try:
            created = aware(stamp)
        except ValueError:
            continue  # a row that no longer reads (SPEC §6.3) is left where it is
        found.append(
            CommittedRow(
                memory_id=rid,
                created_at=created,
                kind=kind,
                content=content,
                tags=tuple(str(tag) for tag in tags or ()),
                label=label,
                address=None if section is None or key is None else Address(section, key),
                status=status,
            )
        )
    return found


def migration_plan(agent: Agent, ctx: RoutingContext | None = None) -> Plan:
    """What re-promotion against the current spec and declarations would move now.
    ``ctx``: the declarations, when the caller has read them already (the lens)."""
    declared = routing_context(agent) if ctx is None else ctx
    return plan(committed_rows(agent), get_spec(agent.routing_spec), declared)


@dataclass(frozen=True)
class PlanCounts:
    """How many memories the plan would move, and how many of its moves are conflicts
    (their new address is held, so they stay)."""

    moves: int = 0
    conflicts: int = 0


# Recent plan counts, by what they depend on (``plan_counts``).
_COUNTS: OrderedDict[tuple[object, ...], PlanCounts] = OrderedDict()
_COUNTS_MAX = 256


def plan_counts(agent: Agent, ctx: RoutingContext) -> PlanCounts:
    """How many memories the plan would move and how many cannot, for the lens's line:
    one query while nothing it depends on changed, else the plan's.

    The counts depend on the routing spec (its key and version), the declarations
    (``ctx``) and the agent's promotion rows and records, and every change of those
    writes a memory event (a save, a decision, a supersession, an erasure, a
    migration): so the newest event stands for them. The migration page and the API
    always compute the plan itself.
    """
    spec = get_spec(agent.routing_spec)
    if spec is None:
        return PlanCounts()
    newest = (
        MemoryEvent.objects.filter(agent=agent)
        .order_by("-at", "-id")
        .values_list("at", "id")
        .first()
    )
    if newest is None:
        return PlanCounts()
    fingerprint = (agent.pk, spec.key, spec.version, ctx, newest)
    if (counts := _COUNTS.get(fingerprint)) is not None:
        _COUNTS.move_to_end(fingerprint)
        return counts
    moves = plan(committed_rows(agent), spec, ctx).moves
    movers = sum(1 for move in moves if move.moves)
    counts = PlanCounts(movers, len(moves) - movers)
    _COUNTS[fingerprint] = counts
    while len(_COUNTS) > _COUNTS_MAX:
        _COUNTS.popitem(last=False)
    return counts


def moving_count(agent: Agent, ctx: RoutingContext) -> int:
    """How many memories the plan would move (its conflicts left out)."""
    return plan_counts(agent, ctx).moves


def may_review(user: object) -> bool:
    has_perm = getattr(user, "has_perm", None)
    return bool(has_perm is not None and has_perm(REVIEWER_PERMISSION))


def apply_migration(
    agent: Agent,
    plan_sha256: str,
    memory_ids: Sequence[str] | None = None,
    *,
    actor: Actor,
    approve_guarded: bool = False,
    leave: Callable[[Plan], Collection[str]] | None = None,
) -> Applied:
    """Apply the plan whose hash is ``plan_sha256`` (only the moves of ``memory_ids``,
    when given), in one transaction. ``approve_guarded``: the actor is a reviewer
    applying it at the page, and approves by that act the moves that wait for a person
    (into guarded sections, and instruction-shaped ones into auto sections). ``leave``:
    with no ``memory_ids``, the memories of the plan as read here that stay where they
    are (a page leaves what it did not show).

    Raises PlanChanged, NotInPlan, MoveNeedsAnother, TooManyMoves or
    MigrationNeedsReviewer; then nothing has changed.
    """
    reviewer = may_review(actor.user)
    if agent.protected and not reviewer:
        raise MigrationNeedsReviewer()
    approve_guarded = approve_guarded and reviewer
    try:
        with transaction.atomic():
            # One migration of an agent at a time: the second recomputes its plan once
            # the first has committed, and finds it changed.
            Agent.objects.select_for_update().only("pk").get(pk=agent.pk)
            current = migration_plan(agent)
            if current.sha256 != plan_sha256:
                raise PlanChanged(current.sha256)
            if memory_ids is None and leave is not None and (left := set(leave(current))):
                memory_ids = [
                    move.memory_id for move in current.moves if move.memory_id not in left
                ]
            chosen = _chosen(current, memory_ids)
            if len(chosen) > APPLY_MAX:
                raise TooManyMoves(len(chosen))
            applied = _apply(agent, current, chosen, actor, approve_guarded)
    except IntegrityError:
        # A save or a reopening took one of the new addresses after the plan was read
        # (the unique holder index refused the move): the plan no longer holds.
        raise PlanChanged(migration_plan(agent).sha256) from None
    return applied


def _chosen(current: Plan, memory_ids: Sequence[str] | None) -> list[Move]:
    """The moves to make: every one that is not a conflict, or those of ``memory_ids``."""
    movers = [move for move in current.moves if move.moves]
    if memory_ids is None:
        return movers
    wanted = set(memory_ids)
    planned = {move.memory_id for move in current.moves}
    if unknown := sorted(wanted - planned):
        raise NotInPlan(unknown)
    chosen = [move for move in movers if move.memory_id in wanted]
    # An unchosen move keeps its address: a chosen move may not take it.
    keeps = {
        source.placement_key: move.memory_id
        for move in movers
        if move.memory_id not in wanted and (source := move.source) is not None and move.held
    }
    pairs = [
        (move.memory_id, keeps[target.placement_key])
        for move in chosen
        if (target := move.target) is not None
        and move.outcome in ("approved", "pending")
        and target.placement_key in keeps
    ]
    if pairs:
        raise MoveNeedsAnother(pairs)
    return chosen


def _apply(
    agent: Agent, current: Plan, chosen: list[Move], actor: Actor, approve_guarded: bool
) -> Applied:
    at = timezone.now()
    chosen_ids = {move.memory_id for move in chosen}
    stayed = [move for move in current.moves if move.memory_id not in chosen_ids]
    if not chosen:
        return Applied(at, [], {}, stayed)
    by_id = {move.memory_id: move for move in chosen}
    live = list(Promotion.objects.select_for_update().filter(pk__in=list(by_id)))
    # Read again under the row locks: a decision that committed since the plan was read
    # (a rejection, a supersession, an erasure) changes the plan.
    if len(live) != len(by_id) or any(_changed(row, by_id[row.pk]) for row in live):
        raise PlanChanged(migration_plan(agent).sha256)
    MigratedPromotion.objects.bulk_create(
        [_archived(row, by_id[row.pk], at, actor) for row in live], batch_size=_BATCH
    )
    # Two steps, so a chain or a swap of addresses never meets the one-holder index
    # half way: first the moving rows let go of their addresses, then they take the new.
    Promotion.objects.filter(pk__in=list(by_id), placement_key__isnull=False).update(
        placement_key=None
    )
    outcomes: dict[str, str] = {}
    events: list[MemoryEvent] = []
    for row in live:
        move = by_id[row.pk]
        status = _status(move, approve_guarded)
        outcomes[row.pk] = status
        _renew(row, move, current, status, at, actor if status == "approved" else None)
        events.extend(_events(row, move, current, status, at, actor))
    _write_renewed(live, current, at)
    write_events(events, agent=agent)
    moved = [move for move in current.moves if move.memory_id in chosen_ids]
    return Applied(at, moved, outcomes, stayed)


def _changed(row: Promotion, move: Move) -> bool:
    if row.status not in MIGRATABLE:
        return True
    address = None if row.section is None or row.key is None else Address(row.section, row.key)
    return address != move.source


# The columns that differ from row to row; the rest are one value for the whole apply.
_VARYING = (
    "record_id",
    "section",
    "key",
    "placement_key",
    "key_source",
    "tier",
    "status",
    "reason",
    "decided_by_id",
)


def _write_renewed(rows: Sequence[Promotion], current: Plan, at: datetime) -> None:
    """The renewed rows in one UPDATE per ``_BATCH`` rows, from a VALUES list (Django's
    ``bulk_update`` builds a CASE per column and row, and took seconds for a thousand)."""
    table = connection.ops.quote_name(Promotion._meta.db_table)
    names = [connection.ops.quote_name(name) for name in _VARYING]
    column = dict(zip(_VARYING, names, strict=True))
    assignments = ", ".join(f"{column[name]} = v.{column[name]}" for name in _VARYING[1:-1])
    for start in range(0, len(rows), _BATCH):
        chunk = rows[start : start + _BATCH]
        values = ", ".join(["(" + ", ".join(["%s"] * len(_VARYING)) + ")"] * len(chunk))
        sql = (
            f"WITH v ({', '.join(names)}) AS (VALUES {values}) "
            f"UPDATE {table} SET {assignments}, "
            # An all-NULL column of a VALUES list is text to PostgreSQL: say what it is.
            f"{column['decided_by_id']} = CAST(v.{column['decided_by_id']} AS integer), "
            "spec_key = %s, spec_version = %s, promoted_at = %s, decision_note = '', "
            f"decided_at = CASE WHEN v.{column['status']} = 'approved' THEN %s END "
            f"FROM v WHERE {table}.{column['record_id']} = v.{column['record_id']}"
        )
        params: list[Any] = [getattr(row, name) for row in chunk for name in _VARYING]
        params += [current.spec_key, current.spec_version, at, at]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)


# The tiers whose waiting moves a reviewer's apply at the page approves: a guarded
# section waits for a person, and so does an instruction-shaped memory the system would
# have approved into an auto one (SPEC §19.4: never without a person; the reviewer is
# that person, and the page shows each such move's signals before the act). An earned
# section waits for sightings instead (SPEC §19.1): applying never approves a move into
# one, whatever its content; a reviewer decides such a memory in the queue.
_APPROVED_BY_THE_ACT = frozenset({"guarded", "auto"})


def _status(move: Move, approve_guarded: bool) -> str:
    if move.outcome == "pending" and approve_guarded and move.tier in _APPROVED_BY_THE_ACT:
        return PromotionStatus.APPROVED
    return move.outcome


def _archived(row: Promotion, move: Move, at: datetime, actor: Actor) -> MigratedPromotion:
    return MigratedPromotion(
        record_id=row.record_id,
        agent_id=row.agent_id,
        **row.placement_columns(),
        status=PromotionStatus.MIGRATED,
        previous_status=row.status,
        reason=row.reason,
        promoted_at=row.promoted_at,
        decided_by_id=row.decided_by_id,
        decided_at=row.decided_at,
        decision_note=row.decision_note,
        migrated_at=at,
        migrated_by=actor.label,
        new_section=move.target.section if move.target else None,
        new_key=move.target.key if move.target else None,
    )


def _renew(
    row: Promotion, move: Move, current: Plan, status: str, at: datetime, decider: Actor | None
) -> None:
    """The live row as a save would commit it now (``memory.saving._commit``)."""
    target = move.target
    row.section = target.section if target else None
    row.key = target.key if target else None
    row.placement_key = target.placement_key if target else None
    row.key_source = move.key_source if target else None
    row.spec_key = current.spec_key
    row.spec_version = current.spec_version
    row.tier = move.tier
    row.status = status
    # A declined move keeps its decline reason; a pending one its hold (instruction-shaped)
    # or ``earning`` for a move into an earned section (SPEC §19.1).
    row.reason = move.reason if status != PromotionStatus.APPROVED else ""
    row.promoted_at = at
    row.decided_by = decider.user if decider is not None else None
    row.decided_at = at if status == PromotionStatus.APPROVED else None
    row.decision_note = ""


def _events(
    row: Promotion, move: Move, current: Plan, status: str, at: datetime, actor: Actor
) -> list[MemoryEvent]:
    detail = {
        "from": move.source.as_json() if move.source else None,
        "to": move.target.as_json() if move.target else None,
        "spec": current.spec_key,
        "spec_version": current.spec_version,
        "outcome": status,
    }
    rid, aid = row.record_id, row.agent_id
    events = [new_event(rid, aid, EventKind.MIGRATED, actor, at, **detail)]
    section = move.target.section if move.target else None
    if status == PromotionStatus.DECLINED:
        events.append(new_event(rid, aid, EventKind.DECLINED, SYSTEM, at, reason=move.reason))
    elif move.outcome == "approved":
        events.append(new_event(rid, aid, EventKind.PROMOTED, SYSTEM, at, section=section))
    else:
        events.append(new_event(rid, aid, EventKind.QUEUED, SYSTEM, at, section=section))
        if status == PromotionStatus.APPROVED:  # the reviewer's act approves it
            events.append(new_event(rid, aid, EventKind.APPROVED, actor, at, migrated=True))
    return events


def plan_change(found: Plan, approve_guarded: bool) -> MovesChange:
    """The plan's moves as a what-if (``memory.what_if``): where each memory that moves
    would go, in the status applying gives it (a reviewer's act approves the guarded
    ones); conflicts stay where they are."""
    return MovesChange.of(
        Moved(
            memory_id=move.memory_id,
            section=None if move.target is None else move.target.section,
            key=None if move.target is None else move.target.key,
            key_source=move.key_source,
            status=_status(move, approve_guarded),
            reason=move.reason,
        )
        for move in found.moves
        if move.moves
    )
