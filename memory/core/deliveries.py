"""Deliveries, the pure part (SPEC §11): what a runtime may say about a delivery, and
how two deliveries compare.
"""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime

import orjson
from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationInfo, field_validator

from lens.core.diffs import unified_diff
from lens.core.fragments import SECTION_SEPARATOR
from lens.core.identity import bidi_problem

LABEL_MAX = 128
# Categories refused in a session or model name: controls and line/paragraph breaks
# (they would break the one-line displays and logs these names appear in).
_REFUSED_CATEGORIES = frozenset({"Cc", "Zl", "Zp"})


def label_problem(value: str) -> str | None:
    """Why ``value`` cannot name a session or a model, or None."""
    if not value:
        return "must not be empty"
    if len(value) > LABEL_MAX:
        return f"must be at most {LABEL_MAX} characters (got {len(value)})"
    for char in value:
        if unicodedata.category(char) in _REFUSED_CATEGORIES:
            return f"must not contain control characters (found U+{ord(char):04X})"
    return None


def new_label_problem(value: str, what: str) -> str | None:
    """Why ``value`` cannot name a new delivery's ``what`` (session or model), or None.

    ``label_problem``, and no bidi control: they reorder what is displayed around them,
    so a name holding one shows as another name (the rule memory labels follow). Only
    new deliveries are held to it: filters still find deliveries recorded before it.
    """
    return label_problem(value) or bidi_problem(value, what)


class DeliveryInput(BaseModel):
    """The body of ``POST …/deliveries``: both optional, each 1–128 code points."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    session: StrictStr | None = Field(None, description="The runtime's session id")
    model: StrictStr | None = Field(None, description="The model the prompt is for")

    @field_validator("session", "model")
    @classmethod
    def _one_line_label(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and (problem := new_label_problem(value, info.field_name or "")):
            raise ValueError(problem)
        return value


def parse_moment(text: str) -> datetime | None:
    """An ISO 8601 date and time as an aware UTC datetime (no zone: UTC), or None when
    it is not one, or when in UTC it falls outside the years 1 to 9999 that databases
    hold (``0001-01-01T00:00+01:00`` is such a time).
    """
    try:
        moment = datetime.fromisoformat(text)
        return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
    except (ValueError, OverflowError):
        return None


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def prompt_of_json(composition_json: str) -> str:
    """The prompt text of a stored composition's canonical JSON, joined from its
    fragments without validating the whole composition (a big one takes 10 ms to)."""
    sections = orjson.loads(composition_json)["prompt"]["sections"]
    return SECTION_SEPARATOR.join(
        "".join(fragment["text"] for fragment in section["fragments"]) for section in sections
    )


@dataclass(frozen=True)
class Facts:
    """What a comparison needs of one delivered composition."""

    prompt: str
    memory_ids: frozenset[str]
    tokens: int

    @property
    def chars(self) -> int:
        return len(self.prompt)


@dataclass(frozen=True)
class Comparison:
    """``before`` → ``after``: the prompt's unified diff, memories in and out, sizes."""

    diff: str
    added: tuple[str, ...]
    removed: tuple[str, ...]
    chars: tuple[int, int]
    tokens: tuple[int, int]

    @property
    def unchanged(self) -> bool:
        return not self.diff and not self.added and not self.removed


def compare(before: Facts | None, after: Facts, before_label: str, after_label: str) -> Comparison:
    """Compare two deliveries; ``before`` is None for an agent's first delivery (its
    prompt then counts as empty)."""
    old = before or Facts(prompt="", memory_ids=frozenset(), tokens=0)
    return Comparison(
        diff=unified_diff(old.prompt, after.prompt, before_label, after_label),
        added=tuple(sorted(after.memory_ids - old.memory_ids)),
        removed=tuple(sorted(old.memory_ids - after.memory_ids)),
        chars=(old.chars, after.chars),
        tokens=(old.tokens, after.tokens),
    )


@dataclass(frozen=True)
class Change:
    """What changed since the previous delivery, at a glance (the timeline's column)."""

    first: bool = False
    same_composition: bool = False
    added: int = 0
    removed: int = 0

    @classmethod
    def between(
        cls,
        previous: tuple[int, frozenset[str]] | None,
        current: tuple[int, frozenset[str]],
    ) -> Change:
        """``previous``/``current`` are (composition id, memory ids)."""
        if previous is None:
            return cls(first=True)
        if previous[0] == current[0]:
            return cls(same_composition=True)
        return cls(added=len(current[1] - previous[1]), removed=len(previous[1] - current[1]))
