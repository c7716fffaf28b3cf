"""The lines of a portable bundle (SPEC §15), one schema per ``"type"``. Pure.

Each line is one JSON object; these schemas are what an import accepts, strictly
(unknown fields, wrong types and out-of-range values are refused), so that nothing it
writes can fail on a column's limit or a row's meaning. Times are ``stamp``s: UTC with
microseconds, the precision both databases keep, so they come back exactly.
``docs/bundles.md`` describes every field.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    StringConstraints,
    model_validator,
)

from lens.core import nesting
from lens.core.config import AGENT_SLUG_PATTERN, AgentConfig
from lens.core.fragments import SECTION_SEPARATOR
from lens.core.revisions import Change
from memory.core.records import Session, is_record_id
from memory.core.routing_eval import CaseInput

# The types in the order their lines come: each line refers only to lines before it
# (a promotion to its memory, a delivery to its composition), so an import is one pass.
TYPES = (
    "agent",
    "revision",
    "routing_case",
    "memory",
    "promotion",
    "migrated_promotion",
    "event",
    "composition",
    "delivery",
    "audit",
)

# The values the models' columns take (``lens.models.Via``, ``memory.models``; a test
# checks they are the same).
ViaName = Literal["api", "admin", "restore", "proposal", "import"]
PromotionStatusName = Literal[
    "pending",
    "approved",
    "rejected",
    "revoked",
    "declined",
    "superseded",
    "erased",
    "migrated",
    "corroborates",
]
EventKindName = Literal[
    "saved",
    "promoted",
    "queued",
    "declined",
    "superseded",
    "approved",
    "rejected",
    "revoked",
    "reopened",
    "erased",
    "migrated",
    "corroborates",
    "earned",
    "validity",
]
# PositiveIntegerField's range on every backend.
INT_MAX = 2_147_483_647

_STAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z")


def stamp(at: datetime) -> str:
    """A time as a bundle writes it: UTC, microseconds, ``Z``."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_stamp(value: object) -> datetime:
    if not isinstance(value, str) or not _STAMP.fullmatch(value):
        raise ValueError("a time is written YYYY-MM-DDTHH:MM:SS.ffffffZ (UTC)")
    return datetime.fromisoformat(value[:-1]).replace(tzinfo=UTC)


