"""The preset routing specs: a spec plus the section declarations it expects.

Vocabularies are opt-in: nothing here is a schema default. Key derivation is shared: a
slug of the label when there is one (so "Name" and "name " are one address), otherwise
a hash of the normalised content (append-only; re-saving identical content collides).
"""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass, field

from lens.core.background import Promotion
from memory.routing import (
    KeySource,
    Placement,
    RoutableRecord,
    RoutingContext,
    SectionDeclaration,
)


def slug(text: str) -> str:
    """Lowercase alphanumeric runs joined by '-', diacritics dropped."""
    decomposed = unicodedata.normalize("NFKD", text)
    runs: list[str] = []
    current: list[str] = []
    for char in decomposed.casefold():
        if unicodedata.combining(char):
            continue
        if char.isalnum():
            current.append(char)
        elif current:
            runs.append("".join(current))
            current = []
    if current:
        runs.append("".join(current))
    return "-".join(runs)


def content_key(content: str) -> str:
    normalised = " ".join(unicodedata.normalize("NFKC", content).casefold().split())
    return "c-" + hashlib.sha256(normalised.encode()).hexdigest()[:16]


def derive_key(record: RoutableRecord) -> tuple[str, KeySource]:
    if record.label and (label_slug := slug(record.label)):
        return label_slug, "label"
    return content_key(record.content), "content"


@dataclass(frozen=True)
class PresetSpec:
    """A routing spec driven by a ``kind -> section`` table."""

    key: str
    version: str
    sections: tuple[SectionDeclaration, ...]
    routes: dict[str, str] = field(default_factory=dict)

    def route(self, record: RoutableRecord, ctx: RoutingContext) -> Placement | None:
        section = self.routes.get(record.kind)
        if section is None:
            return None
        return Placement(section=section, key=derive_key(record)[0])

    def key_source(self, record: RoutableRecord) -> KeySource:
        return derive_key(record)[1]


def _declare(section_id: str, title: str, promotion: Promotion) -> SectionDeclaration:
    return SectionDeclaration(id=section_id, title=title, promotion=promotion)


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
