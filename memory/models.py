"""Memory records (what the model saved), promotion rows (what the system decided),
and the events that tell each record's story.
"""

from __future__ import annotations

import secrets
import time
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q

from lens.actors import SYSTEM, Actor
from lens.models import Agent, ApiToken

_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


def _base36(number: int, width: int) -> str:
    digits = []
    for _ in range(width):
        number, digit = divmod(number, 36)
        digits.append(_ALPHABET[digit])
    return "".join(reversed(digits))


def new_record_id() -> str:
    """``[0-9a-z]{18}``: microseconds since the epoch, then 56 random bits.

    Ids created later sort later in plain string order (to the microsecond), which
    keeps listings and the ``(created_at, id)`` tie-break stable and readable.
    """
    return _base36(time.time_ns() // 1000, 11) + _base36(secrets.randbits(36), 7)


class MemoryRecord(models.Model):
    id = models.CharField(primary_key=True, max_length=32, default=new_record_id, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="memories")
    kind = models.CharField(max_length=32)
    content = models.TextField()
    tags = models.JSONField(default=list, blank=True)
    # NULL is "saved without a label" (MemoryInput.label None); a label is never "".
    label = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001
    # RESTRICT: a superseded record outlives its successor's deletion alone, yet goes
    # with it when both are deleted at once (deleting the agent, the team).
    supersedes = models.ForeignKey(
        "self", on_delete=models.RESTRICT, null=True, blank=True, related_name="superseded_by"
    )
    created_at = models.DateTimeField()
    # The conversation the model saved it in (SPEC §19.1): tells sightings apart. NULL:
    # not given (its UTC day stands in); never "".
    session = models.CharField(max_length=128, null=True, blank=True)  # noqa: DJ001
    # Validity window (SPEC §19.2): from this moment on the memory leaves the prompt and
    # recall (drop reason ``expired``). NULL: valid for good. A reviewer may set, move or
    # clear it (``memory.validity``); each change is a ``validity`` event.
    valid_until = models.DateTimeField(null=True, blank=True)
    # Erasure (SPEC §15): the content, label and tags are blanked; what stays is the id,
    # kind, times, the SHA-256 of the content as it was, and who erased it, when and why.
    # Blank until then: the hash of a live record is computed from its content.
    content_sha256 = models.CharField(max_length=64, blank=True)
    erased_at = models.DateTimeField(null=True, blank=True)
    erased_by = models.CharField(max_length=200, blank=True, help_text="Who erased it")
    erase_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "id"]
        indexes = [
            models.Index(fields=["agent", "created_at", "id"], name="memory_agent_created"),
            # Recall's profile tier and listings by kind: newest first within one kind.
            models.Index(fields=["agent", "kind", "created_at"], name="memory_agent_kind_created"),
            # The worker's expiry check: the memories whose window closed since a moment.
            models.Index(
                fields=["valid_until"],
                condition=Q(valid_until__isnull=False),
                name="memory_valid_until",
            ),
        ]

    def __str__(self) -> str:
        if self.erased_at is not None:
            return f"{self.kind}: [erased]"
        return f"{self.kind}: {self.content[:60]}"

    @property
    def erased(self) -> bool:
        return self.erased_at is not None


class PromotionStatus(models.TextChoices):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    REVOKED = "revoked"  # approved, then taken out of the prompt by a reviewer
    DECLINED = "declined"
    SUPERSEDED = "superseded"
    # The record was erased (SPEC §15): it holds no address and never composes again.
    ERASED = "erased"
    # A row replaced by a migration (SPEC §18.3): only archived rows
    # (``MigratedPromotion``) have it; the live row carries the new placement.
    MIGRATED = "migrated"
    # A sighting (SPEC §19.1): the same content saved again at an earned memory's
    # address. It holds no address; it composes with the memory it saw.
    CORROBORATES = "corroborates"


HOLDING = (PromotionStatus.PENDING, PromotionStatus.APPROVED)


