"""What changed between two versions of an agent's declarations, as a revision's summary
(SPEC §14), and the canonical text a revision's config is stored and hashed as. Pure.

A summary names every difference that can change a prompt, in a fixed order: the
fields, the routing spec, then each section in the new config's order (with the
sections removed last), and within a section its entries the same way. Moves are the
fewest that explain the new order: the sections (or entries) kept in their relative
order are a longest increasing run of their old positions, found in O(n log n); every
other one moved. An entry that only moved is reported as ``entry_changed``: the closed
set of changes has no ``entry_moved``, and its place in the prompt did change. A retitled
section's change also holds its titles before and after (``from``, ``to``; added to the
contract's ``section``), so it reads as it happened however the section is called later.
"""

from __future__ import annotations

import hashlib
import json
from bisect import bisect_left
from collections.abc import Sequence
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict

from lens.core.background import BackgroundEntry, BackgroundSection
from lens.core.config import AgentConfig

ChangeKind = Literal[
    "field_changed",
    "routing_spec_changed",
    "section_added",
    "section_removed",
    "section_moved",
    "section_retitled",
    "section_retiered",
    "entry_added",
    "entry_removed",
    "entry_changed",
]
# The declarations that are fields of their own, in the order a summary names them.
FIELDS = (
    "name",
    "persona",
    "tone",
    "objective",
    "capabilities",
    "manual",
    "awareness",
    "recall_pinned_candidates",
    "protected",
    "model",
)


class Change(BaseModel):
    """One line of a summary; which keys it has depends on ``change``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    change: ChangeKind
    field: str | None = None
    section: str | None = None
    key: str | None = None
    from_: str | None = None
    to: str | None = None

    def as_json(self) -> dict[str, Any]:
        """The contract's shape: only the keys this kind of change has."""
        data: dict[str, Any] = {"change": self.change}
        if self.change == "field_changed":
            data["field"] = self.field
        elif self.change == "routing_spec_changed":
            data["from"] = self.from_
            data["to"] = self.to
        else:
            data["section"] = self.section
            if self.change.startswith("entry_"):
                data["key"] = self.key
            elif self.change == "section_retitled" and self.to is not None:
                # The titles either side, so the words stay those of the revision's own
                # time (and say which way it went) however the section is called later.
                data["from"] = self.from_
                data["to"] = self.to
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Change:
        values = dict(data)
        if "from" in values:
            values["from_"] = values.pop("from")
        return cls.model_validate(values)


def canonical_config(config: AgentConfig) -> str:
    """The config as ``GET`` answers it, keys sorted, no spaces, UTF-8 kept: what a
    revision stores and hashes. The text of ``json.dumps(..., sort_keys=True,
    separators=(",", ":"), ensure_ascii=False)``."""
    return _json_text(config, indent=False)


def config_sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def indented_config(config: AgentConfig) -> str:
    """The canonical config laid out one value a line, for a readable config diff: the
    text of ``json.dumps(..., sort_keys=True, indent=2, ensure_ascii=False)``."""
    return _json_text(config, indent=True)


def _json_text(config: AgentConfig, *, indent: bool) -> str:
    """``config`` as the standard library writes it, written by orjson when that gives
    the same text.

    The standard library writes indented JSON in Python (its C encoder is only for
    compact output): 15-25 ms for a 2,000-entry config, and 2-3 ms compact; orjson
    writes either in well under a millisecond. The two differ only in some floats
    (``1e-07`` against ``1e-7``), integers beyond 64 bits and lone surrogates (orjson
    refuses those two): any of these falls back to the standard library, so the text
    (and a revision's hash) never depends on which wrote it. Entry values are the only
    numbers a config holds (``tests/lens/core/test_revisions.py`` checks the schema).
    """
    data = config.model_dump(mode="json")
    if _orjson_writes_alike(config):
        option = orjson.OPT_SORT_KEYS | (orjson.OPT_INDENT_2 if indent else 0)
        try:
            return orjson.dumps(data, option=option).decode()
        except orjson.JSONEncodeError:
            pass  # a lone surrogate
    if indent:
        return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False)
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


_INT64_MIN, _UINT64_MAX = -(2**63), 2**64 - 1  # the integers orjson writes


