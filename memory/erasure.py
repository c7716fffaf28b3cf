"""Erasing a memory on request (SPEC §15): its content, label and tags leave every place
they were stored, and what stays says that it existed and who erased it, when and why.

In one transaction:

- the record keeps its id, kind, times and ``supersedes``, gains the SHA-256 of the
  content it had (the hash its ``memory.saved`` audit event already holds) and who
  erased it, when and why; its content, label and tags are blanked;
- its promotion row becomes ``erased``: it holds no address (the key, which a label
  names, goes too) and never composes again (drop reason ``erased``); the rows a
  migration replaced (``MigratedPromotion``) and its ``migrated`` events lose their keys
  too (the audit log only ever held the keys' hashes);
- the reviewers' notes on it (decision notes, the reasons of its events) are reduced to
  their lengths: a note about a memory may quote it;
- its search document is emptied, and the index keeps no trace of its terms;
- every stored composition that held it is redacted (``memory.core.redaction``): each
  distinct composition once, however many deliveries share it; deliveries keep the
  ``prompt_sha256`` they were recorded with and say they were redacted;
- an ``erased`` event and its ``memory.erased`` audit event (hash, sizes and counts:
  no text).

After the commit, SQLite's write-ahead log is checkpointed and truncated, so the old
pages are in neither file (``PRAGMA secure_delete`` has zeroed what the transaction
freed). PostgreSQL keeps old row versions until VACUUM: ``vacuum_erased()``, which the
command runs once it has committed, and which a caller that must not wait for it (the
Erase button) has the task engine run (``vacuum_later``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import connection, transaction
from django.utils import timezone
from django_tasks import task

from lens.actors import Actor
from lens.core.errors import DomainError
from lens.core.text import unstorable
from lens.models import Team
from memory import composed, search
from memory.core.deliveries import sha256_hex
from memory.core.records import forbidden_char, is_record_id
from memory.core.redaction import holds_any, redact
from memory.deliveries.erasure_lock import exclude_deliveries
from memory.deliveries.ledger import composition_of, packed
from memory.events import write_events
from memory.models import (
    CompositionMemory,
    Delivery,
    EventKind,
    MemoryEvent,
    MemoryRecord,
    MigratedPromotion,
    Promotion,
    PromotionStatus,
    StoredComposition,
    new_event,
)

REASON_MAX = 500
# How long the WAL checkpoint after an erasure waits for readers (SQLite holds new
# writers back meanwhile).
CHECKPOINT_WAIT_MS = 2000
logger = logging.getLogger(__name__)
# Compositions read at a time: their bodies are the large column.
_CHUNK = 100
# The events whose ``reason`` is a person's note (a declined event's is an outcome code).
_NOTED = (EventKind.APPROVED, EventKind.REJECTED, EventKind.REVOKED, EventKind.REOPENED)
# What PostgreSQL's VACUUM goes over after an erasure: every table that held its words.
ERASED_TABLES = (
    "memory_memoryrecord",
    "memory_searchdoc",
    "memory_promotion",
    "memory_migrated_promotion",
    "memory_memoryevent",
    "memory_composition",
)


class MemoryNotFound(DomainError):
    code = "memory_not_found"


class AlreadyErased(DomainError):
    code = "already_erased"


class InvalidEraseReason(DomainError):
    code = "invalid_erase_reason"


@dataclass(frozen=True)
class Erased:
    """What an erasure did: the record, its agent, and how much it redacted."""

    record_id: str
    agent: str  # the agent's slug
    team: str  # the team's slug
    at: datetime
    content_sha256: str
    compositions: int  # distinct stored compositions redacted
    deliveries: int  # deliveries that use them
    # SQLite: whether the write-ahead log was truncated after the commit (``checkpoint``);
    # None on PostgreSQL, or when the caller's transaction has not committed yet.
    log_truncated: bool | None = None
    # PostgreSQL: whether the VACUUM was queued for the task engine (``vacuum_later``).
    vacuum_queued: bool = False


def reason_problem(reason: str) -> str | None:
    """Why ``reason`` cannot be an erasure's reason, or None. One line, required, bounded."""
    if not reason.strip():
        return "A reason is required: say why the memory is erased (a request, a ticket)."
    if len(reason) > REASON_MAX:
        return f"The reason is at most {REASON_MAX} characters; this one has {len(reason)}."
    if unstorable(reason) or forbidden_char(reason) is not None:
        return "The reason must be one line of text, without control characters."
    return None


