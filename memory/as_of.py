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

``Past`` is that reconstruction, read once for a span of moments: ``compose_as_of``
asks it about one moment, what-if's replay (``memory.what_if``) about every delivery
it replays, so the two agree on every moment by construction.
"""

from __future__ import annotations

from collections.abc import Iterable
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
from memory.core.report import PromotionState, expired
from memory.core.routing import KeySource, PlacedRecord
from memory.models import (
    EventKind,
    MemoryEvent,
    MigratedPromotion,
    Promotion,
    PromotionStatus,
)
from memory.queries import placed_of

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
    """``agent``'s composition as it stood at ``moment`` (six queries, plus the config's
    when it is not cached)."""
    with span("lens.compose") as current:
        composition = _composed_at(agent, moment)
        if current.is_recording():
            current.set_attributes({**agent_attributes(agent), **traced_prompt(composition)})
        return composition


def _composed_at(agent: Agent, moment: datetime) -> Composition:
    config = config_at(agent, moment)
    past = Past(agent, moment)
    past.advance(moment)
    # Validity is judged at the moment itself: a memory expired then is dropped then.
    return compose_from(
        agent,
        past.placed(moment),
        past.states(moment),
        past.unreadable(),
        config,
        now=moment,
    )


# A migrated row as ``Past`` keeps it: when it was replaced, the record at the placement
# it held until then (None: it had none), and its promotion's reason then.
_Replaced = tuple[datetime, PlacedRecord | None, str]
_APPROVED = (PromotionStatus.APPROVED, PromotionStatus.CORROBORATES)


class Past:
    """An agent's memories as they stood at the moments from ``first`` to ``newest``:
    the one reconstruction of the past, which ``compose_as_of`` asks about one moment and
    what-if's replay (``memory.what_if``) about each delivery it replays, so the two
    cannot tell the past apart.

    Read once, in five queries whatever the number of moments: the promotion rows of the
    records saved by ``newest``, their status events up to it, the rows a migration
    replaced after ``first``, the reviewers' changes of validity windows after
    ``first``, and the placed records. Moments are then asked in time order
    (``advance``), each answered from what was read:

    - a record's status is what its last event at or before the moment left it as
      (erased: erased whatever it was);
    - its placement is the one the earliest migration after the moment replaced, else
      its live row's;
    - its validity window is the ``from`` of the earliest reviewer's change after the
      moment, else the one it has now;
    - a holder's sightings (SPEC §19.1) are those saved and corroborating by then.
    """

    def __init__(
        self,
        agent: Agent,
        first: datetime,
        newest: datetime | None = None,
        *,
        states: bool = True,
        also: Iterable[str] = (),
    ) -> None:
        """``states=False``: only what the placed records need (what-if's replay, which
        composes prompts and no report): each record's reason and holder are not read,
        and ``states`` is not asked. ``also``: records to read as placed even when they
        have no placement now (those a migration's what-if moves)."""
        newest = first if newest is None else newest
        saved = Promotion.objects.filter(agent=agent, record__created_at__lte=newest)
        self.created: dict[str, datetime] = {}
        self.reasons: dict[str, str] = {}
        self.holders: dict[str, str] = {}
        self.windows: dict[str, datetime | None] = {}
        self.erased: set[str] = set()
        if states:
            for record_id, reason, status, holder, until, created in saved.values_list(
                "record_id",
                "reason",
                "status",
                "corroborates_id",
                "record__valid_until",
                "record__created_at",
            ):
                self.created[record_id] = created
                self.reasons[record_id] = reason
                self.windows[record_id] = until
                if holder is not None:
                    self.holders[record_id] = holder
                if status == PromotionStatus.ERASED:
                    self.erased.add(record_id)
        else:
            erased = saved.filter(status=PromotionStatus.ERASED)
            for record_id, created in erased.values_list("record_id", "record__created_at"):
                self.created[record_id] = created
                self.erased.add(record_id)
        migrated = list(
            MigratedPromotion.objects.filter(
                agent=agent, migrated_at__gt=first, record__created_at__lte=newest
            )
            .order_by("migrated_at", "id")
            .values_list("record_id", "migrated_at", "section", "key", "key_source", "reason")
        )
        unplaced = {row[0] for row in migrated} | set(also)
        found = placed_of(saved.filter(Q(section__isnull=False) | Q(record_id__in=unplaced)))
        everyone = {record.id: record for record in found.of(agent.pk)}
        self.everyone = everyone  # every placed row, with a section or not
        if not states:  # what the placed rows hold is what the replay needs
            for rid, placed in everyone.items():
                self.created[rid] = placed.created_at
                self.windows[rid] = placed.valid_until
                for sid, until in placed.sighting_windows:
                    self.windows[sid] = until
        self.live = {rid: record for rid, record in everyone.items() if record.section is not None}
        self._unreadable = found.unreadable.get(agent.pk, set())
        self.replaced: dict[str, list[_Replaced]] = {}
        for rid, at, section, key, source, reason in migrated:
            record = everyone.get(rid)
            then = None
            if record is not None and section is not None and key is not None:
                key_source: KeySource = "label" if source == "label" else "content"
                then = replace(record, section=section, key=key, key_source=key_source)
            self.replaced.setdefault(rid, []).append((at, then, reason))
        self.reshaped: dict[str, list[tuple[datetime, datetime | None]]] = {}
        for rid, at, detail in (
            MemoryEvent.objects.filter(agent=agent, kind=EventKind.VALIDITY, at__gt=first)
            .order_by("at", "id")
            .values_list("record_id", "at", "detail")
        ):
            was = _moment(detail.get("from") if isinstance(detail, dict) else None)
            self.reshaped.setdefault(rid, []).append((at, was))
        # Records whose past differs from their live row in more than the status.
        self.special = {rid for rid, record in self.live.items() if record.sightings}
        self.special |= self.replaced.keys() | self.reshaped.keys()
        self.events = list(
            MemoryEvent.objects.filter(agent=agent, at__lte=newest, kind__in=list(STATUS_AFTER))
            .order_by("at", "id")
            .values_list("at", "record_id", "kind")
        )
        self._index = 0
        self.statuses: dict[str, str] = {}  # at the moment advanced to
        self.approved: set[str] = set()  # approved or corroborating then
        # Erased since, and approved or corroborating then (as if never erased).
        self.held: set[str] = set()
        self._then: dict[
            tuple[int, datetime | None, tuple[str, ...], tuple[tuple[str, datetime], ...]],
            PlacedRecord,
        ] = {}

    def advance(self, moment: datetime) -> None:
        """Walk the status events up to ``moment`` (no earlier than the last asked)."""
        events, erased = self.events, self.erased
        while self._index < len(events) and events[self._index][0] <= moment:
            _at, rid, kind = events[self._index]
            self._index += 1
            status = STATUS_AFTER[kind]
            if rid in erased:
                if status in _APPROVED:
                    self.held.add(rid)
                else:
                    self.held.discard(rid)
                status = PromotionStatus.ERASED
            self.statuses[rid] = status
            if status in _APPROVED:
                self.approved.add(rid)
            else:
                self.approved.discard(rid)

    def held_erased(self, moment: datetime) -> bool:
        """Whether a memory erased since was approved at ``moment`` (advanced to): the
        prompt delivered then may have held words the past no longer has."""
        created = self.created
        return any(rid in created and created[rid] <= moment for rid in self.held)

    def states(self, moment: datetime) -> list[PromotionState]:
        """Every record's promotion state at ``moment`` (advanced to), for the report."""
        return [
            PromotionState(
                memory_id=rid,
                status=status,
                reason=self.reason(rid, moment),
                holder=self.holders.get(rid),
                valid_until=self.window(rid, moment),
            )
            for rid, status in self.statuses.items()
        ]

    def reason(self, record_id: str, moment: datetime) -> str:
        reason = self.reasons.get(record_id, "")
        for at, _then, was in self.replaced.get(record_id, ()):
            if at > moment:
                reason = was
                break
        # Approved on its sightings later: until then it was earning.
        return "earning" if reason == "earned" else reason

    def window(self, record_id: str, moment: datetime) -> datetime | None:
        for at, was in self.reshaped.get(record_id, ()):
            if at > moment:
                return was
        return self.windows.get(record_id)

    def placed(
        self, moment: datetime, approved: Iterable[str] | None = None, *, open_only: bool = False
    ) -> list[PlacedRecord]:
        """The records of ``approved`` (default: those approved at ``moment``, advanced
        to) saved by then, each at the placement and with the window it had then;
        ``open_only`` leaves out those whose window had closed by then (the fold drops
        them first, so the prompt is the same)."""
        created, live, special = self.created, self.live, self.special
        found = []
        for rid in self.approved if approved is None else approved:
            if rid not in created or created[rid] > moment:
                continue
            record = self.then(rid, moment) if rid in special else live.get(rid)
            if record is None:
                continue
            if open_only and expired(record.valid_until, moment):
                continue
            found.append(record)
        return found

    def then(
        self, record_id: str, moment: datetime, record: PlacedRecord | None = None
    ) -> PlacedRecord | None:
        """``record_id`` as placed at ``moment`` (None: it had no placement then), or
        ``record`` (a placement given it) with its window and sightings then. The same
        object each time it stood the same, so a replay can tell states apart by
        identity."""
        if record is None:
            record = self.live.get(record_id)
            for at, held, _reason in self.replaced.get(record_id, ()):
                if at > moment:
                    record = held
                    break
            if record is None:
                return None
        window = self.window(record_id, moment)
        sightings, sighted = record.sightings, record.sighting_windows
        if sightings:
            approved, created = self.approved, self.created
            # Corroborating then (a sighting's first event is at its save); saved by
            # then, where its time was read.
            sightings = tuple(
                s for s in sightings if s in approved and created.get(s, moment) <= moment
            )
            # Each sighting's own window as it stood then.
            sighted = tuple(
                (sid, when) for sid in sightings if (when := self.window(sid, moment)) is not None
            )
        if (
            window == record.valid_until
            and sightings == record.sightings
            and sighted == record.sighting_windows
        ):
            return record
        key = (id(record), window, sightings, sighted)
        found = self._then.get(key)
        if found is None:
            found = self._then[key] = replace(
                record, valid_until=window, sightings=sightings, sighting_windows=sighted
            )
        return found

    def unreadable(self) -> set[str]:
        """The approved records then whose stored rows no longer read."""
        return self._unreadable & self.approved


def _moment(text: object) -> datetime | None:
    return parse_moment(text) if isinstance(text, str) else None
