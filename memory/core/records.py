"""Memory records: what the model saved, validated once, immutable afterwards. Pure."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Annotated

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StrictStr

from lens.core.identity import bidi_problem

KIND_PATTERN = r"^[a-z][a-z0-9_-]{0,31}$"
CONTENT_MAX = 10_000
TAGS_MAX = 32
TAG_MAX = 64
LABEL_MAX = 64
SESSION_MAX = 128
RECORD_ID_PATTERN = r"^[0-9a-z]{1,32}$"

_KIND_RE = re.compile(KIND_PATTERN)
_RECORD_ID_RE = re.compile(RECORD_ID_PATTERN)
# Control characters and line/paragraph separators (Unicode categories Cc, Zl and Zp,
# which are exactly these code points): no name may contain them.
_FORBIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def forbidden_char(text: str) -> str | None:
    """The first control character or line break in ``text``, or None."""
    found = _FORBIDDEN.search(text)
    return found.group() if found else None


def _check_kind(kind: str) -> str:
    if not _KIND_RE.fullmatch(kind):
        raise ValueError(
            f"kind {kind!r} must be 1-32 characters: a lowercase letter, then lowercase "
            "letters, digits, '_' or '-'"
        )
    return kind


def _check_content(content: str) -> str:
    if not content:
        raise ValueError("content must not be empty")
    if len(content) > CONTENT_MAX:
        raise ValueError(f"content is {len(content)} code points; the limit is {CONTENT_MAX}")
    return content


def _check_tags(tags: list[str]) -> tuple[str, ...]:
    unique = tuple(dict.fromkeys(tags))  # duplicates removed, first-seen order kept
    if len(unique) > TAGS_MAX:
        raise ValueError(f"at most {TAGS_MAX} tags are allowed, got {len(unique)}")
    for tag in unique:
        if not 1 <= len(tag) <= TAG_MAX:
            raise ValueError(f"tag {tag[:20]!r} must be 1 to {TAG_MAX} code points")
        if (bad := forbidden_char(tag)) is not None:
            raise ValueError(f"tag {tag[:20]!r} contains the control character U+{ord(bad):04X}")
    return unique


def _check_label(label: str | None) -> str | None:
    if label is None:
        return None
    if not 1 <= len(label) <= LABEL_MAX:
        raise ValueError(f"label must be 1 to {LABEL_MAX} code points, got {len(label)}")
    if (bad := forbidden_char(label)) is not None:
        raise ValueError(
            f"label must not contain control characters or line breaks (found U+{ord(bad):04X})"
        )
    return label


def _check_session(session: str | None) -> str | None:
    # The conversation a memory was saved in: it tells sightings apart (SPEC §19.1), so
    # it is a name like a label, never text that could break a line or a listing.
    if session is None:
        return None
    if not 1 <= len(session) <= SESSION_MAX:
        raise ValueError(f"session must be 1 to {SESSION_MAX} code points, got {len(session)}")
    if (bad := forbidden_char(session)) is not None:
        raise ValueError(f"session must not contain control characters (found U+{ord(bad):04X})")
    if problem := bidi_problem(session, "session"):
        raise ValueError(problem)
    return session


def _check_new_label(label: str | None) -> str | None:
    # Bidi controls reorder what is displayed around them, so a label holding one can
    # show as another label. Refused when a memory is saved; records already stored
    # with one stay readable (records are immutable, and reading never rewrites them).
    if label is not None and (problem := bidi_problem(label, "label")):
        raise ValueError(problem)
    return label


def stored_problem(kind: object, content_length: int, tags: object, label: object) -> str | None:
    """Why a stored row no longer reads as a record (SPEC §6.3), or None.

    Readers that only need a few columns check those, without building a record; the
    content is judged by its length, so a caller can read just its beginning.
    """
    if not isinstance(kind, str) or not _KIND_RE.fullmatch(kind):
        return f"kind {kind!r} is not a valid kind"
    if not 1 <= content_length <= CONTENT_MAX:
        return f"content is {content_length} code points, outside 1 to {CONTENT_MAX}"
    if not isinstance(tags, list | tuple) or not all(isinstance(tag, str) for tag in tags):
        return "tags are not a list of strings"
    try:
        _check_tags(list(tags))
        _check_label(label if isinstance(label, str) or label is None else str(label))
    except ValueError as exc:
        return str(exc)
    if label is not None and not isinstance(label, str):
        return "label is not a string"
    return None


def stored_readable(kind: object, content_length: int, tags: object, label: object) -> bool:
    """``stored_problem(...) is None``, answered quicker for the common row (no tags,
    a kind and label seen before): a composition checks every approved record each
    time it is read."""
    if (
        not tags
        and 1 <= content_length <= CONTENT_MAX
        and isinstance(kind, str)
        and (label is None or isinstance(label, str))
    ):
        return _names_readable(kind, label)
    return stored_problem(kind, content_length, tags or [], label) is None


@lru_cache(maxsize=1 << 16)
def _names_readable(kind: str, label: str | None) -> bool:
    return stored_problem(kind, 1, [], label) is None


def is_record_id(value: str) -> bool:
    return _RECORD_ID_RE.fullmatch(value) is not None


def parse_valid_until(text: str) -> datetime:
    """An ISO 8601 date and time as an aware UTC datetime (no zone: UTC); ValueError
    when it is not one, or when it falls outside the years databases hold."""
    try:
        moment = datetime.fromisoformat(text)
        return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
    except (ValueError, OverflowError):
        raise ValueError(
            f"valid_until {text[:64]!r} must be an ISO 8601 date and time, such as "
            "2030-01-31T12:00:00Z"
        ) from None


def _read_valid_until(value: object) -> object:
    if value is None or isinstance(value, datetime):
        return value
    if not isinstance(value, str):
        raise ValueError("valid_until must be an ISO 8601 date and time given as a string")
    return parse_valid_until(value)


Kind = Annotated[StrictStr, AfterValidator(_check_kind)]
# Given as text and read as ISO 8601 only (a number is no moment); whether it falls
# after the save is checked when the save has its time (``memory.saving``).
ValidUntil = Annotated[datetime | None, BeforeValidator(_read_valid_until)]
Content = Annotated[StrictStr, AfterValidator(_check_content)]
Label = Annotated[StrictStr | None, AfterValidator(_check_label)]
NewLabel = Annotated[
    StrictStr | None, AfterValidator(_check_label), AfterValidator(_check_new_label)
]
Session = Annotated[StrictStr | None, AfterValidator(_check_session)]
if TYPE_CHECKING:
    # What a validated model holds: ``_check_tags`` turns the list into a tuple.
    Tags = tuple[str, ...]
else:
    # What validation accepts: a list of strings (the API's schema and errors say so).
    Tags = Annotated[list[StrictStr], AfterValidator(_check_tags)]


class MemoryInput(BaseModel):
    """``memory_save``: flat fields, no unions. The model never chooses where a memory
    lands; ``session`` names the conversation it was saved in (SPEC §19.1)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Kind
    content: Content
    tags: Tags = Field(default_factory=tuple)
    label: NewLabel = None
    supersedes: StrictStr | None = None
    session: Session = None
    # Validity window (SPEC §19.2): when the memory stops being true.
    valid_until: ValidUntil = None


class MemoryView(BaseModel):
    """A stored record as readers see it (SPEC §3.2): what the model saved, no routing
    outcome, ever. Reading a stored row through it is how unparseable rows are found.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    kind: Kind
    content: Content
    tags: Annotated[tuple[StrictStr, ...], AfterValidator(lambda t: _check_tags(list(t)))] = ()
    label: Label = None
    supersedes: str | None = None
    created_at: datetime
    valid_until: datetime | None = None