class Promotion(models.Model):
    """Exactly one per record: the routing outcome committed when it was saved.

    The section is held as a string, so editing declarations never rewrites these
    rows; the fold re-checks them against the current declarations every time.
    """

    record = models.OneToOneField(
        MemoryRecord, on_delete=models.CASCADE, primary_key=True, related_name="promotion"
    )
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="promotions")
    # These four are NULL together when the record got no placement (no spec, or the
    # spec declined it): "no address", which no real section or key can be mistaken for.
    section = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001
    key = models.TextField(null=True, blank=True)  # noqa: DJ001
    placement_key = models.TextField(null=True, blank=True)  # noqa: DJ001
    key_source = models.CharField(max_length=8, null=True, blank=True)  # noqa: DJ001
    spec_key = models.CharField(max_length=100, blank=True)
    spec_version = models.CharField(max_length=32, blank=True)
    # NULL: no placement, or a placement in a section that was not declared.
    tier = models.CharField(max_length=8, null=True, blank=True)  # noqa: DJ001
    status = models.CharField(max_length=12, choices=PromotionStatus.choices)
    reason = models.CharField(max_length=32, blank=True)
    promoted_at = models.DateTimeField()
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_note = models.TextField(blank=True)
    # A sighting's row (status ``corroborates``): the earning memory it saw again.
    # RESTRICT, as ``supersedes``: a holder goes only with its sightings.
    corroborates = models.ForeignKey(
        MemoryRecord, on_delete=models.RESTRICT, null=True, blank=True, related_name="sightings"
    )

    class Meta:
        permissions = [
            ("approve_promotion", "Can approve, reject and revoke memory promotions"),
        ]
        indexes = [
            # The collision gate: one indexed equality lookup per save.
            models.Index(fields=["agent", "placement_key", "status"], name="promotion_address"),
            models.Index(fields=["agent", "status"], name="promotion_agent_status"),
            # The approval queue: pending rows, oldest first.
            models.Index(fields=["status", "promoted_at", "record"], name="promotion_queue"),
        ]
        constraints = [
            # At most one record holds an address: concurrent saves cannot both win.
            models.UniqueConstraint(
                fields=["agent", "placement_key"],
                condition=Q(status__in=["pending", "approved"]),
                name="promotion_one_holder_per_address",
            )
        ]

    def __str__(self) -> str:
        return f"{self.record_id}: {self.status}"

    def placement_columns(self) -> dict[str, Any]:
        """Where the row places its record and by which spec, as columns: what a
        sighting's row and a migrated (archived) row take from the row they follow."""
        return {
            "section": self.section,
            "key": self.key,
            "placement_key": self.placement_key,
            "key_source": self.key_source,
            "spec_key": self.spec_key,
            "spec_version": self.spec_version,
            "tier": self.tier,
        }


class EventKind(models.TextChoices):
    SAVED = "saved"
    PROMOTED = "promoted"
    QUEUED = "queued"
    DECLINED = "declined"
    SUPERSEDED = "superseded"
    APPROVED = "approved"
    REJECTED = "rejected"
    REVOKED = "revoked"
    REOPENED = "reopened"
    ERASED = "erased"
    # A migration moved the record's placement (SPEC §18.3); the outcome event follows.
    MIGRATED = "migrated"
    # A save that was a sighting of an earning memory (its outcome, as promoted/queued).
    CORROBORATES = "corroborates"
    # An earning memory approved by its sightings (by the system, SPEC §19.1).
    EARNED = "earned"
    # A reviewer set, moved or cleared the record's ``valid_until`` (SPEC §19.2); the
    # detail holds both moments (``from``, ``to``: ISO 8601 or null).
    VALIDITY = "validity"