def _orjson_writes_alike(config: AgentConfig) -> bool:
    for section in config.background.sections:
        for entry in section.entries:
            value = entry.value
            if type(value) is float and repr(value) != orjson.dumps(value).decode():
                return False
            if type(value) is int and not _INT64_MIN <= value <= _UINT64_MAX:
                return False
    return True


def summarise(old: AgentConfig | None, new: AgentConfig) -> list[Change]:
    """Every change from ``old`` to ``new`` (``old`` None: the agent is new, and its
    sections are all added). Identical configs give an empty summary."""
    if old is None:
        return [Change(change="section_added", section=s.id) for s in new.background.sections]
    changes = [
        Change(change="field_changed", field=name)
        for name in FIELDS
        if getattr(old, name) != getattr(new, name)
    ]
    if old.routing_spec != new.routing_spec:
        changes.append(
            Change(change="routing_spec_changed", from_=old.routing_spec, to=new.routing_spec)
        )
    changes.extend(_section_changes(old.background.sections, new.background.sections))
    return changes


def _section_changes(
    old: Sequence[BackgroundSection], new: Sequence[BackgroundSection]
) -> list[Change]:
    before = {section.id: (i, section) for i, section in enumerate(old)}
    kept = _kept_in_order([before[s.id][0] for s in new if s.id in before])
    changes: list[Change] = []
    for section in new:
        found = before.get(section.id)
        if found is None:
            changes.append(Change(change="section_added", section=section.id))
            continue
        position, was = found
        if position not in kept:
            changes.append(Change(change="section_moved", section=section.id))
        if was.title != section.title:
            changes.append(
                Change(
                    change="section_retitled",
                    section=section.id,
                    from_=was.title,
                    to=section.title,
                )
            )
        if was.promotion != section.promotion:
            changes.append(Change(change="section_retiered", section=section.id))
        changes.extend(_entry_changes(section.id, was.entries, section.entries))
    now = {section.id for section in new}
    changes.extend(Change(change="section_removed", section=s.id) for s in old if s.id not in now)
    return changes


def _entry_changes(
    section: str, old: Sequence[BackgroundEntry], new: Sequence[BackgroundEntry]
) -> list[Change]:
    if len(old) == len(new) and all(a.key == b.key for a, b in zip(old, new, strict=True)):
        # The same keys in the same order (most sections of most changes): only values
        # can differ, and nothing moved.
        return [
            Change(change="entry_changed", section=section, key=b.key)
            for a, b in zip(old, new, strict=True)
            if not _same_value(a.value, b.value)
        ]
    before = {entry.key: (i, entry) for i, entry in enumerate(old)}
    kept = _kept_in_order([before[e.key][0] for e in new if e.key in before])
    changes: list[Change] = []
    for entry in new:
        found = before.get(entry.key)
        if found is None:
            changes.append(Change(change="entry_added", section=section, key=entry.key))
        elif found[0] not in kept or not _same_value(found[1].value, entry.value):
            changes.append(Change(change="entry_changed", section=section, key=entry.key))
    now = {entry.key for entry in new}
    changes.extend(
        Change(change="entry_removed", section=section, key=e.key) for e in old if e.key not in now
    )
    return changes


def _same_value(a: object, b: object) -> bool:
    # 1 and True (and 1.0) are equal in Python but render differently: compare types too.
    return type(a) is type(b) and a == b


def _kept_in_order(positions: list[int]) -> set[int]:
    """The largest set of ``positions`` (distinct) that are already in increasing order:
    a longest increasing subsequence, by patience sorting."""
    tails: list[int] = []  # the smallest tail of an increasing run of each length
    tail_at: list[int] = []  # index into positions of that tail
    parent = [-1] * len(positions)
    for index, position in enumerate(positions):
        length = bisect_left(tails, position)
        if length == len(tails):
            tails.append(position)
            tail_at.append(index)
        else:
            tails[length] = position
            tail_at[length] = index
        parent[index] = tail_at[length - 1] if length else -1
    kept: set[int] = set()
    index = tail_at[-1] if tail_at else -1
    while index != -1:
        kept.add(positions[index])
        index = parent[index]
    return kept
