"""Deliveries (SPEC §11): record what a model was handed, and read it back unchanged.

A delivery row is small; the composition it points at is stored once per distinct
content (``StoredComposition``, addressed by the SHA-256 of its canonical JSON) and its
memories are indexed (``CompositionMemory``). Nothing here updates a delivery or a
stored composition: the only writes are inserts, and the operator's ``prune``.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import Exists, OuterRef, QuerySet, Sum
from django.db.models.functions import Length
from django.utils import timezone

from lens.actors import Actor
from lens.core.composition import Composition
from lens.core.errors import DomainError
from lens.models import Agent, Team
from memory.composition import compose
from memory.core.deliveries import (
    Change,
    Comparison,
    DeliveryInput,
    Facts,
    compare,
    sha256_hex,
)
from memory.core.records import is_record_id
from memory.models import (
    CompositionMemory,
    Delivery,
    EventKind,
    MemoryEvent,
    MemoryRecord,
    Promotion,
    PromotionStatus,
    StoredComposition,
)

# Fast to compress and to read back; a 460 KB composition becomes about a tenth.
_ZLIB_LEVEL = 1


class DeliveryNotFound(DomainError):
    code = "delivery_not_found"


class DeliveriesBusy(DomainError):
    code = "store_busy"


_INSERT_ATTEMPTS = 20


@dataclass(frozen=True)
class Delivered:
    """A recorded delivery and its composition as the canonical JSON that was stored."""

    delivery: Delivery
    composition_json: str


def deliver(agent: Agent, actor: Actor, request: DeliveryInput | None = None) -> Delivered:
    """Compose ``agent`` and record the result as delivered, in one transaction.

    The caller answers with ``composition_json``: the very text that was stored, so a
    delivery can never disagree with what its runtime received.
    """
    request = request or DeliveryInput()
    with transaction.atomic():
        composition = compose(agent)
        text = canonical_json(composition)
        stored = _store_composition(agent, composition, text)
        for _attempt in range(_INSERT_ATTEMPTS):
            delivery = Delivery(
                agent=agent,
                composition=stored,
                delivered_at=_next_moment(agent),
                session=request.session,
                model=request.model,
                actor_token=actor.token,
            )
            try:
                with transaction.atomic():  # a savepoint: a clash leaves the rest intact
                    delivery.save(force_insert=True)
            except IntegrityError:
                # Another delivery of this agent took the same microsecond (or, once in
                # 2^36, the same id): read the newest time again and step past it.
                continue
            return Delivered(delivery=delivery, composition_json=text)
    raise DeliveriesBusy("The agent is being delivered too often at once; try again.")


def _next_moment(agent: Agent) -> datetime:
    """Now, or a microsecond after the agent's newest delivery if that is not earlier:
    an agent's delivery times are unique (a constraint), so the timeline's order is total.
    """
    now = timezone.now()
    newest = (
        Delivery.objects.filter(agent=agent)
        .order_by("-delivered_at")
        .values_list("delivered_at", flat=True)
        .first()
    )
    return max(now, newest + timedelta(microseconds=1)) if newest is not None else now


def _memory_ids(composition: Composition) -> list[str]:
    return sorted({mid for section in composition.prompt.sections for mid in section.memory_ids})


def canonical_json(composition: Composition) -> str:
    """The one text of a composition: compact JSON, fields in the schema's order (lists
    are ordered and the report's counts sorted, so equal compositions give equal text).
    pydantic writes it in Rust, three times faster than sorting keys with ``json``.
    """
    return composition.model_dump_json()


def _store_composition(agent: Agent, composition: Composition, text: str) -> StoredComposition:
    digest = sha256_hex(text)
    found = StoredComposition.objects.filter(agent=agent, digest=digest).first()
    if found is not None:
        return found
    memory_ids = _memory_ids(composition)
    prompt = composition.prompt.text
    try:
        # A concurrent delivery of the same new composition may insert it first; the
        # savepoint lets this transaction carry on with that row.
        with transaction.atomic():
            stored = StoredComposition.objects.create(
                agent=agent,
                digest=digest,
                body=zlib.compress(text.encode("utf-8"), _ZLIB_LEVEL),
                prompt_sha256=sha256_hex(prompt),
                chars=len(prompt),
                tokens=composition.tokens.total,
                sections=composition.counts.sections,
                entries=composition.counts.entries,
                memory_ids=" ".join(memory_ids),
                created_at=timezone.now(),
            )
            CompositionMemory.objects.bulk_create(
                [CompositionMemory(composition=stored, memory_id=mid) for mid in memory_ids],
                batch_size=500,
            )
    except IntegrityError:
        return StoredComposition.objects.get(agent=agent, digest=digest)
    return stored


# --- reading --------------------------------------------------------------------------


def composition_json(stored: StoredComposition) -> str:
    return zlib.decompress(bytes(stored.body)).decode("utf-8")


def composition_data(stored: StoredComposition) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(composition_json(stored))
    return data


def composition_of(stored: StoredComposition) -> Composition:
    """The stored composition as the model the pages render (the JSON is unchanged)."""
    return Composition.model_validate_json(composition_json(stored))


def memory_ids_of(stored: StoredComposition) -> frozenset[str]:
    return frozenset(stored.memory_ids.split())


def _listing(queryset: QuerySet[Delivery]) -> QuerySet[Delivery]:
    # The body is the one large column; listings never need it.
    return (
        queryset.select_related("composition").defer("composition__body").order_by("-delivered_at")
    )


def find_delivery(team: Team, delivery_id: str) -> Delivery:
    """``team``'s delivery ``delivery_id``; another team's does not exist here."""
    if not is_record_id(delivery_id):
        # Not an id this product makes (and nothing the database need be asked about).
        raise DeliveryNotFound(f"No delivery {delivery_id!r} in this team.")
    delivery = (
        Delivery.objects.filter(pk=delivery_id, agent__team=team)
        .select_related("agent", "composition", "actor_token")
        .first()
    )
    if delivery is None:
        raise DeliveryNotFound(f"No delivery {delivery_id!r} in this team.")
    delivery.agent.team = team
    return delivery


@dataclass(frozen=True)
class Row:
    delivery: Delivery
    change: Change

    @property
    def stored(self) -> StoredComposition:
        return self.delivery.composition


@dataclass(frozen=True)
class DeliveryPage:
    rows: list[Row]
    total: int
    next_offset: int | None


def deliveries_of(
    agent: Agent,
    *,
    session: str | None = None,
    memory: str | None = None,
    before: datetime | None = None,
) -> QuerySet[Delivery]:
    """``agent``'s deliveries, filtered; each filter is an index lookup. Their times are
    unique per agent, so ordering by time alone is a total order."""
    queryset = Delivery.objects.filter(agent=agent)
    if session is not None:
        queryset = queryset.filter(session=session)
    if memory is not None:
        queryset = queryset.filter(composition_id__in=_compositions_holding(agent, memory))
    if before is not None:
        queryset = queryset.filter(delivered_at__lte=before)
    return queryset


def delivery_page(
    agent: Agent,
    limit: int,
    offset: int = 0,
    *,
    session: str | None = None,
    memory: str | None = None,
    before: datetime | None = None,
) -> DeliveryPage:
    """Newest first (times are unique per agent: no ties), each row with what changed since the one
    after it in this listing (the previous delivery, or the previous of the filter).
    """
    queryset = deliveries_of(agent, session=session, memory=memory, before=before)
    fetched, rows = rows_of(queryset, offset, limit)
    # A page that is not full ends the listing, so it tells the total; a full page, or
    # an empty one past the end, needs the count.
    if len(fetched) > limit or (not fetched and offset > 0):
        total = queryset.count()
    else:
        total = offset + len(fetched)
    return DeliveryPage(
        rows=rows,
        total=total,
        next_offset=offset + limit if len(fetched) > limit else None,
    )


def rows_of(
    queryset: QuerySet[Delivery], offset: int, limit: int
) -> tuple[list[Delivery], list[Row]]:
    """``limit`` rows from ``offset`` with their change columns (one query): one more
    row than the page is read, the last row's predecessor."""
    fetched = list(_listing(queryset)[offset : offset + limit + 1])
    rows = []
    for index, delivery in enumerate(fetched[:limit]):
        previous = fetched[index + 1] if index + 1 < len(fetched) else None
        rows.append(Row(delivery=delivery, change=_change(previous, delivery)))
    return fetched, rows