class MigratedPromotion(models.Model):
    """A promotion row as it stood before a migration replaced it (SPEC §18.3).

    ``Promotion`` stays one row per record (``record.promotion`` is "the" promotion, the
    one a memory is judged by), so a migration updates that row in place and keeps the
    row it replaced here: every field as it was, ``status`` ``migrated`` (terminal) with
    the status it had in ``previous_status``, and who migrated it, when, and to which
    address. A record migrated twice has two rows; the placement in force at a moment
    is the one with the earliest ``migrated_at`` after it, else the live row's.
    """

    record = models.ForeignKey(
        MemoryRecord, on_delete=models.CASCADE, related_name="migrated_promotions"
    )
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    section = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001
    key = models.TextField(null=True, blank=True)  # noqa: DJ001
    placement_key = models.TextField(null=True, blank=True)  # noqa: DJ001
    key_source = models.CharField(max_length=8, null=True, blank=True)  # noqa: DJ001
    spec_key = models.CharField(max_length=100, blank=True)
    spec_version = models.CharField(max_length=32, blank=True)
    tier = models.CharField(max_length=8, null=True, blank=True)  # noqa: DJ001
    status = models.CharField(
        max_length=12, choices=PromotionStatus.choices, default=PromotionStatus.MIGRATED
    )
    previous_status = models.CharField(max_length=12, choices=PromotionStatus.choices)
    reason = models.CharField(max_length=32, blank=True)
    promoted_at = models.DateTimeField()
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_note = models.TextField(blank=True)
    migrated_at = models.DateTimeField()
    migrated_by = models.CharField(max_length=200, help_text="Who applied the migration")
    # The address the migration moved it to (NULL together: no placement).
    new_section = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001
    new_key = models.TextField(null=True, blank=True)  # noqa: DJ001

    class Meta:
        db_table = "memory_migrated_promotion"
        ordering = ["migrated_at", "id"]
        indexes = [
            # As of a moment: an agent's rows migrated after it.
            models.Index(fields=["agent", "migrated_at"], name="migrated_agent_at"),
            models.Index(fields=["record", "migrated_at"], name="migrated_record_at"),
        ]

    def __str__(self) -> str:
        return f"{self.record_id}: migrated {self.migrated_at:%Y-%m-%d %H:%M}"


class CompositionStamp(models.Model):
    """A number that changes, in the same transaction, with everything an agent's
    composition is made of: its row, its declarations and entries, its capabilities and
    awareness sources, its memories and their promotion rows (``memory.stamps``).

    Database triggers write it (migration ``0015_composition_stamp``), not Python, so
    no write path (API, admin, MCP, pages, worker, import, erasure, migration, a raw
    UPDATE) can change a composition and leave the stamp as it was. Each change sets a
    new random value rather than adding one: a transaction that rolls back never leaves
    a later change with a stamp some cache already holds.
    """

    agent = models.OneToOneField(
        Agent, on_delete=models.CASCADE, primary_key=True, related_name="composition_stamp"
    )
    stamp = models.BigIntegerField()
    # Set with ``stamp`` by a change of the declarations only (the lens tables): while it
    # reads the same, the declarations read with it are still the agent's.
    config_stamp = models.BigIntegerField()

    class Meta:
        db_table = "memory_compositionstamp"

    def __str__(self) -> str:
        return f"{self.agent_id}: {self.stamp}"


class SearchDoc(models.Model):
    """A record's search terms (``memory.search``), written with the record.

    The database indexes ``terms`` itself, so no code path can forget to: SQLite keeps
    the FTS5 table ``memory_fts`` in step by triggers, PostgreSQL a generated ``vector``
    column under a GIN index (both created by migration 0004). Kind and time are copied
    here so a search reads this table alone.
    """

    record = models.OneToOneField(MemoryRecord, on_delete=models.CASCADE, related_name="search_doc")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=32)
    created_at = models.DateTimeField()
    terms = models.TextField(help_text="Index terms separated by single spaces")

    class Meta:
        db_table = "memory_searchdoc"
        indexes = [models.Index(fields=["agent", "created_at"], name="searchdoc_agent_created")]

    def __str__(self) -> str:
        return f"search terms of {self.record_id}"


