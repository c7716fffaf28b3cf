"""An agent's prompt as it stood at a moment (SPEC §14 "As of"): composed from the
revision of its declarations in force then, and its memories and decisions as they
stood then.

Nothing is rewritten to make this possible: records are immutable and carry the time
they were saved, revisions keep whole configs, and every change of a promotion's status
writes an event in the change's transaction (saved and promoted, queued or declined;
approved, rejected, revoked, reopened — an undo is a reopening —, superseded; a
migration's ``migrated`` is followed by the outcome a save writes). A record's status
at T is what its last event at or before T left it as, and its placement at T is the
one a migration replaced after T (``MigratedPromotion``), else its live row's. So for a
recorded delivery, the composition as of its time is its prompt, as long as the routing
specs and the budget settings are the same as then.

An erased memory (SPEC §15) is dropped with reason ``erased`` at every moment, even
before it was erased: a composition as of a moment is composed again now, and no answer
may hold the words an erasure removed. Its place is not kept: the moment's other
memories compose as the fold places them without it (a delivery recorded then keeps
its lines, as ``[erased]``), so for a moment before an erasure the composition and that
delivery's redacted prompt may differ in those lines.

One limit: a change takes its time before it commits, and a delivery composes from what
was committed when it read. A decision, save or revision committing while a delivery of
the same agent is being made can carry a time just before the delivery's without being
in its prompt; as of that time, it counts. (A delivery's ``revision`` and its causes by
revision number are exact all the same.) Ordering the two would take a per-agent lock
held by deliveries and by every such change. Likewise a delivery judges validity windows
(SPEC §19.2) at the time it composes, a moment before its ``delivered_at``: a window
closing in between is open in the delivery and closed as of its time.

Validity windows are judged at the moment itself, each as it stood then: a reviewer's
later change of one is a ``validity`` event whose ``from`` holds the earlier window.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from django.db.models import Q

from lens.agents import AgentNotFound, config_of
from lens.core.config import AgentConfig
from lens.models import Agent, Revision
from lens.revisions import stored_config
from lens.tracing import agent_attributes, span
from memory.composition import compose_from, traced_prompt
from memory.core.composition import Composition
from memory.core.deliveries import parse_moment
from memory.core.report import PromotionState
from memory.core.routing import KeySource
from memory.models import (
    EventKind,
    MemoryEvent,
    MigratedPromotion,
    Promotion,
    PromotionStatus,
)
from memory.queries import Placed, placed_of

# The promotion status each event leaves its record in. A save writes ``saved`` and, at
# the same moment, one of the first three.
STATUS_AFTER: dict[str, str] = {
    EventKind.PROMOTED: PromotionStatus.APPROVED,
    EventKind.QUEUED: PromotionStatus.PENDING,
    EventKind.DECLINED: PromotionStatus.DECLINED,
    EventKind.APPROVED: PromotionStatus.APPROVED,
    EventKind.REJECTED: PromotionStatus.REJECTED,
    EventKind.REVOKED: PromotionStatus.REVOKED,
    EventKind.REOPENED: PromotionStatus.PENDING,
    EventKind.SUPERSEDED: PromotionStatus.SUPERSEDED,
    EventKind.ERASED: PromotionStatus.ERASED,
    # A sighting (SPEC §19.1) holds no address; its holder's approval on sightings.
    EventKind.CORROBORATES: PromotionStatus.CORROBORATES,
    EventKind.EARNED: PromotionStatus.APPROVED,
}


def revision_at(agent: Agent, moment: datetime) -> Revision | None:
    """The revision in force at ``moment``: the newest made at or before it. Before the
    first (an agent declared before revisions were recorded), the first stands in.
    Raises AgentNotFound when the agent did not exist yet."""
    if agent.created_at > moment:
        raise AgentNotFound(f"Agent {agent.slug!r} did not exist at {moment.isoformat()}.")
    rows = Revision.objects.filter(agent=agent).select_related("config")
    found = rows.filter(created_at__lte=moment).order_by("-number").first()
    return found if found is not None else rows.order_by("number").first()


def config_at(agent: Agent, moment: datetime) -> AgentConfig:
    revision = revision_at(agent, moment)
    # An agent with no revision at all (rows that never validated): as it is stored.
    return stored_config(revision) if revision is not None else config_of(agent)


def statuses_at(agent: Agent, moment: datetime) -> dict[str, str]:
    """Each record saved at or before ``moment``: its promotion status then (one query,
    linear in the agent's events up to then)."""
    events = (
        MemoryEvent.objects.filter(agent=agent, at__lte=moment, kind__in=list(STATUS_AFTER))
        .order_by("at", "id")
        .values_list("record_id", "kind")
    )
    return {record_id: STATUS_AFTER[kind] for record_id, kind in events}


def compose_as_of(agent: Agent, moment: datetime) -> Composition:
    """``agent``'s composition as it stood at ``moment`` (four queries, plus the config's
    when it is not cached)."""
    with span("lens.compose") as current:
        composition = _composed_at(agent, moment)
        if current.is_recording():
            current.set_attributes({**agent_attributes(agent), **traced_prompt(composition)})
        return composition


def rows_in_force(agent: Agent, moment: datetime) -> dict[str, MigratedPromotion]:
    """The promotion rows a migration replaced after ``moment`` (SPEC §18.3): for each
    record saved by then, the archived row with the earliest ``migrated_at`` after it,
    which held the record's placement at ``moment`` (one indexed query, empty for an
    agent never migrated)."""
    rows = MigratedPromotion.objects.filter(
        agent=agent, migrated_at__gt=moment, record__created_at__lte=moment
    ).order_by("-migrated_at", "-id")
    # Newest first, so the earliest after ``moment`` is written last.
    return {row.record_id: row for row in rows}


def windows_at(agent: Agent, moment: datetime) -> dict[str, datetime | None]:
    """The ``valid_until`` each record had at ``moment``, for the records whose window a
    reviewer changed after it (SPEC §19.2): the ``from`` of the earliest change after
    ``moment`` (one indexed query, empty when no window was changed since)."""
    rows = MemoryEvent.objects.filter(agent=agent, kind=EventKind.VALIDITY, at__gt=moment).order_by(
        "-at", "-id"
    )
    # Newest first, so the earliest after ``moment`` is written last.
    return {
        record_id: _moment(detail.get("from") if isinstance(detail, dict) else None)
        for record_id, detail in rows.values_list("record_id", "detail")
    }


def _moment(text: object) -> datetime | None:
    return parse_moment(text) if isinstance(text, str) else None


def _composed_at(agent: Agent, moment: datetime) -> Composition:
    config = config_at(agent, moment)
    statuses = statuses_at(agent, moment)
    earlier = rows_in_force(agent, moment)
    windows = windows_at(agent, moment)
    reasons: dict[str, str] = {}
    holders: dict[str, str] = {}
    for record_id, reason, status, holder, until in Promotion.objects.filter(
        agent=agent, record__created_at__lte=moment
    ).values_list("record_id", "reason", "status", "corroborates_id", "record__valid_until"):
        reasons[record_id] = earlier[record_id].reason if record_id in earlier else reason
        if reasons[record_id] == "earned":
            # Approved on its sightings later: until then it was earning.
            reasons[record_id] = "earning"
        if holder is not None:
            holders[record_id] = holder
        if record_id not in windows:
            windows[record_id] = until
        if status == PromotionStatus.ERASED and record_id in statuses:
            statuses[record_id] = PromotionStatus.ERASED  # whatever it was then
    # Approved records, and the sightings that compose with them (SPEC §19.1).
    approved = {
        rid
        for rid, status in statuses.items()
        if status in (PromotionStatus.APPROVED, PromotionStatus.CORROBORATES)
    }
    live = Promotion.objects.filter(agent=agent, record__created_at__lte=moment)
    placed = placed_of(
        live.filter(Q(section__isnull=False) | Q(record_id__in=list(earlier))), keep=approved
    )
    if earlier:
        placed = _placed_then(placed, agent.pk, earlier)
    placed = _windows_then(placed, agent.pk, windows)
    states = [
        PromotionState(
            memory_id=rid,
            status=status,
            reason=reasons.get(rid, ""),
            holder=holders.get(rid),
            valid_until=windows.get(rid),
        )
        for rid, status in statuses.items()
    ]
    # Validity is judged at the moment itself: a memory expired then is dropped then.
    return compose_from(
        agent,
        placed.of(agent.pk),
        states,
        placed.unreadable.get(agent.pk, set()),
        config,
        now=moment,
    )


def _windows_then(placed: Placed, agent_id: int, windows: dict[str, datetime | None]) -> Placed:
    """``placed`` with each record's validity window, and its sightings', as they
    stood then."""
    kept = []
    for record in placed.of(agent_id):
        until = windows.get(record.id, record.valid_until)
        sighted = record.sighting_windows
        if record.sightings:
            sighted = tuple(
                (sid, when) for sid in record.sightings if (when := windows.get(sid)) is not None
            )
        if until == record.valid_until and sighted == record.sighting_windows:
            kept.append(record)
        else:
            kept.append(replace(record, valid_until=until, sighting_windows=sighted))
    return Placed({**placed.records, agent_id: kept}, placed.unreadable)


def _placed_then(placed: Placed, agent_id: int, earlier: dict[str, MigratedPromotion]) -> Placed:
    """``placed`` with each migrated record at the address it held then."""
    kept = []
    for record in placed.of(agent_id):
        row = earlier.get(record.id)
        if row is None:
            kept.append(record)
        elif row.section is not None and row.key is not None:
            source: KeySource = "label" if row.key_source == "label" else "content"
            kept.append(replace(record, section=row.section, key=row.key, key_source=source))
        # else: it had no placement then, so it composed nowhere
    return Placed({**placed.records, agent_id: kept}, placed.unreadable)