def _compositions_holding(agent: Agent, memory_id: str) -> QuerySet[CompositionMemory, Any]:
    return CompositionMemory.objects.filter(memory_id=memory_id, composition__agent=agent).values(
        "composition_id"
    )


def shaped_by(agent: Agent, memory_id: str, limit: int) -> tuple[list[Delivery], int]:
    """The newest ``limit`` deliveries whose prompt held ``memory_id``, and how many
    there are in all."""
    shown = list(_listing(deliveries_of(agent, memory=memory_id))[:limit])
    # Counted on the composition index alone: the compositions are the
    # agent's, so their deliveries are too, and no agent filter need send the count
    # through the table.
    total = Delivery.objects.filter(
        composition_id__in=_compositions_holding(agent, memory_id)
    ).count()
    return shown, total


def _key(delivery: Delivery) -> tuple[int, frozenset[str]]:
    return delivery.composition_id, memory_ids_of(delivery.composition)


def _change(previous: Delivery | None, current: Delivery) -> Change:
    return Change.between(None if previous is None else _key(previous), _key(current))


def previous_delivery(delivery: Delivery) -> Delivery | None:
    """The same agent's delivery just before ``delivery`` (same order as the timeline)."""
    return (
        Delivery.objects.filter(agent_id=delivery.agent_id, delivered_at__lt=delivery.delivered_at)
        .select_related("composition")
        .order_by("-delivered_at")
        .first()
    )


