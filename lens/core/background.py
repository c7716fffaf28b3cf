"""The Background schema: developer-declared sections holding key/value entries."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    field_validator,
    model_validator,
)

from lens.core.identity import bidi_problem, identity, key_skeleton

Tier = Literal["locked", "guarded", "earned", "auto"]
TIERS: tuple[Tier, ...] = ("locked", "guarded", "earned", "auto")

SECTION_ID_PATTERN = r"^[a-z0-9][a-z0-9_-]*$"
SECTION_ID_MAX = 64
TITLE_MAX = 200
KEY_MAX = 200
RESERVED_TITLE = "Current State"
# The reserved title compared without any whitespace: "Current\u200bState" shows as
# one word and "CurrentState" reads as the same heading, so spacing never tells them
# apart (see ``title_problem``).
_RESERVED_SKELETON = key_skeleton("".join(RESERVED_TITLE.split()))


def _scalar_only(value: object) -> object:
    # One clear error instead of one per union arm ("not a bool, not an int, ...").
    if not isinstance(value, str | int | float | bool):
        raise ValueError(f"value must be a string, number or boolean, not {type(value).__name__}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"value must be a finite number, not {value!r}")
    return value


Scalar = Annotated[
    StrictBool | StrictInt | Annotated[StrictFloat, Field(allow_inf_nan=False)] | StrictStr,
    BeforeValidator(_scalar_only),
]

_SECTION_ID_RE = re.compile(SECTION_ID_PATTERN)


def section_id_problem(section_id: str) -> str | None:
    """Why ``section_id`` is not a valid section id, or None. Shared with the admin."""
    if not _SECTION_ID_RE.fullmatch(section_id):
        return (
            f"section id {section_id!r} must start with a lowercase letter or digit and "
            "contain only lowercase letters, digits, '_' and '-'"
        )
    if len(section_id) > SECTION_ID_MAX:
        return f"section id {section_id!r} is longer than {SECTION_ID_MAX} characters"
    return None


def title_problem(title: str) -> str | None:
    """Why ``title`` cannot title a section, or None. Shared with the admin."""
    if not title.strip():
        return "section title must not be blank"
    if len(title) > TITLE_MAX:
        return f"section title is longer than {TITLE_MAX} characters"
    if problem := bidi_problem(title, "section title"):
        return problem
    if is_reserved_title(title):
        if " ".join(title.split()).casefold() == RESERVED_TITLE.casefold():
            return f"section title {RESERVED_TITLE!r} is reserved for continuation turns"
        return (
            f"section title {title!r} reads as {RESERVED_TITLE!r}, which is reserved "
            "for continuation turns"
        )
    return None


def is_reserved_title(title: str) -> bool:
    """Whether ``title`` reads as the reserved "Current State".

    "## Current State" belongs to continuation turns; a section titled the same would
    leave the model unable to tell which one is being updated. "The same" is what a
    reader sees: compared by confusable skeleton (so case, fullwidth forms, format
    characters and look-alikes such as Cyrillic "С" do not count) and with every
    whitespace removed (a zero-width space between the words, or none, still reads as
    the reserved heading). Titles are at most ``TITLE_MAX`` characters: bounded work.
    """
    return key_skeleton("".join(identity(title).split())) == _RESERVED_SKELETON


def duplicates(values: Iterable[str]) -> list[str]:
    """Values that occur more than once, in first-seen order (exact comparison: for
    ids, which are ASCII by pattern; names compare with ``same_names``)."""
    counts = Counter(values)
    return [value for value, n in counts.items() if n > 1]


def same_names(
    values: Iterable[str], name_of: Callable[[str], str] = key_skeleton
) -> list[tuple[str, str]]:
    """``(earlier, later)`` for each value that is the same name as an earlier one, in
    order. Names are the same when their confusable skeletons are (``Name``, ``name``,
    ``ｎａｍｅ`` and Cyrillic ``nаme`` are one name), since they would render alike.
    """
    seen: dict[str, str] = {}
    found: list[tuple[str, str]] = []
    for value in values:
        name = name_of(value)
        if name in seen:
            found.append((seen[name], value))
        else:
            seen[name] = value
    return found


def describe_same(found: tuple[str, str]) -> str:
    """``'name'``, or ``'nаme' (the same name as 'name')`` for a look-alike."""
    earlier, later = found
    if earlier == later:
        return repr(later)
    return f"{later!r} (the same name as {earlier!r})"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class BackgroundEntry(_Frozen):
    key: StrictStr = Field(min_length=1, max_length=KEY_MAX)
    value: Scalar
    memory_ids: tuple[StrictStr, ...] = ()

    @field_validator("key")
    @classmethod
    def _check_key(cls, value: str) -> str:
        if problem := bidi_problem(value, "entry key"):
            raise ValueError(problem)
        return value


class BackgroundSection(_Frozen):
    id: StrictStr
    title: StrictStr = Field(min_length=1)
    promotion: Tier = "locked"
    entries: tuple[BackgroundEntry, ...] = ()

    @field_validator("id")
    @classmethod
    def _check_id(cls, value: str) -> str:
        if problem := section_id_problem(value):
            raise ValueError(problem)
        return value

    @field_validator("title")
    @classmethod
    def _check_title(cls, value: str) -> str:
        if problem := title_problem(value):
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _unique_keys(self) -> BackgroundSection:
        # Keys are one when they render alike (``same_names``): "Name" and Cyrillic
        # "nаme" would be two lines the model and a reviewer cannot tell apart.
        if found := same_names(entry.key for entry in self.entries):
            keys = ", ".join(dict.fromkeys(describe_same(pair) for pair in found))
            raise ValueError(f"duplicate entry key {keys} in section {self.id!r}")
        return self

    def entry(self, key: str) -> BackgroundEntry | None:
        """The entry whose key is the same name as ``key`` (``same_names``), or None."""
        name = key_skeleton(key)
        return next((entry for entry in self.entries if key_skeleton(entry.key) == name), None)


class Background(_Frozen):
    sections: tuple[BackgroundSection, ...] = ()

    @model_validator(mode="after")
    def _unique_ids(self) -> Background:
        dupes = duplicates(section.id for section in self.sections)
        if dupes:
            ids = ", ".join(repr(section_id) for section_id in dupes)
            raise ValueError(f"duplicate section id {ids}")
        return self

    def section(self, section_id: str) -> BackgroundSection | None:
        return next((s for s in self.sections if s.id == section_id), None)

    @property
    def entry_count(self) -> int:
        return sum(len(section.entries) for section in self.sections)

    def merge(self, other: Background) -> Background:
        """Merge by identity, one rule at both levels (section id, then entry key).

        Ids in self keep self's position; ids only in other append in other's order;
        on a collision other wins (title, promotion; an entry's value and memory_ids
        wholesale, never a union, so no value is credited to memories that did not
        produce it). The memory overlay deliberately never calls this: it has a fold.
        """
        theirs = {section.id: section for section in other.sections}
        merged = [
            _merge_section(section, theirs[section.id]) if section.id in theirs else section
            for section in self.sections
        ]
        mine = {section.id for section in self.sections}
        merged.extend(section for section in other.sections if section.id not in mine)
        return Background(sections=tuple(merged))


def _merge_section(mine: BackgroundSection, theirs: BackgroundSection) -> BackgroundSection:
    # Entry keys merge by name (``same_names``), so look-alike keys never end up side
    # by side in the merged section.
    replacements = {key_skeleton(entry.key): entry for entry in theirs.entries}
    entries = [replacements.get(key_skeleton(entry.key), entry) for entry in mine.entries]
    keys = {key_skeleton(entry.key) for entry in mine.entries}
    entries.extend(entry for entry in theirs.entries if key_skeleton(entry.key) not in keys)
    return theirs.model_copy(update={"entries": tuple(entries)})