def find_record(record_id: str, team: Team | None = None) -> MemoryRecord:
    """The memory ``record_id`` (of ``team``, when given), or MemoryNotFound."""
    rows = MemoryRecord.objects.filter(pk=record_id) if is_record_id(record_id) else None
    if rows is not None and team is not None:
        rows = rows.filter(agent__team=team)
    record = rows.select_related("agent__team").first() if rows is not None else None
    if record is None:
        where = f" in team {team.slug}" if team is not None else ""
        raise MemoryNotFound(f"No memory {record_id!r}{where}.", memory_id=record_id)
    return record


def erase_memory(
    record_id: str,
    actor: Actor,
    reason: str,
    *,
    team: Team | None = None,
    vacuum_later: bool = False,
) -> Erased:
    """Erase the memory ``record_id`` (of ``team``, when given) for ``reason``.

    ``vacuum_later``: on PostgreSQL, queue ``vacuum_erased`` on the task engine in the
    erasure's own transaction (so an erasure that commits always has its VACUUM to
    come, and a worker runs it once the erasure is visible), for a caller that must not
    wait for it. Raises InvalidEraseReason, MemoryNotFound or AlreadyErased, and then
    changes nothing.
    """
    reason = reason.strip()
    if (problem := reason_problem(reason)) is not None:
        raise InvalidEraseReason(problem, limit=REASON_MAX)
    found = find_record(record_id, team)
    with transaction.atomic():
        exclude_deliveries(found.agent_id)
        # Locked, then read again: of two erasures of one memory, the second finds it erased.
        record = MemoryRecord.objects.select_for_update().get(pk=found.pk)
        if record.erased_at is not None:
            raise AlreadyErased(
                f"Memory {record.pk} was already erased by {record.erased_by or 'someone'} "
                f"on {record.erased_at:%Y-%m-%d %H:%M} UTC; nothing was changed.",
                memory_id=record.pk,
            )
        at = timezone.now()
        digest = sha256_hex(record.content)
        MemoryRecord.objects.filter(pk=record.pk).update(
            content="",
            label=None,
            tags=[],
            content_sha256=digest,
            erased_at=at,
            erased_by=actor.label,
            erase_reason=reason,
        )
        Promotion.objects.filter(record_id=record.pk).update(
            status=PromotionStatus.ERASED, key=None, placement_key=None, decision_note=""
        )
        # The rows a migration replaced, and the addresses its events name, as the
        # live row: no key (a label names it) and no note.
        MigratedPromotion.objects.filter(record_id=record.pk).update(
            key=None, placement_key=None, new_key=None, decision_note=""
        )
        _shorten_notes(record.pk)
        _forget_migrated_keys(record.pk)
        search.forget(record.pk)
        compositions, deliveries = _redact_compositions(record.pk, at)
        write_events(
            [
                new_event(
                    record.pk,
                    record.agent_id,
                    EventKind.ERASED,
                    actor,
                    at,
                    content_sha256=digest,
                    reason=reason,
                    compositions=compositions,
                    deliveries=deliveries,
                )
            ],
            agent=found.agent,
        )
        # This process's kept composition of the agent holds the words: dropped at once
        # (another process drops its own at its next read, the stamp having changed).
        agent_id = record.agent_id
        transaction.on_commit(lambda: composed.forget(agent_id))
        queued = vacuum_later and connection.vendor == "postgresql"
        if queued:
            vacuum.enqueue()
    if connection.in_atomic_block:  # the caller's transaction: once it commits
        transaction.on_commit(checkpoint)
        truncated = None
    else:
        truncated = checkpoint()
    return Erased(
        record_id=record.pk,
        agent=found.agent.slug,
        team=found.agent.team.slug,
        at=at,
        content_sha256=digest,
        compositions=compositions,
        deliveries=deliveries,
        log_truncated=truncated,
        vacuum_queued=queued,
    )