def last_delivery(agent: Agent) -> Delivery | None:
    return _listing(Delivery.objects.filter(agent=agent)).first()


def _facts(stored: StoredComposition) -> Facts:
    composition = composition_of(stored)
    return Facts(
        prompt=composition.prompt.text,
        memory_ids=memory_ids_of(stored),
        tokens=stored.tokens,
    )


@dataclass(frozen=True)
class DeliveryDiff:
    """``before`` → ``after`` (``before`` None: the agent's first delivery)."""

    before: Delivery | None
    after: Delivery
    comparison: Comparison


def delivery_diff(team: Team, delivery_id: str, against: str | None = None) -> DeliveryDiff:
    """Delivery ``delivery_id`` against ``against`` (default: the same agent's previous
    delivery). Both must be ``team``'s and the same agent's.
    """
    after = find_delivery(team, delivery_id)
    if against is None:
        before = previous_delivery(after)
    else:
        before = find_delivery(team, against)
        if before.agent_id != after.agent_id:
            raise DeliveryNotFound(f"No delivery {against!r} of agent {after.agent.slug!r}.")
    return DeliveryDiff(
        before=before,
        after=after,
        comparison=compare(
            None if before is None else _facts(before.composition),
            _facts(after.composition),
            "(none)" if before is None else f"delivery {before.id}",
            f"delivery {after.id}",
        ),
    )


def live_diff(delivery: Delivery, live: Composition) -> Comparison:
    """What changed between ``delivery`` and the agent's live composition."""
    return compare(
        _facts(delivery.composition),
        Facts(
            prompt=live.prompt.text,
            memory_ids=frozenset(_memory_ids(live)),
            tokens=live.tokens.total,
        ),
        f"delivery {delivery.id}",
        "live prompt",
    )


# --- what happened to a delivered memory since --------------------------------------


@dataclass(frozen=True)
class Fate:
    """A delivered memory's state now: ``in-prompt``, ``superseded``, ``revoked``,
    ``rejected``, ``pending``, ``out`` (not composed, for a reason the lens shows) or
    ``deleted``; ``by``/``at`` say who and when where known; ``newer`` is the
    superseding memory's id.
    """

    state: str
    by: str = ""
    at: datetime | None = None
    newer: str = ""

    @property
    def words(self) -> str:
        """One line for people: "revoked by mira", "superseded by 0hon…"."""
        if self.state == "in-prompt":
            return "still in the prompt"
        if self.state == "superseded":
            return f"superseded by {self.newer}"
        if self.state in ("revoked", "rejected") and self.by:
            return f"{self.state} by {self.by}"
        if self.state == "out":
            return "no longer in the prompt"
        if self.state == "deleted":
            return "deleted since"
        return self.state


