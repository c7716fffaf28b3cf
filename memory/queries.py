"""Reading what the fold needs, in a fixed number of queries for any number of agents."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Container, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from django.db.models import OuterRef, QuerySet, Subquery
from django.db.models.functions import Length, Substr
from pydantic import ValidationError

from lens.models import Agent, Revision
from lens.rows import aware, json_values, raw_rows
from memory import search
from memory.core.records import MemoryView, stored_problem, stored_readable
from memory.core.report import PromotionState
from memory.core.routing import KeySource, PlacedRecord
from memory.models import EventKind, MemoryEvent, MemoryRecord, Promotion, PromotionStatus


def promotion_states(agent_ids: Iterable[int]) -> dict[int, list[PromotionState]]:
    """Every record's promotion status and save-time reason, by agent (one query)."""
    states: dict[int, list[PromotionState]] = defaultdict(list)
    rows = raw_rows(
        Promotion.objects.filter(agent_id__in=list(agent_ids)).values_list(
            "agent_id", "record_id", "status", "reason", "corroborates_id", "record__valid_until"
        )
    )
    for agent_id, record_id, status, reason, holder, until in rows:
        states[agent_id].append(
            PromotionState(
                memory_id=record_id,
                status=status,
                reason=reason,
                holder=holder,
                valid_until=_moment(until),
            )
        )
    return states


def _moment(value: datetime | str | None) -> datetime | None:
    """A stored ``valid_until`` (None when there is none, or it no longer reads)."""
    if value is None:
        return None
    try:
        return aware(value)
    except ValueError:
        return None


# A row of ``placed_records``' query. Its filter makes ``section`` non-null, a placed row
# always has its ``key`` too, and ``key_source`` is written from ``spec_key_source``; the
# last is the holder a sighting corroborates (None for every other row).
_PlacedRow = tuple[
    int,
    str,
    str,
    str,
    str | None,
    str | None,
    datetime | str,
    str,
    str,
    KeySource | None,
    str | None,
    datetime | str | None,
]


@dataclass(frozen=True)
class Placed:
    """What the fold composes, by agent, and the approved rows it had to skip."""

    records: dict[int, list[PlacedRecord]]
    # Approved records whose stored rows no longer read as records (SPEC §6.3).
    unreadable: dict[int, set[str]]

    def of(self, agent_id: int) -> list[PlacedRecord]:
        return self.records.get(agent_id, [])


def placed_records(agent_ids: Iterable[int]) -> Placed:
    """Approved records joined with their committed placement, by agent (one query).

    Approved rows are never superseded: superseding moves the row to ``superseded``. A
    row that no longer parses costs one record: it is skipped and named. Sightings
    (``corroborates`` rows, SPEC §19.1) come in the same query and join their holder.
    """
    return placed_of(
        Promotion.objects.filter(
            agent_id__in=list(agent_ids),
            status__in=(PromotionStatus.APPROVED, PromotionStatus.CORROBORATES),
            section__isnull=False,
        )
    )


def placed_of(promotions: QuerySet[Promotion], keep: Container[str] | None = None) -> Placed:
    """The placed records of ``promotions`` (one query), by agent; with ``keep``, only
    those whose record id it holds (a past composition's approved records and
    sightings). A sighting row (one that corroborates a holder) is not placed itself:
    its id joins its holder's ``sightings`` when the holder is placed."""
    placed: dict[int, list[PlacedRecord]] = defaultdict(list)
    unreadable: dict[int, set[str]] = defaultdict(set)
    # Unconverted rows (``lens.rows``): tags are decoded together, times one by one.
    rows = cast(
        "list[_PlacedRow]",
        raw_rows(
            promotions.values_list(
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
                "corroborates_id",
                "record__valid_until",
            )
        ),
    )
    if keep is not None:
        rows = [row for row in rows if row[1] in keep]
    seen: dict[str, list[str]] = defaultdict(list)
    windows: dict[str, list[tuple[str, datetime]]] = defaultdict(list)
    if any(row[10] is not None for row in rows):
        seen, windows = _sightings(rows, unreadable)
        rows = [row for row in rows if row[10] is None]
    all_tags = json_values([row[4] for row in rows])
    for (
        (agent_id, rid, kind, content, _t, label, stamp, section, key, source, _h, until),
        tags,
    ) in zip(rows, all_tags, strict=True):
        try:
            created = aware(stamp)
        except ValueError:
            unreadable[agent_id].add(rid)
            continue
        if not stored_readable(kind, len(content), tags, label):
            unreadable[agent_id].add(rid)
            continue
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
                sightings=tuple(seen.get(rid, ())),
                valid_until=_moment(until),
                sighting_windows=tuple(windows.get(rid, ())),
            )
        )
    return Placed(placed, unreadable)


