"""A memory's history in words: the events whose details are addresses or moments (a
migration's ``from`` and ``to``, SPEC §18.3; a validity change's, §19.2) read as a
sentence, not as the stored JSON."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from django import template

from web.pages.toolkit import utc_minute

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


def _moment_words(value: Any) -> str:
    """ "2026-12-09 22:41 UTC" for a stored ISO 8601 moment; the text as stored when it
    does not parse (a hand-edited row costs its own wording, not the page)."""
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        return str(value)
    # Stored with their zone; one without is read as UTC, as the validity form reads it.
    return utc_minute(moment if moment.tzinfo else moment.replace(tzinfo=UTC))


@register.filter
def validity_words(detail: Any) -> str:
    """ "Valid until set to …", "… moved from A to B" or "… cleared (was A)": a
    ``validity`` event's detail (SPEC §19.2), whose ``from`` and ``to`` are moments or
    null."""
    detail = detail if isinstance(detail, Mapping) else {}
    before, after = detail.get("from"), detail.get("to")
    if before and after:
        return f"Valid until moved from {_moment_words(before)} to {_moment_words(after)}"
    if after:
        return f"Valid until set to {_moment_words(after)}"
    if before:
        return f"Valid until cleared (was {_moment_words(before)})"
    return "Valid until unchanged"
