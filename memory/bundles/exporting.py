"""Exporting an agent as a bundle (SPEC §15), in bounded memory however much it holds.

The manifest comes first but holds the hash of every line after it. The lines are
therefore written first, compressed as they are read, to an anonymous temporary file,
and the manifest is made once they are all written; the bundle is then the manifest
followed by that file (``memory.core.gzip_splice``), streamed from disk. The other way
— a first pass over the database that only hashes, then a second that writes — would
read and serialise everything twice, and both passes would have to see one snapshot,
so the database would be held in a transaction for as long as the slowest client takes
to download. Here the database is read once, in one short snapshot, at the speed of the
database; the temporary file (about the size of the bundle) is gone when it is closed.

Every query reads its rows in chunks (``iterator(chunk_size=…)``) in a fixed order, so
nothing holds all of an agent's deliveries, and the same data always gives the same
lines, hence the same ``sha256``; only ``exported_at`` differs between two exports.
"""

from __future__ import annotations

import json
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, Any

from django.db import connection, transaction
from django.utils import timezone

from lens.agents import config_of, with_config
from lens.audit import event_data
from lens.models import Agent, AuditEvent, Revision
from memory.core.bundle_format import Body, BodyWriter, framing, manifest
from memory.core.bundle_lines import stamp
from memory.models import (
    Delivery,
    MemoryEvent,
    MemoryRecord,
    MigratedPromotion,
    Promotion,
    StoredComposition,
)
from memory.routing_cases import stored_cases

# Rows read per round trip. Memories hold up to 10,000 characters, compositions and
# revisions' configs up to a few hundred kilobytes (large agents): fewer of those.
ROWS_PER_FETCH = 1000
MEMORIES_PER_FETCH = 200
LARGE_ROWS_PER_FETCH = 10
# Bytes of the temporary file read at a time when the bundle is streamed.
STREAM_CHUNK = 64 * 1024


@dataclass
class Exported:
    """A bundle ready to be sent: ``head`` (gzip header and manifest), the compressed
    lines in ``body`` (a temporary file), then ``tail``. Read it once, with ``chunks``
    or ``write_to``; either closes the temporary file."""

    manifest: dict[str, Any]
    head: bytes
    body: IO[bytes]
    tail: bytes
    body_bytes: int
    _closed: bool = field(default=False, repr=False)

    @property
    def size(self) -> int:
        """The bundle's size in bytes (its ``Content-Length``)."""
        return len(self.head) + self.body_bytes + len(self.tail)

    def chunks(self) -> Iterator[bytes]:
        try:
            yield self.head
            self.body.seek(0)
            while chunk := self.body.read(STREAM_CHUNK):
                yield chunk
            yield self.tail
        finally:
            self.close()

    def write_to(self, out: IO[bytes]) -> None:
        for chunk in self.chunks():
            out.write(chunk)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.body.close()


def export_bundle(agent: Agent, *, at: datetime | None = None) -> Exported:
    """``agent`` as a bundle, read from one snapshot of the database. ``at`` is the
    export's time (``exported_at``; now when not given)."""
    spool = tempfile.TemporaryFile()  # noqa: SIM115  # closed by Exported, once sent
    try:
        writer = BodyWriter(spool)
        with snapshot():
            for line in bundle_lines(agent):
                writer.write(line)
        body = writer.finish()
        return _framed(agent, spool, body, at or timezone.now())
    except BaseException:
        spool.close()
        raise


def _framed(agent: Agent, spool: IO[bytes], body: Body, at: datetime) -> Exported:
    data = manifest(agent.slug, stamp(at), body)
    head, tail = framing(data, body)
    body_bytes = spool.tell()
    return Exported(manifest=data, head=head, body=spool, tail=tail, body_bytes=body_bytes)


@contextmanager
def snapshot() -> Iterator[None]:
    """Every read inside sees the database as it was at the first one: a delivery
    recorded meanwhile cannot appear in the bundle without its composition.

    PostgreSQL: a read-only REPEATABLE READ transaction. SQLite: a plain deferred read
    transaction, which in WAL mode sees one snapshot and blocks no writer (Django's
    ``atomic`` would begin IMMEDIATE here, taking the one write lock for the whole
    export). Inside a transaction already (a test, a caller's ``atomic``) the caller's
    transaction is the snapshot.
    """
    if connection.in_atomic_block:
        yield
        return
    if connection.vendor == "postgresql":
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield
        return
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("BEGIN DEFERRED")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("ROLLBACK")  # it only read