class MemoryEvent(models.Model):
    record = models.ForeignKey(MemoryRecord, on_delete=models.CASCADE, related_name="events")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="memory_events")
    kind = models.CharField(max_length=12, choices=EventKind.choices)
    actor = models.CharField(max_length=200, help_text="Who acted: a user, a token or the system")
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    actor_token = models.ForeignKey(ApiToken, on_delete=models.SET_NULL, null=True, blank=True)
    detail = models.JSONField(default=dict, blank=True)
    at = models.DateTimeField()

    class Meta:
        ordering = ["at", "id"]
        indexes = [
            models.Index(fields=["record", "at"], name="event_record_at"),
            # A delivery diff's causes: an agent's events between two times.
            models.Index(fields=["agent", "at"], name="event_agent_at"),
        ]

    def __str__(self) -> str:
        return f"{self.record_id} {self.kind}"


def new_event(
    record_id: str, agent_id: int, kind: str, actor: Actor, at: datetime, **detail: object
) -> MemoryEvent:
    """An unsaved event: who did what to a record, and when."""
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


class StoredComposition(models.Model):
    """A composition exactly as it was delivered, stored once however often it was.

    Content-addressed: ``digest`` is the SHA-256 of the composition's canonical JSON
    (``Composition.canonical_json``, in ``memory/core/composition.py``), which is kept
    zlib-compressed in ``body``.
    The sizes are copied out so listings never read it. One agent's identical
    deliveries share a row; rows belong to one agent, so the deliveries of a stored
    composition are always that agent's.
    """

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+", db_index=False)
    digest = models.CharField(max_length=64)
    body = models.BinaryField(help_text="zlib-compressed canonical JSON of the composition")
    prompt_sha256 = models.CharField(max_length=64)
    chars = models.PositiveIntegerField(help_text="Code points of the prompt text")
    tokens = models.PositiveIntegerField(help_text="o200k_base tokens of the prompt text")
    sections = models.PositiveIntegerField()
    entries = models.PositiveIntegerField()
    memory_ids = models.TextField(
        blank=True, help_text="The prompt's memories, sorted, space-separated"
    )
    created_at = models.DateTimeField()
    # When a memory of it was erased and its lines replaced by ``[erased]`` (SPEC §15).
    # The digest, ``prompt_sha256`` and sizes stay those of the prompt as delivered.
    redacted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "memory_composition"
        constraints = [
            models.UniqueConstraint(fields=["agent", "digest"], name="composition_agent_digest")
        ]

    def __str__(self) -> str:
        return f"composition {self.digest[:12]}"