def fates(memory_ids: Iterable[str], live: frozenset[str]) -> dict[str, Fate]:
    """What has happened to each of ``memory_ids`` since it was delivered, given the
    memories the live prompt holds (three queries whatever the number of ids).
    """
    ids = list(memory_ids)
    statuses = dict(Promotion.objects.filter(record_id__in=ids).values_list("record_id", "status"))
    newer = {
        old: (new, at)
        for new, old, at in MemoryRecord.objects.filter(supersedes_id__in=ids)
        .order_by("created_at")
        .values_list("id", "supersedes_id", "created_at")
    }
    decided = {
        event.record_id: event
        for event in MemoryEvent.objects.filter(
            record_id__in=ids, kind__in=(EventKind.REVOKED, EventKind.REJECTED)
        ).order_by("at", "id")
    }
    found: dict[str, Fate] = {}
    for memory_id in ids:
        event = decided.get(memory_id)
        if memory_id not in statuses:
            found[memory_id] = Fate("deleted")
        elif memory_id in live:
            found[memory_id] = Fate("in-prompt")
        elif memory_id in newer:
            found[memory_id] = Fate("superseded", at=newer[memory_id][1], newer=newer[memory_id][0])
        elif event is not None and statuses[memory_id] == PromotionStatus.REJECTED:
            found[memory_id] = Fate(event.kind, by=event.actor, at=event.at)
        elif statuses[memory_id] == PromotionStatus.PENDING:
            found[memory_id] = Fate("pending")
        else:
            found[memory_id] = Fate("out")
    return found


# --- retention ------------------------------------------------------------------------


@dataclass(frozen=True)
class Pruned:
    deliveries: int
    compositions: int


def prune(older_than: timedelta, *, dry_run: bool = False) -> Pruned:
    """Remove deliveries older than ``older_than``, and the stored compositions no
    delivery uses any more (with their memory index rows). ``dry_run`` counts what
    would go, with the same filters, and removes nothing.
    """
    cutoff = timezone.now() - older_than
    old = Delivery.objects.filter(delivered_at__lt=cutoff)
    # Unused once the old ones are gone: no delivery at or after the cutoff uses it.
    unused = StoredComposition.objects.filter(
        ~Exists(Delivery.objects.filter(composition=OuterRef("pk"), delivered_at__gte=cutoff))
    )
    if dry_run:
        return Pruned(deliveries=old.count(), compositions=unused.count())
    with transaction.atomic():
        deliveries, _ = old.delete()
        unused_ids = list(unused.values_list("pk", flat=True))
        CompositionMemory.objects.filter(composition_id__in=unused_ids).delete()
        compositions, _ = StoredComposition.objects.filter(pk__in=unused_ids).delete()
    return Pruned(deliveries=deliveries, compositions=compositions)


@dataclass(frozen=True)
class Storage:
    deliveries: int
    compositions: int
    body_bytes: int
    table_bytes: int | None  # None where the database cannot tell


_TABLES = ("memory_delivery", "memory_composition", "memory_composition_memory")


def storage() -> Storage:
    """How many deliveries and distinct compositions there are, and the bytes they take."""
    body = StoredComposition.objects.aggregate(n=Sum(Length("body")))["n"] or 0
    return Storage(
        deliveries=Delivery.objects.count(),
        compositions=StoredComposition.objects.count(),
        body_bytes=body,
        table_bytes=_table_bytes(),
    )


def _table_bytes() -> int | None:
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT sum(pg_total_relation_size(to_regclass(name))) FROM unnest(%s::text[]) name",
                [list(_TABLES)],
            )
            return int(cursor.fetchone()[0] or 0)
        try:
            # SQLite's dbstat table counts the pages of each table and its indexes.
            cursor.execute(
                "SELECT sum(pgsize) FROM dbstat WHERE name IN "
                "(SELECT name FROM sqlite_master WHERE tbl_name IN (%s, %s, %s))",
                list(_TABLES),
            )
        except DatabaseError:  # dbstat is an optional SQLite feature
            return None
        return int(cursor.fetchone()[0] or 0)