def bundle_lines(agent: Agent) -> Iterator[dict[str, Any]]:
    """Lines 2 to n of ``agent``'s bundle, in the order ``TYPES`` sets, each type in a
    fixed order of its own."""
    yield _agent_line(agent)
    yield from _revisions(agent)
    yield from _routing_cases(agent)
    yield from _memories(agent)
    yield from _promotions(agent)
    yield from _migrated_promotions(agent)
    yield from _events(agent)
    yield from _compositions(agent)
    yield from _deliveries(agent)
    yield from _audit(agent)


def _agent_line(agent: Agent) -> dict[str, Any]:
    row = with_config(Agent.objects.filter(pk=agent.pk)).get()
    return {
        "type": "agent",
        "slug": row.slug,
        "created_at": stamp(row.created_at),
        "updated_at": stamp(row.updated_at),
        "config": config_of(row).model_dump(mode="json"),
    }


def _revisions(agent: Agent) -> Iterator[dict[str, Any]]:
    rows = (
        Revision.objects.filter(agent=agent)
        .order_by("number")
        .values_list(
            "number",
            "created_at",
            "actor",
            "via",
            "approved_by",
            "config_id",
            "summary",
            "config__text",
        )
        .iterator(chunk_size=LARGE_ROWS_PER_FETCH)
    )
    for number, created_at, actor, via, approved_by, digest, summary, text in rows:
        yield {
            "type": "revision",
            "revision": number,
            "created_at": stamp(created_at),
            "actor": actor,
            "via": via,
            "approved_by": approved_by,
            "config_sha256": digest,
            "summary": summary,
            # The object the stored canonical text is: an import writes that text again
            # (keys sorted, no spaces) and checks it against ``config_sha256``.
            "config": json.loads(text),
        }


def _routing_cases(agent: Agent) -> Iterator[dict[str, Any]]:
    # At most CASES_MAX, in their order.
    for case in stored_cases(agent):
        yield {"type": "routing_case", **case.answer()}


def _memories(agent: Agent) -> Iterator[dict[str, Any]]:
    rows = (
        MemoryRecord.objects.filter(agent=agent)
        .order_by("created_at", "id")
        .values_list(
            "id",
            "kind",
            "content",
            "tags",
            "label",
            "supersedes_id",
            "created_at",
            "content_sha256",
            "erased_at",
            "erased_by",
            "erase_reason",
            "session",
            "valid_until",
        )
        .iterator(chunk_size=MEMORIES_PER_FETCH)
    )
    for (
        record_id,
        kind,
        content,
        tags,
        label,
        supersedes,
        created_at,
        content_sha256,
        erased_at,
        erased_by,
        erase_reason,
        session,
        valid_until,
    ) in rows:
        line = {
            "type": "memory",
            "id": record_id,
            "kind": kind,
            "content": content,
            "tags": tags,
            "label": label,
            "supersedes": supersedes,
            "created_at": stamp(created_at),
        }
        if session is not None:
            line["session"] = session
        if valid_until is not None:
            line["valid_until"] = stamp(valid_until)
        if erased_at is not None:
            line.update(
                content_sha256=content_sha256,
                erased_at=stamp(erased_at),
                erased_by=erased_by,
                erase_reason=erase_reason,
            )
        yield line


def _promotions(agent: Agent) -> Iterator[dict[str, Any]]:
    rows = (
        Promotion.objects.filter(agent=agent)
        .order_by("promoted_at", "record_id")
        .values_list(
            "record_id",
            "section",
            "key",
            "placement_key",
            "key_source",
            "spec_key",
            "spec_version",
            "tier",
            "status",
            "reason",
            "promoted_at",
            "decided_by__username",
            "decided_at",
            "decision_note",
            "corroborates_id",
        )
        .iterator(chunk_size=ROWS_PER_FETCH)
    )
    for row in rows:
        (
            record_id,
            section,
            key,
            placement_key,
            key_source,
            spec_key,
            spec_version,
            tier,
            status,
            reason,
            promoted_at,
            decided_by,
            decided_at,
            note,
            corroborates,
        ) = row
        line = {
            "type": "promotion",
            "memory_id": record_id,
            "section": section,
            "key": key,
            "placement_key": placement_key,
            "key_source": key_source,
            "spec_key": spec_key,
            "spec_version": spec_version,
            "tier": tier,
            "status": status,
            "reason": reason,
            "promoted_at": stamp(promoted_at),
            "decided_by": decided_by,
            "decided_at": stamp(decided_at) if decided_at is not None else None,
            "decision_note": note,
        }
        if corroborates is not None:
            line["corroborates"] = corroborates
        yield line


