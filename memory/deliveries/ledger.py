"""Deliveries (SPEC §11): record what a model was handed, and read it back unchanged.

A delivery row is small; the composition it points at is stored once per distinct
content (``StoredComposition``, addressed by the SHA-256 of its canonical JSON) and its
memories are indexed (``CompositionMemory``). Nothing here updates a delivery or a
stored composition: the only writes are inserts, the operator's ``prune``, and the
redaction of an erased memory's lines (``memory.erasure``).
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from lens.actors import Actor
from lens.agents import with_config
from lens.audit import Entry, append_one
from lens.core.cache_prefix import CachePrefix
from lens.core.errors import DomainError
from lens.inserts import insert_statement
from lens.models import Agent, Team
from lens.tracing import DELIVERY_ID, PROMPT_SHA256, PROMPT_TOKENS, agent_attributes, span
from memory.composed import Current, current, keeps
from memory.core.composition import Composition
from memory.core.deliveries import (
    Change,
    Comparison,
    DeliveryInput,
    Facts,
    compare,
    sha256_hex,
)
from memory.core.records import is_record_id
from memory.deliveries import cache_figures
from memory.deliveries.cache_figures import Previous
from memory.deliveries.causes import Causes, causes_between
from memory.deliveries.erasure_lock import erasure_key
from memory.deliveries.reads import DeliveryReads, delivery_reads
from memory.models import (
    CompositionMemory,
    Delivery,
    StoredComposition,
)
from memory.moments import moment_after

# Fast to compress and to read back; a 460 KB composition becomes about a tenth.
_ZLIB_LEVEL = 1


class DeliveryNotFound(DomainError):
    code = "delivery_not_found"


class DeliveriesBusy(DomainError):
    code = "deliveries_busy"


_INSERT_ATTEMPTS = 20
# An agent read without its revision number is read again (``_at_one_state``).
_UNSET = object()


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
    with span("lens.deliver") as current:
        delivered = _deliver(agent, actor, request)
        if current.is_recording():
            stored = delivered.delivery.composition
            current.set_attributes(
                {
                    **agent_attributes(agent),
                    DELIVERY_ID: str(delivered.delivery.pk),
                    PROMPT_SHA256: stored.prompt_sha256,
                    PROMPT_TOKENS: stored.tokens,
                }
            )
        return delivered


def _deliver(agent: Agent, actor: Actor, request: DeliveryInput | None) -> Delivered:
    request = request or DeliveryInput()
    counting = cache_figures.ENABLED  # read once: the benchmark switches it
    # Composed before the transaction when it can be judged by its stamp: a kept
    # composition costs no statement, and the stamp is read again once the locks are
    # held (``_at_one_state``).
    early = _composed_early(agent)
    with transaction.atomic():
        # Before the composition is trusted: an erasure of one of the agent's memories
        # either committed already (then the stamp read after the lock says so, and the
        # agent is composed again) or waits for this delivery to commit (then it redacts
        # this composition too). The timeline's lock too (``cache_figures``), so the
        # newest delivery read next is this one's previous.
        _hold(agent.pk, timeline=counting)
        found = _at_one_state(agent, early)
        if found is None:
            raise DeliveriesBusy("The agent is being changed too often at once; try again.")
        agent, now, reads = found
        composition, text, digest = now.composition, now.canonical_json(), now.digest()
        stored = reads.stored or _store_composition(agent, composition, text, digest, looked=True)
        previous = reads.previous
        measured: tuple[Previous | None, CachePrefix] | None = None
        for _attempt in range(_INSERT_ATTEMPTS):
            figures: CachePrefix | None = None
            if counting:
                if measured is None or measured[0] != previous:
                    measured = (previous, cache_figures.measure(composition, stored, previous))
                figures = measured[1]
            delivery = Delivery(
                agent=agent,
                composition=stored,
                delivered_at=moment_after(None if previous is None else previous.delivered_at),
                session=request.session,
                model=request.model,
                actor_token=actor.token,
                revision=reads.revision or None,
                **cache_figures.columns(figures),
            )
            # The row and the audit event (PostgreSQL: the row with the head's bump, one
            # round trip): when the row is refused, nothing is appended.
            entry = _delivery_entry(agent, delivery, stored)
            if append_one(agent.team_id, actor, entry, first=insert_statement(delivery)):
                return Delivered(delivery=delivery, composition_json=text)
            # Another delivery of this agent took the same microsecond (or, once in 2^36,
            # the same id): read the newest time again and step past it.
            previous = cache_figures.newest(agent.pk)
    raise DeliveriesBusy("The agent is being delivered too often at once; try again.")


def _hold(agent_id: int, *, timeline: bool) -> None:
    """The erasure lock (shared) and, when ``timeline``, the timeline's: one statement."""
    keys = [erasure_key(agent_id)] + ([cache_figures.timeline_key(agent_id)] if timeline else [])
    if connection.vendor == "postgresql":
        taken = ["pg_advisory_xact_lock_shared(%s)", "pg_advisory_xact_lock(%s)"][: len(keys)]
        with connection.cursor() as cursor:
            # The erasure's first, then the timeline's (left to right), as before.
            cursor.execute("SELECT " + ", ".join(taken), keys)