class CompositionMemory(models.Model):
    """One memory of one stored composition: "which deliveries did memory X shape" is an
    index lookup here, then one on deliveries by composition.

    ``memory_id`` is not a foreign key: the audit outlives the record.
    """

    composition = models.ForeignKey(
        StoredComposition, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    memory_id = models.CharField(max_length=32)

    class Meta:
        db_table = "memory_composition_memory"
        constraints = [
            models.UniqueConstraint(
                fields=["memory_id", "composition"], name="composition_memory_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.memory_id} in {self.composition_id}"


class Delivery(models.Model):
    """A prompt as it was handed to a model (SPEC §11). Never changed once written.

    Kept small (the composition is shared): the id, the agent, the composition, when,
    the runtime's session and model names, and the token that asked (NULL: the system,
    as the demo records). A token that asked cannot be deleted, only revoked, so the
    audit never loses who asked.
    """

    # Fixed-width columns first, then text: PostgreSQL aligns each 8-byte column, and
    # this order leaves no padding in a row (every delivery row counts, SPEC §11).
    # Covered by the (agent, delivered_at) constraint's index: no index of its own.
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+", db_index=False)
    # RESTRICT, not PROTECT: a composition (or token) cannot be deleted while a delivery
    # uses it, except in the same deletion as that delivery (an agent's, a team's).
    composition = models.ForeignKey(
        StoredComposition, on_delete=models.RESTRICT, related_name="deliveries", db_index=False
    )
    # Unique per agent (``memory.deliveries.ledger`` steps a clash forward by a microsecond), so
    # the timeline's order needs no tie-break and its index holds no id.
    delivered_at = models.DateTimeField()
    actor_token = models.ForeignKey(
        ApiToken, on_delete=models.RESTRICT, null=True, blank=True, db_index=False
    )
    id = models.CharField(primary_key=True, max_length=32, default=new_record_id, editable=False)
    session = models.CharField(max_length=128, null=True, blank=True)  # noqa: DJ001
    model = models.CharField(max_length=128, null=True, blank=True)  # noqa: DJ001
    # The agent's revision the prompt was composed from (SPEC §14); NULL for a delivery
    # made before revisions were recorded.
    revision = models.PositiveIntegerField(null=True, blank=True)
    # What a provider could serve from its prompt cache (SPEC §17), against the agent's
    # delivery before this one: the leading o200k_base tokens and code points the two
    # prompts share, and the prompt section (and Background section) of this prompt
    # where they first differ, both NULL when nothing differs. Counted once, when it is
    # recorded, so listings never tokenise; all NULL for a delivery recorded before.
    cache_prefix_tokens = models.PositiveIntegerField(null=True, blank=True)
    cache_prefix_chars = models.PositiveIntegerField(null=True, blank=True)
    changed_section = models.CharField(max_length=32, null=True, blank=True)  # noqa: DJ001
    changed_background_section = models.CharField(  # noqa: DJ001
        max_length=64, null=True, blank=True
    )

    class Meta:
        verbose_name_plural = "deliveries"
        constraints = [
            # The timeline, "in force at T" (before=T) and the previous delivery.
            models.UniqueConstraint(fields=["agent", "delivered_at"], name="delivery_agent_time")
        ]
        indexes = [
            # "Which deliveries did memory X shape", and prune. One key repeated by every
            # unchanged delivery: PostgreSQL stores it once per page (deduplication).
            models.Index(fields=["composition"], name="delivery_composition"),
            # A session is one delivery or a few: no time in the key, they sort cheaply.
            models.Index(
                fields=["agent", "session"],
                name="delivery_session",
                condition=Q(session__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"delivery {self.id}"

    @property
    def actor(self) -> str:
        """Who asked, as events name actors (reads the token: select it with the row)."""
        return SYSTEM.label if self.actor_token is None else Actor.for_token(self.actor_token).label


class RoutingCase(models.Model):
    """A memory as the model might save it, with the section a person expects it to land
    in (SPEC §18.1): the agent's routing eval. Written only by
    ``memory.routing_cases`` (replace them all, or add one), audited."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="routing_cases")
    position = models.PositiveIntegerField()
    name = models.CharField(max_length=64)
    kind = models.CharField(max_length=32)
    content = models.TextField()
    tags = models.JSONField(default=list, blank=True)
    label = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001
    # NULL: the spec should decline it.
    expect_section = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001

    class Meta:
        ordering = ["agent", "position"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "name"], name="routing_case_unique_name"),
            models.UniqueConstraint(fields=["agent", "position"], name="routing_case_position"),
        ]

    def __str__(self) -> str:
        return self.name


class RoutingScore(models.Model):
    """A routing eval's score as recorded when the cases changed or ``eval_routing`` ran:
    the spec and version it measured and which cases, so a page can show a spec's score
    before and after its version changed (specs are code: their versions change with a
    deployment, never in the database)."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    spec_key = models.CharField(max_length=100)
    spec_version = models.CharField(max_length=100)
    cases_sha256 = models.CharField(max_length=64)
    correct = models.PositiveIntegerField()
    cases = models.PositiveIntegerField()
    recorded_at = models.DateTimeField()

    class Meta:
        indexes = [
            models.Index(
                fields=["agent", "spec_key", "recorded_at"], name="routing_score_agent_spec"
            )
        ]

    def __str__(self) -> str:
        return f"{self.spec_key}@{self.spec_version}: {self.correct}/{self.cases}"