def _sightings(
    rows: list[_PlacedRow], unreadable: dict[int, set[str]]
) -> tuple[dict[str, list[str]], dict[str, list[tuple[str, datetime]]]]:
    """The readable sightings among ``rows``, by the holder they corroborate, and the
    validity windows of those that have one, by holder too."""
    seen: dict[str, list[str]] = defaultdict(list)
    windows: dict[str, list[tuple[str, datetime]]] = defaultdict(list)
    for agent_id, rid, kind, content, _t, label, stamp, _s, _k, _src, holder, until in rows:
        if holder is None:
            continue
        try:
            aware(stamp)
        except ValueError:
            unreadable[agent_id].add(rid)
            continue
        if not stored_readable(kind, len(content), [], label):
            unreadable[agent_id].add(rid)
            continue
        seen[holder].append(rid)
        window = _moment(until)
        if window is not None:
            windows[holder].append((rid, window))
    return seen, windows


SNIPPET_CHARS = 140


def record_briefs(agent: Agent, record_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Id, kind, label, the start of the content, tier, promotion status and
    ``valid_until`` of each of
    ``record_ids`` that is a memory of ``agent`` (one query, none for no ids).

    Only what a page shows is read, and only the first characters of the content, so an
    agent with thousands of long memories stays cheap to show.
    """
    ids = list(dict.fromkeys(record_ids))
    if not ids:
        return {}
    rows = Promotion.objects.filter(agent=agent, record_id__in=ids).values_list(
        "record_id",
        "status",
        "tier",
        "record__kind",
        "record__label",
        Substr("record__content", 1, SNIPPET_CHARS + 1),
        "record__valid_until",
    )
    briefs = {}
    for record_id, status, tier, kind, label, head, until in rows:
        brief = _brief(kind, label, head, status == PromotionStatus.ERASED)
        # What the lens's tooltips tell beside it (``provenance``), and when its window
        # closes (the lens marks one closing within days).
        brief.update(status=status, tier=tier, valid_until=until)
        briefs[record_id] = brief
    return briefs


# What names an erased memory where its words were (SPEC §15).
ERASED_WORDS = "[erased]"


def _brief(kind: str, label: str | None, head: str, erased: bool = False) -> dict[str, Any]:
    if erased:
        return {"kind": kind, "label": None, "snippet": ERASED_WORDS, "erased": True}
    snippet = head if len(head) <= SNIPPET_CHARS else head[:SNIPPET_CHARS].rstrip() + "…"
    return {"kind": kind, "label": label, "snippet": snippet, "erased": False}


def briefs_of(record_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Kind, label and the start of the content of each of ``record_ids`` that still
    exists (one query)."""
    rows = MemoryRecord.objects.filter(pk__in=list(record_ids)).values_list(
        "pk", "kind", "label", Substr("content", 1, SNIPPET_CHARS + 1), "erased_at"
    )
    return {
        record_id: _brief(kind, label, head, erased_at is not None)
        for record_id, kind, label, head, erased_at in rows
    }


@dataclass(frozen=True)
class Provenance:
    """Where a memory came from and who let it into the prompt (the lens's tooltip)."""

    memory_id: str
    kind: str
    label: str | None
    tier: str | None  # the section's tier when it was saved; None without a placement
    status: str
    # The actor and time of its ``saved`` event (written with the record; None only for
    # rows stored without one).
    saved_at: datetime | None
    saved_by: str | None
    # The latest ``approved`` event: None when it was approved on saving (an auto tier)
    # or never approved.
    approved_by: str | None
    approved_at: datetime | None


def provenance(
    record_ids: Iterable[str], briefs: dict[str, dict[str, Any]]
) -> dict[str, Provenance]:
    """The provenance of each of ``record_ids`` found in ``briefs`` (``record_briefs``'),
    with who saved and who approved it from its events (one query, however many)."""
    ids = [record_id for record_id in record_ids if record_id in briefs]
    events: dict[tuple[str, str], tuple[str, datetime]] = {}
    for record_id, kind, actor, at in (
        MemoryEvent.objects.filter(
            record_id__in=ids, kind__in=(EventKind.SAVED, EventKind.APPROVED)
        )
        .order_by("at", "id")
        .values_list("record_id", "kind", "actor", "at")
    ):
        events[(record_id, kind)] = (actor, at)  # oldest first: the latest one stays
    found = {}
    for record_id in ids:
        brief = briefs[record_id]
        saved = events.get((record_id, EventKind.SAVED))
        approved = events.get((record_id, EventKind.APPROVED))
        found[record_id] = Provenance(
            memory_id=record_id,
            kind=brief["kind"],
            label=brief["label"],
            tier=brief["tier"],
            status=brief["status"],
            saved_at=saved[1] if saved else None,
            saved_by=saved[0] if saved else None,
            approved_by=approved[0] if approved else None,
            approved_at=approved[1] if approved else None,
        )
    return found


def view_of(record: MemoryRecord) -> MemoryView:
    """The stored row as readers see it; raises ValidationError when it no longer parses."""
    return MemoryView.model_validate(
        {
            "id": record.pk,
            "kind": record.kind,
            "content": record.content,
            "tags": tuple(record.tags or ()),
            "label": record.label,
            "supersedes": record.supersedes_id,
            "created_at": record.created_at,
            "valid_until": record.valid_until,
        }
    )


def listed(records: QuerySet[MemoryRecord], kind: str | None = None) -> QuerySet[MemoryRecord]:
    """``records`` of one ``kind`` (any when empty), in the listing order every reader
    shares (SPEC §6.2): newest first, ties by id. The API and the memories page both
    list through here.
    """
    if kind:
        records = records.filter(kind=kind)
    return records.order_by("-created_at", "id")


@dataclass(frozen=True)
class MemoryPage:
    memories: list[MemoryView]
    skipped: int  # stored rows on this page that no longer parse
    next_offset: int | None


def memory_page(
    agent: Agent, kind: str | None, limit: int, offset: int, *, query: str | None = None
) -> MemoryPage:
    """One page of ``agent``'s memories: newest first (ties by id), or with ``query``
    the records that match it, best first. A row that no longer parses costs one
    record, never the listing: it is skipped and counted.
    """
    if query is None:
        # Erased records are left out: a view holds content, and theirs is gone.
        current = MemoryRecord.objects.filter(agent=agent, erased_at__isnull=True)
        page = list(listed(current, kind)[offset : offset + limit + 1])
    else:
        # Search (SPEC §6.2): best match first, in the backend's ranking.
        ids = search.search([agent.pk], query, kind, limit + 1, offset)
        # An erased record's document holds no terms, so no search finds it.
        found = MemoryRecord.objects.filter(erased_at__isnull=True).in_bulk(ids)
        page = [found[i] for i in ids if i in found]
    views, skipped = [], 0
    for record in page[:limit]:
        try:
            views.append(view_of(record))
        except ValidationError:
            skipped += 1
    return MemoryPage(views, skipped, offset + limit if len(page) > limit else None)


def unreadable_memories() -> list[str]:
    """Ids of every stored memory whose row no longer reads as a record (``doctor``).
    Reads four small columns of each row, in chunks."""
    # An erased record is blank on purpose: it reads as a tombstone, not as a bad row.
    rows = (
        MemoryRecord.objects.filter(erased_at__isnull=True)
        .order_by("pk")
        .values_list("pk", "kind", Length("content"), "tags", "label")
    )
    return [
        record_id
        for record_id, kind, length, tags, label in rows.iterator(chunk_size=2000)
        if stored_problem(kind, length, tags or [], label) is not None
    ]


@dataclass(frozen=True)
class Reopening:
    """Who put a memory back into the approval queue, when, and why."""

    by: str  # as events name actors
    at: datetime
    note: str


def latest_reopenings(
    events: Iterable[tuple[str, str, datetime, Any]],
) -> dict[str, Reopening]:
    """Each record's latest reopening among ``events`` ((record id, actor, at, detail) of
    ``reopened`` events, oldest first). An undo is not a reopening: it puts the row back
    as it was before the decision it takes back, which the reopening before it (if any)
    still explains."""
    found: dict[str, Reopening] = {}
    for record_id, actor, at, detail in events:
        details = detail if isinstance(detail, dict) else {}
        if "undone" not in details:
            found[record_id] = Reopening(actor, at, str(details.get("reason", "")))
    return found


def reopenings(record_ids: Iterable[str]) -> dict[str, Reopening]:
    """The latest reopening of each of ``record_ids`` that was reopened (one query)."""
    ids = list(record_ids)
    if not ids:
        return {}
    events = MemoryEvent.objects.filter(record_id__in=ids, kind=EventKind.REOPENED).order_by(
        "at", "id"
    )
    return latest_reopenings(events.values_list("record_id", "actor", "at", "detail"))


def with_last_change(queryset: QuerySet[Agent]) -> QuerySet[Agent]:
    """Each agent with ``last_revised`` and ``last_memory_event``: when its declarations
    last changed and when anything last happened to one of its memories (saved, decided,
    erased...). Two correlated subqueries in the agents' own statement, each one probe of
    an (agent, time) index, so a list of agents costs no query more."""
    revised = Revision.objects.filter(agent=OuterRef("pk")).order_by("-created_at")
    touched = MemoryEvent.objects.filter(agent=OuterRef("pk")).order_by("-at")
    return queryset.annotate(
        last_revised=Subquery(revised.values("created_at")[:1]),
        last_memory_event=Subquery(touched.values("at")[:1]),
    )


def last_change(agent: Agent) -> datetime:
    """The latest of an agent's changes that ``with_last_change`` read (its row's own
    ``updated_at`` before either exists)."""
    moments = [
        getattr(agent, "last_revised", None),
        getattr(agent, "last_memory_event", None),
    ]
    return max((m for m in moments if m is not None), default=agent.updated_at)