def _shorten_notes(record_id: str) -> None:
    """The reviewers' notes on the record, as their lengths (a few events per record)."""
    for event in MemoryEvent.objects.filter(record_id=record_id, kind__in=_NOTED):
        detail = event.detail if isinstance(event.detail, dict) else {}
        if "reason" not in detail:
            continue
        kept = {key: value for key, value in detail.items() if key != "reason"}
        kept["note_chars"] = len(str(detail["reason"]))
        MemoryEvent.objects.filter(pk=event.pk).update(detail=kept)


def _forget_migrated_keys(record_id: str) -> None:
    """The addresses of the record's ``migrated`` events without their keys (a record
    moves a few times at most)."""
    for event in MemoryEvent.objects.filter(record_id=record_id, kind=EventKind.MIGRATED):
        detail = dict(event.detail) if isinstance(event.detail, dict) else {}
        for end in ("from", "to"):
            if isinstance(detail.get(end), dict):
                detail[end] = {"section": detail[end].get("section"), "key": None}
        MemoryEvent.objects.filter(pk=event.pk).update(detail=detail)


def _redact_compositions(record_id: str, at: datetime) -> tuple[int, int]:
    """Redact each stored composition that held ``record_id``, once each (an indexed
    lookup by memory); how many compositions, and how many deliveries use them."""
    ids = list(
        CompositionMemory.objects.filter(memory_id=record_id)
        .order_by("composition_id")
        .values_list("composition_id", flat=True)
    )
    erased = frozenset({record_id})
    redacted = 0
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        for stored in StoredComposition.objects.filter(pk__in=chunk).only("pk", "body"):
            composition = composition_of(stored)
            if not holds_any(composition, erased):
                continue
            body = packed(redact(composition, erased).canonical_json())
            redacted += StoredComposition.objects.filter(pk=stored.pk).update(
                body=body, redacted_at=at
            )
    deliveries = Delivery.objects.filter(composition_id__in=ids).count() if ids else 0
    return redacted, deliveries


def checkpoint() -> bool | None:
    """SQLite: copy the write-ahead log into the database file and truncate it, so the
    pages an erasure replaced are in neither file. True when it completed, False when
    readers kept it from completing, None on PostgreSQL (which has no such file).

    While it waits for readers to leave older snapshots, SQLite holds new writers back:
    so it waits at most ``CHECKPOINT_WAIT_MS`` (not the connection's whole busy timeout)
    and then gives up, to be done by the next checkpoint."""
    if connection.vendor != "sqlite" or connection.in_atomic_block:
        return None
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA busy_timeout")
        usual = int(cursor.fetchone()[0])
        cursor.execute(f"PRAGMA busy_timeout = {CHECKPOINT_WAIT_MS}")
        try:
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            row = cursor.fetchone()
        finally:
            cursor.execute(f"PRAGMA busy_timeout = {usual}")
    # (busy, pages in the log, pages checkpointed); busy is 1 when it could not finish.
    done = row is None or int(row[0]) == 0
    if not done:
        logger.warning(
            "An erasure could not truncate the SQLite write-ahead log (readers were busy); "
            "run PRAGMA wal_checkpoint(TRUNCATE) when the server is quiet."
        )
    return done


def vacuum_erased(tables: Sequence[str] = ERASED_TABLES) -> bool:
    """PostgreSQL: VACUUM the tables an erasure changed, so the space of the old row
    versions can be reused (it is not zeroed, and WAL segments and backups keep theirs).
    Must run outside a transaction; False when it could not (inside one, or SQLite)."""
    if connection.vendor != "postgresql" or connection.in_atomic_block:
        return False
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM {', '.join(tables)}")
    return True


@task()
def vacuum() -> bool:
    """``vacuum_erased`` on the task engine's worker (``manage.py worker``), which runs
    each task outside a transaction, as VACUUM must; answers whether it ran."""
    return vacuum_erased()