def canonical_text(data: Any) -> str:
    """Keys sorted, no spaces, UTF-8 kept: the text a revision's config is stored and
    hashed as (``lens.core.revisions.canonical_config``)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _record_id(value: str) -> str:
    if not is_record_id(value):
        raise ValueError(f"{value[:40]!r} is not an id: 1 to 32 of [0-9a-z]")
    return value


def _summary(value: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for change in value:
        Change.from_json(change)  # raises for a change that is not one of the closed set
    return value


Stamp = Annotated[datetime, BeforeValidator(parse_stamp)]
RecordId = Annotated[StrictStr, AfterValidator(_record_id)]
Sha256 = Annotated[StrictStr, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
Count = Annotated[StrictInt, Field(ge=0, le=INT_MAX)]


# Strings bounded by the columns they go to.
ActorLabel = Annotated[StrictStr, StringConstraints(max_length=200)]
Username = Annotated[StrictStr, StringConstraints(max_length=150)]
Kind = Annotated[StrictStr, StringConstraints(min_length=1, max_length=32)]
Label = Annotated[StrictStr, StringConstraints(max_length=64)]
SectionId = Annotated[StrictStr, StringConstraints(max_length=64)]
Short = Annotated[StrictStr, StringConstraints(max_length=8)]  # key_source, tier
SpecKey = Annotated[StrictStr, StringConstraints(max_length=100)]
SpecVersion = Annotated[StrictStr, StringConstraints(max_length=32)]
Reason = Annotated[StrictStr, StringConstraints(max_length=32)]
RuntimeName = Annotated[StrictStr, StringConstraints(min_length=1, max_length=128)]


class _Line(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AgentLine(_Line):
    """The agent itself: its slug, its row's times and its declarations as they are
    now (equal to its newest revision's config)."""

    type: Literal["agent"]
    slug: Annotated[StrictStr, StringConstraints(pattern=AGENT_SLUG_PATTERN)]
    created_at: Stamp
    updated_at: Stamp
    config: AgentConfig


class RevisionLine(_Line):
    """One revision (SPEC §14) with its whole config, as the JSON object whose canonical
    text has the SHA-256 ``config_sha256``."""

    type: Literal["revision"]
    revision: Annotated[StrictInt, Field(ge=1, le=INT_MAX)]
    created_at: Stamp
    actor: ActorLabel
    via: ViaName
    approved_by: Username | None
    config_sha256: Sha256
    summary: Annotated[list[dict[str, Any]], AfterValidator(_summary)]
    config: dict[str, Any]

    @model_validator(mode="after")
    def _config_matches_its_hash(self) -> RevisionLine:
        if sha256_hex(self.config_text) != self.config_sha256:
            raise ValueError("config does not hash to config_sha256")
        AgentConfig.model_validate(self.config)
        return self

    @property
    def config_text(self) -> str:
        return canonical_text(self.config)


class RoutingCaseLine(_Line, CaseInput):
    """One of the agent's routing cases (SPEC §18.1), in their order: validated exactly
    as the API validates a case."""

    type: Literal["routing_case"]


class MemoryLine(_Line):
    """A memory record exactly as stored (SPEC §3.2)."""

    type: Literal["memory"]
    id: RecordId
    kind: Kind
    content: StrictStr
    tags: list[StrictStr]
    label: Label | None
    supersedes: RecordId | None
    created_at: Stamp
    # The conversation it was saved in (SPEC §19.1); left out when there was none.
    session: Session = None
    # Its validity window as it stands (SPEC §19.2); its changes travel as ``validity``
    # events. Absent from bundles made before windows existed: none.
    valid_until: Stamp | None = None
    # An erased memory (SPEC §15) travels as its tombstone: no content, label or tags,
    # the hash of what it held, who erased it, when and why.
    content_sha256: Sha256 | None = None
    erased_at: Stamp | None = None
    erased_by: ActorLabel = ""
    erase_reason: StrictStr = ""

    @model_validator(mode="after")
    def _tombstone_is_empty(self) -> MemoryLine:
        if self.erased_at is not None and (self.content or self.label or self.tags):
            raise ValueError("an erased memory carries no content, label or tags")
        return self


class PromotionLine(_Line):
    """A memory's promotion row (SPEC §5.4); ``decided_by`` is a username."""

    type: Literal["promotion"]
    memory_id: RecordId
    section: SectionId | None
    key: StrictStr | None
    placement_key: StrictStr | None
    key_source: Short | None
    spec_key: SpecKey
    spec_version: SpecVersion
    tier: Short | None
    status: PromotionStatusName
    reason: Reason
    promoted_at: Stamp
    decided_by: Username | None
    decided_at: Stamp | None
    decision_note: StrictStr
    # A sighting's row (status ``corroborates``): the earning memory it saw again; left
    # out for every other row.
    corroborates: RecordId | None = None


class MigratedPromotionLine(_Line):
    """A promotion row a migration replaced (SPEC §18.3), as it stood, with who
    migrated it, when, and where to; ``decided_by`` is a username."""

    type: Literal["migrated_promotion"]
    memory_id: RecordId
    section: SectionId | None
    key: StrictStr | None
    placement_key: StrictStr | None
    key_source: Short | None
    spec_key: SpecKey
    spec_version: SpecVersion
    tier: Short | None
    previous_status: PromotionStatusName
    reason: Reason
    promoted_at: Stamp
    decided_by: Username | None
    decided_at: Stamp | None
    decision_note: StrictStr
    migrated_at: Stamp
    migrated_by: ActorLabel
    new_section: SectionId | None
    new_key: StrictStr | None


class EventLine(_Line):
    """One event of a memory's story; ``user`` is the username of the person who acted
    (null for a token or the system, whose label ``actor`` is)."""

    type: Literal["event"]
    memory_id: RecordId
    kind: EventKindName
    actor: ActorLabel
    user: Username | None
    detail: dict[str, Any]
    at: Stamp


class CompositionLine(_Line):
    """A stored composition: ``text`` is its canonical JSON exactly as it was delivered
    (never re-serialised), ``digest`` that text's SHA-256; the rest is what the row
    keeps beside it, checked against the text."""

    type: Literal["composition"]
    digest: Sha256
    prompt_sha256: Sha256
    chars: Count
    tokens: Count
    sections: Count
    entries: Count
    memory_ids: list[RecordId]
    created_at: Stamp
    text: StrictStr
    # When an erased memory's lines in it were replaced by ``[erased]`` (SPEC §15): the
    # digest, ``prompt_sha256`` and ``chars`` still describe the prompt as delivered, so
    # only what redaction keeps is checked against the text (its memories).
    redacted_at: Stamp | None = None

    @model_validator(mode="after")
    def _text_matches(self) -> CompositionLine:
        if self.redacted_at is not None:
            problem = composition_problem(self, redacted=True)
            if problem is not None:
                raise ValueError(problem)
            return self
        if sha256_hex(self.text) != self.digest:
            raise ValueError("text does not hash to digest")
        problem = composition_problem(self)
        if problem is not None:
            raise ValueError(problem)
        return self


def composition_problem(line: CompositionLine, *, redacted: bool = False) -> str | None:
    """What in ``line`` disagrees with its composition's text, or None (``redacted``:
    only its memories, which redaction keeps)."""
    try:
        # A text that nests too deep is not a composition (``TooDeep`` is a ValueError).
        sections = nesting.loads(line.text)["prompt"]["sections"]
        texts = ["".join(f["text"] for f in section["fragments"]) for section in sections]
        ids = {
            memory_id
            for section in sections
            for fragment in section["fragments"]
            for memory_id in fragment.get("memory_ids") or ()
        }
    except (ValueError, KeyError, TypeError, AttributeError):
        return "text is not a composition"
    prompt = SECTION_SEPARATOR.join(texts)
    if redacted:
        return (
            None
            if sorted(ids) == line.memory_ids
            else "memory_ids are not the composition's memories, sorted"
        )
    if sha256_hex(prompt) != line.prompt_sha256:
        return "prompt_sha256 is not the hash of the composition's prompt"
    if len(prompt) != line.chars:
        return "chars is not the length of the composition's prompt"
    if sorted(ids) != line.memory_ids:
        return "memory_ids are not the composition's memories, sorted"
    return None


# The prompt sections a change can be in (``lens.core.render``).
PromptSectionName = Literal["Persona", "Mission", "Capabilities", "Manual", "Context"]


class CacheChange(_Line):
    section: PromptSectionName
    background_section: SectionId | None

    @model_validator(mode="after")
    def _background_in_context(self) -> CacheChange:
        if self.background_section is not None and self.section != "Context":
            raise ValueError("only a change in the Context is in a Background section")
        return self


class DeliveryCache(_Line):
    """A delivery's prompt-cache figures as recorded (SPEC §17); the total is its
    composition's ``tokens``."""

    prefix_tokens: Count
    prefix_chars: Count
    first_change: CacheChange | None


class DeliveryLine(_Line):
    """A delivery (SPEC §11): ``composition`` is the digest of its composition's line."""

    type: Literal["delivery"]
    id: RecordId
    delivered_at: Stamp
    session: RuntimeName | None
    model: RuntimeName | None
    revision: Annotated[StrictInt, Field(ge=1, le=INT_MAX)] | None
    composition: Sha256
    # Null for a delivery recorded before the figures were kept, and absent from
    # bundles exported before they were.
    cache: DeliveryCache | None = None


class AuditObject(_Line):
    type: StrictStr
    id: StrictStr


class AuditEventData(_Line):
    """An audit event as the API answers it (``lens.audit.event_data``)."""

    seq: Annotated[StrictInt, Field(ge=1)]
    at: StrictStr
    actor: StrictStr
    action: StrictStr
    object: AuditObject
    agent: StrictStr | None
    details: dict[str, Any]
    prev_sha256: Sha256
    sha256: Sha256


class AuditLine(_Line):
    """One of the agent's events from its team's audit log, kept as the source's log
    sealed it: ``event`` is checked against its own ``sha256``, never replayed."""

    type: Literal["audit"]
    event: dict[str, Any]

    @model_validator(mode="after")
    def _event_shape(self) -> AuditLine:
        AuditEventData.model_validate(self.event)
        return self


Line = (
    AgentLine
    | RevisionLine
    | RoutingCaseLine
    | MemoryLine
    | PromotionLine
    | MigratedPromotionLine
    | EventLine
    | CompositionLine
    | DeliveryLine
    | AuditLine
)
SCHEMAS: dict[str, type[_Line]] = {
    "agent": AgentLine,
    "revision": RevisionLine,
    "routing_case": RoutingCaseLine,
    "memory": MemoryLine,
    "promotion": PromotionLine,
    "migrated_promotion": MigratedPromotionLine,
    "event": EventLine,
    "composition": CompositionLine,
    "delivery": DeliveryLine,
    "audit": AuditLine,
}