def _composed_early(agent: Agent) -> Current | None:
    """``agent``'s composition before the transaction, when the agent was read with its
    stamp and revision number (``memory.deliveries.reads``) and compositions are kept:
    what it is made of is checked against the stamp once the locks are held."""
    if (
        not keeps()
        or getattr(agent, "stamp_read", None) is None
        or not hasattr(agent, "revision_number")
    ):
        return None
    return current(agent)


def _at_one_state(
    agent: Agent, early: Current | None
) -> tuple[Agent, Current, DeliveryReads] | None:
    """The composition to deliver with what the transaction read for it (after its
    locks): one whose declarations are the revision read (a config and its revision
    commit together), and, when it was composed before the locks, whose stamp is still
    the agent's (nothing it is made of changed since, an erasure included). When a
    change interleaved, the agent is read again and composed in the transaction."""
    now = early
    for _attempt in range(_INSERT_ATTEMPTS):
        inside = now is None
        if now is None:
            now = _composed(agent)
        reads = delivery_reads(agent.pk, now.digest())
        same_revision = getattr(agent, "revision_number", _UNSET) == (reads.revision or None)
        stamp = now.entry.stamp
        if same_revision and (inside or (stamp is not None and stamp == reads.stamp)):
            return agent, now, reads
        agent = with_config(Agent.objects.filter(pk=agent.pk).select_related("team")).get()
        now = None
    return None


def _composed(agent: Agent) -> Current:
    # Composed once per change (``memory.composed``): this transaction has written
    # nothing yet, so the stamp it reads is the truth about what it would compose. Read
    # again, not the one read with the agent: that was before the locks (``_hold``),
    # and an erasure that committed in between must not come back from the composition
    # kept for it.
    return current(agent, fresh_transaction=True, stamp_again=True)


def _delivery_entry(agent: Agent, delivery: Delivery, stored: StoredComposition) -> Entry:
    # The session and model are the runtime's own labels: ids, kept as it sent them.
    return Entry(
        "delivery.recorded",
        "delivery",
        str(delivery.pk),
        agent.slug,
        {
            "revision": delivery.revision,
            "prompt_sha256": stored.prompt_sha256,
            "composition_sha256": stored.digest,
            "session": delivery.session,
        },
    )


def _memory_ids(composition: Composition) -> list[str]:
    return sorted({mid for section in composition.prompt.sections for mid in section.memory_ids})


def _store_composition(
    agent: Agent, composition: Composition, text: str, digest: str, *, looked: bool = False
) -> StoredComposition:
    """The stored row of ``text``, created when there is none, and held until this
    transaction ends so that no prune deletes it under the delivery about to use it.

    Two deliveries of one new composition may both try to create it: the unique
    (agent, digest) makes the second wait for the first to commit, then fail, and it
    reads the row again. A prune may delete the row between two reads: it is created
    again. Each turn of the loop ends in one of these, so it is short. ``looked``: the
    caller found no row already (``reads.delivery_reads``), so the first turn creates it.
    """
    for _attempt in range(_INSERT_ATTEMPTS):
        found = None if looked else _held(agent, digest)
        looked = False
        if found is not None:
            return found
        try:
            with transaction.atomic():  # a savepoint: a clash leaves the rest intact
                return _create(agent, composition, text, digest)
        except IntegrityError:
            continue
    raise DeliveriesBusy("The agent is being delivered too often at once; try again.")