def _migrated_promotions(agent: Agent) -> Iterator[dict[str, Any]]:
    """The rows migrations replaced (SPEC §18.3), in the order they were replaced."""
    rows = (
        MigratedPromotion.objects.filter(agent=agent)
        .order_by("migrated_at", "id")
        .values(
            "record_id",
            "section",
            "key",
            "placement_key",
            "key_source",
            "spec_key",
            "spec_version",
            "tier",
            "previous_status",
            "reason",
            "promoted_at",
            "decided_by__username",
            "decided_at",
            "decision_note",
            "migrated_at",
            "migrated_by",
            "new_section",
            "new_key",
        )
        .iterator(chunk_size=ROWS_PER_FETCH)
    )
    for row in rows:
        decided_at = row["decided_at"]
        yield {
            "type": "migrated_promotion",
            "memory_id": row["record_id"],
            "section": row["section"],
            "key": row["key"],
            "placement_key": row["placement_key"],
            "key_source": row["key_source"],
            "spec_key": row["spec_key"],
            "spec_version": row["spec_version"],
            "tier": row["tier"],
            "previous_status": row["previous_status"],
            "reason": row["reason"],
            "promoted_at": stamp(row["promoted_at"]),
            "decided_by": row["decided_by__username"],
            "decided_at": stamp(decided_at) if decided_at is not None else None,
            "decision_note": row["decision_note"],
            "migrated_at": stamp(row["migrated_at"]),
            "migrated_by": row["migrated_by"],
            "new_section": row["new_section"],
            "new_key": row["new_key"],
        }


def _events(agent: Agent) -> Iterator[dict[str, Any]]:
    rows = (
        MemoryEvent.objects.filter(agent=agent)
        .order_by("at", "id")
        .values_list("record_id", "kind", "actor", "actor_user__username", "detail", "at")
        .iterator(chunk_size=ROWS_PER_FETCH)
    )
    for record_id, kind, actor, username, detail, at in rows:
        yield {
            "type": "event",
            "memory_id": record_id,
            "kind": kind,
            "actor": actor,
            "user": username,
            "detail": detail,
            "at": stamp(at),
        }


def _compositions(agent: Agent) -> Iterator[dict[str, Any]]:
    rows = (
        StoredComposition.objects.filter(agent=agent)
        .order_by("created_at", "digest")
        .values_list(
            "digest",
            "prompt_sha256",
            "chars",
            "tokens",
            "sections",
            "entries",
            "memory_ids",
            "created_at",
            "body",
            "redacted_at",
        )
        .iterator(chunk_size=LARGE_ROWS_PER_FETCH)
    )
    for (
        digest,
        prompt_sha256,
        chars,
        tokens,
        sections,
        entries,
        ids,
        created_at,
        body,
        redacted,
    ) in rows:
        line = {
            "type": "composition",
            "digest": digest,
            "prompt_sha256": prompt_sha256,
            "chars": chars,
            "tokens": tokens,
            "sections": sections,
            "entries": entries,
            "memory_ids": ids.split(),
            "created_at": stamp(created_at),
            # The canonical JSON exactly as it was delivered: its SHA-256 is ``digest``
            # (unless an erasure redacted it since).
            "text": zlib.decompress(bytes(body)).decode("utf-8"),
        }
        if redacted is not None:
            line["redacted_at"] = stamp(redacted)
        yield line


def _deliveries(agent: Agent) -> Iterator[dict[str, Any]]:
    rows = (
        Delivery.objects.filter(agent=agent)
        .order_by("delivered_at")
        .values_list(
            "id",
            "delivered_at",
            "session",
            "model",
            "revision",
            "composition__digest",
            "cache_prefix_tokens",
            "cache_prefix_chars",
            "changed_section",
            "changed_background_section",
        )
        .iterator(chunk_size=ROWS_PER_FETCH)
    )
    for (
        delivery_id,
        delivered_at,
        session,
        model,
        revision,
        digest,
        prefix_tokens,
        prefix_chars,
        section,
        background,
    ) in rows:
        yield {
            "type": "delivery",
            "id": delivery_id,
            "delivered_at": stamp(delivered_at),
            "session": session,
            "model": model,
            "revision": revision,
            "composition": digest,
            "cache": _cache(prefix_tokens, prefix_chars, section, background),
        }


def _cache(
    prefix_tokens: int | None, prefix_chars: int | None, section: str | None, background: str | None
) -> dict[str, Any] | None:
    """A delivery's prompt-cache figures (SPEC §17) as its line carries them."""
    if prefix_tokens is None or prefix_chars is None:
        return None
    return {
        "prefix_tokens": prefix_tokens,
        "prefix_chars": prefix_chars,
        "first_change": (
            None if section is None else {"section": section, "background_section": background}
        ),
    }


def _audit(agent: Agent) -> Iterator[dict[str, Any]]:
    rows = (
        AuditEvent.objects.filter(team_id=agent.team_id, agent=agent.slug)
        .order_by("seq")
        .iterator(chunk_size=ROWS_PER_FETCH)
    )
    for row in rows:
        yield {"type": "audit", "event": event_data(row)}
