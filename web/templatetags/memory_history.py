"""A memory's history in words: the events whose details are addresses (a migration's
``from`` and ``to``, SPEC §18.3) read as a sentence, not as the stored JSON."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import template

register = template.Library()

# What a migration committed, in words (its ``outcome``).
_OUTCOME_WORDS = {
    "approved": "approved",
    "pending": "waiting for a decision",
    "declined": "declined",
}


def place_words(address: Any, titles: Mapping[str, str]) -> str:
    """ "Preferences › tone" for ``{"section": "preferences", "key": "tone"}`` (the
    section's title when it is declared now, else its id); "no placement" for none."""
    if not isinstance(address, Mapping) or not address.get("section"):
        return "no placement"
    section = str(address["section"])
    title = titles.get(section) or section
    key = address.get("key")
    return f"{title} › {key}" if key else title


@register.filter
def moved_words(detail: Any, titles: Mapping[str, str] | None) -> str:
    """ "Moved from Preferences › tone to Style › tone": a ``migrated`` event's detail."""
    detail = detail if isinstance(detail, Mapping) else {}
    titles = titles or {}
    source = place_words(detail.get("from"), titles)
    target = place_words(detail.get("to"), titles)
    if source == target:
        return f"Re-promoted at {target}"
    return f"Moved from {source} to {target}"


@register.filter
def migration_note(detail: Any) -> str:
    """ "routing spec user-background version 2; waiting for a decision"."""
    detail = detail if isinstance(detail, Mapping) else {}
    parts = []
    if spec := detail.get("spec"):
        version = detail.get("spec_version")
        parts.append(f"routing spec {spec}" + (f" version {version}" if version else ""))
    if outcome := detail.get("outcome"):
        parts.append(_OUTCOME_WORDS.get(str(outcome), str(outcome)))
    return "; ".join(parts)