def _held(agent: Agent, digest: str) -> StoredComposition | None:
    """The stored row of ``digest``, locked against deletion until the transaction ends.

    On PostgreSQL, FOR KEY SHARE: deliveries of one composition share it, and a prune's
    FOR UPDATE on the row waits for them (and then sees their deliveries), or they wait
    for the prune, and then find no row (READ COMMITTED skips a row deleted while it
    waited). SQLite needs no lock: its transactions here take the database's one write
    lock at BEGIN (IMMEDIATE), so a prune and a delivery never overlap.
    """
    lock = " FOR KEY SHARE" if connection.vendor == "postgresql" else ""
    table = StoredComposition._meta.db_table
    found = StoredComposition.objects.raw(
        f"SELECT * FROM {table} WHERE agent_id = %s AND digest = %s{lock}",
        [agent.pk, digest],
    )
    return next(iter(found), None)


def _create(agent: Agent, composition: Composition, text: str, digest: str) -> StoredComposition:
    memory_ids = _memory_ids(composition)
    prompt = composition.prompt.text
    stored = StoredComposition.objects.create(
        agent=agent,
        digest=digest,
        body=packed(text),
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
    return stored


def packed(text: str) -> bytes:
    """A composition's canonical JSON as ``StoredComposition.body`` keeps it."""
    return zlib.compress(text.encode("utf-8"), _ZLIB_LEVEL)


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


def listing(queryset: QuerySet[Delivery]) -> QuerySet[Delivery]:
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
        .select_related("agent", "composition", "actor_token__user")
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
    fetched = list(listing(queryset)[offset : offset + limit + 1])
    return fetched, rows_from(fetched, limit)


def rows_from(fetched: list[Delivery], limit: int) -> list[Row]:
    """The first ``limit`` of ``fetched`` (a listing's rows, newest first, with the one
    after the page when there is one) with their change columns."""
    rows = []
    for index, delivery in enumerate(fetched[:limit]):
        previous = fetched[index + 1] if index + 1 < len(fetched) else None
        rows.append(Row(delivery=delivery, change=_change(previous, delivery)))
    return rows


def _compositions_holding(agent: Agent, memory_id: str) -> QuerySet[CompositionMemory, Any]:
    return CompositionMemory.objects.filter(memory_id=memory_id, composition__agent=agent).values(
        "composition_id"
    )


def shaped_by(agent: Agent, memory_id: str, limit: int) -> tuple[list[Delivery], int]:
    """The newest ``limit`` deliveries whose prompt held ``memory_id``, and how many
    there are in all."""
    shown = list(listing(deliveries_of(agent, memory=memory_id))[:limit])
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


def neighbours(delivery: Delivery) -> tuple[Delivery | None, Delivery | None]:
    """The same agent's deliveries just before and just after ``delivery`` (two lookups
    on the agent-and-time index; only their ids and times are read)."""
    same = Delivery.objects.filter(agent_id=delivery.agent_id).only("id", "delivered_at")
    before = same.filter(delivered_at__lt=delivery.delivered_at).order_by("-delivered_at").first()
    after = same.filter(delivered_at__gt=delivery.delivered_at).order_by("delivered_at").first()
    return before, after


def recent_deliveries(agent: Agent, limit: int) -> list[Delivery]:
    """``agent``'s newest ``limit`` deliveries, their ids, times and sessions only."""
    return list(
        Delivery.objects.filter(agent=agent)
        .only("id", "delivered_at", "session")
        .order_by("-delivered_at")[:limit]
    )


def delivered_prompt(delivery: Delivery) -> str:
    """The prompt text exactly as it was handed to the model (its SHA-256 is the stored
    ``prompt_sha256``)."""
    return composition_of(delivery.composition).prompt.text


def last_delivery(agent: Agent) -> Delivery | None:
    return listing(Delivery.objects.filter(agent=agent)).first()


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
    causes: Causes


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
        causes=causes_between(before, after),
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
