"""The preset routing specs: a spec plus the section declarations it expects.

Vocabularies are opt-in: nothing here is a schema default. Key derivation is shared: a
slug of the label when there is one (so "Name", "name ", "ｎａｍｅ" and Cyrillic "nаme"
are one address), otherwise a hash of the normalised content (append-only; re-saving
identical content collides).
"""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from lens.core.background import Tier
from lens.core.identity import ascii_lookalikes, without_format
from memory.core.routing import (
    DeclaredSection,
    KeySource,
    Placement,
    RoutableRecord,
    RoutingContext,
    RoutingSpec,
)
from memory.core.tokenizer import tokenize


def slug(text: str) -> str:
    """The label's tokens joined by '-', spelt with ASCII look-alikes: "Name", "name ",
    "na\u200bme" and Cyrillic "nаme" are one address, ``name``.

    Format characters go first: tokenizing would read an invisible zero-width space as
    a word break. The tokens are NFKD-normalised and case-folded (the search tokenizer,
    SPEC §6.1), then each non-ASCII character confusable with an ASCII letter or digit
    (UTS #39) is spelt as that character, so look-alikes from other scripts cannot hold
    two addresses that render the same key. ASCII is kept as written: the key stays
    readable and distinct ASCII labels stay distinct addresses.
    """
    return "-".join(ascii_lookalikes(token) for token in tokenize(without_format(text)))


def content_key(content: str) -> str:
    normalised = " ".join(unicodedata.normalize("NFKC", content).casefold().split())
    return "c-" + hashlib.sha256(normalised.encode()).hexdigest()[:16]


def derive_key(record: RoutableRecord) -> tuple[str, KeySource]:
    if record.label and (label_slug := slug(record.label)):
        return label_slug, "label"
    return content_key(record.content), "content"


@runtime_checkable
class Preset(RoutingSpec, Protocol):
    """A routing spec that comes with the section declarations it expects."""

    @property
    def sections(self) -> tuple[DeclaredSection, ...]: ...


@dataclass(frozen=True)
class PresetSpec:
    """A routing spec driven by a ``kind -> section`` table."""

    key: str
    version: str
    sections: tuple[DeclaredSection, ...]
    routes: dict[str, str] = field(default_factory=dict)

    def route(self, record: RoutableRecord, ctx: RoutingContext) -> Placement | None:
        section = self.routes.get(record.kind)
        if section is None:
            return None
        return Placement(section=section, key=derive_key(record)[0])

    def key_source(self, record: RoutableRecord) -> KeySource:
        return derive_key(record)[1]


def _declare(section_id: str, title: str, promotion: Tier) -> DeclaredSection:
    return DeclaredSection(id=section_id, title=title, promotion=promotion)


USER_BACKGROUND = PresetSpec(
    key="user-background",
    version="1",
    sections=(
        _declare("user_profile", "About the User", "auto"),
        _declare("user_preferences", "User Preferences", "guarded"),
    ),
    routes={"profile": "user_profile", "preference": "user_preferences"},
)

PROJECT = PresetSpec(
    key="project",
    version="1",
    sections=(
        _declare("team_context", "Team Context", "locked"),
        _declare("project_context", "Project Context", "guarded"),
        _declare("conventions", "Conventions", "guarded"),
        _declare("project_state", "Project State", "auto"),
    ),
    routes={"convention": "conventions", "decision": "project_context", "state": "project_state"},
)
