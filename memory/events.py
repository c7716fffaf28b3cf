"""The one writer of memory events: each is a row of the memory's history
(``MemoryEvent``) and, for what the audit log names, an audit event of the agent's team
in the same transaction (SPEC §15).

A save writes the saving event and its outcome (promoted, queued or declined): the
audit log has one ``memory.saved`` for both, saying the outcome, the content's size and
hash — never the content, label or tags.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from lens.audit import Entry, append
from lens.models import Agent
from memory.models import EventKind, MemoryEvent, MemoryRecord

_ACTIONS = {
    EventKind.SAVED: "memory.saved",
    EventKind.SUPERSEDED: "memory.superseded",
    EventKind.APPROVED: "memory.approved",
    EventKind.REJECTED: "memory.rejected",
    EventKind.REVOKED: "memory.revoked",
    EventKind.REOPENED: "memory.reopened",
    EventKind.ERASED: "memory.erased",
    EventKind.MIGRATED: "memory.migrated",
    # Approved by the system on its sightings (SPEC §19.1): an approval all the same.
    EventKind.EARNED: "memory.approved",
    EventKind.VALIDITY: "memory.validity_changed",
}
# A save's outcome, said in its ``memory.saved`` event.
_OUTCOMES = {EventKind.PROMOTED, EventKind.QUEUED, EventKind.DECLINED, EventKind.CORROBORATES}


def content_sha256(content: str) -> str:
    return hashlib.sha256(content.encode()).hexdigest()


def saved_details(record: MemoryRecord) -> dict[str, Any]:
    """What the audit log keeps of a saved memory: its kind, size and hash."""
    return {
        "kind": record.kind,
        "size": len(record.content),
        "content_sha256": content_sha256(record.content),
        "supersedes": record.supersedes_id,
    }


def _address_details(address: object) -> dict[str, Any] | None:
    """An address as the audit log keeps it: the section id (a declaration) and the
    SHA-256 of the key. A key may spell a memory's label, which an erasure removes from
    every stored row; the append-only log can never be rewritten, so it holds the hash."""
    if not isinstance(address, dict):
        return None
    key = address.get("key")
    return {
        "section": address.get("section"),
        "key_sha256": content_sha256(key) if isinstance(key, str) else None,
    }


def migrated_details(detail: Mapping[str, Any]) -> dict[str, Any]:
    """A ``memory.migrated`` audit event's details: both addresses (keys hashed), the
    spec version it moved to, and the outcome."""
    return {
        "from": _address_details(detail.get("from")),
        "to": _address_details(detail.get("to")),
        "spec": detail.get("spec"),
        "spec_version": detail.get("spec_version"),
        "outcome": detail.get("outcome"),
    }


def write_events(
    events: Sequence[MemoryEvent],
    *,
    agent: Agent | None = None,
    saved: Mapping[str, dict[str, Any]] | None = None,
    stored: bool = False,
) -> None:
    """Store ``events`` and append their audit events, in the caller's transaction.

    ``agent``: the agent of every event, when the caller has it (else its team and slug
    are read); ``saved``: the audit details of the records saved, by id; ``stored``: the
    caller inserted the events already, with its own rows (``lens.inserts``).
    """
    if not events:
        return
    if not stored:
        MemoryEvent.objects.bulk_create(events)
    if agent is not None:
        places = {agent.pk: (agent.team_id, agent.slug)}
    else:
        ids = {event.agent_id for event in events}
        places = {
            pk: (team_id, slug)
            for pk, team_id, slug in Agent.objects.filter(pk__in=ids).values_list(
                "pk", "team_id", "slug"
            )
        }
    outcomes = {
        event.record_id: {"outcome": str(event.kind), **event.detail}
        for event in events
        if event.kind in _OUTCOMES
    }
    by_team: dict[int, list[Entry]] = {}
    for event in events:
        action = _ACTIONS.get(EventKind(event.kind))
        if action is None:
            continue
        team_id, slug = places[event.agent_id]
        details: dict[str, Any] = {}
        if event.kind == EventKind.SAVED:
            details = {
                **(saved or {}).get(event.record_id, {}),
                **outcomes.get(event.record_id, {}),
            }
        elif event.kind == EventKind.SUPERSEDED:
            details = {"by": event.detail.get("by")}
        elif event.kind == EventKind.MIGRATED:
            details = migrated_details(event.detail)
        elif event.kind == EventKind.EARNED:
            # Approved by the system: the distinct sessions that saved it.
            details = {"bulk": False, "earned": True, "sessions": event.detail.get("sessions")}
        elif event.kind == EventKind.VALIDITY:
            # Two moments, never content.
            details = {"from": event.detail.get("from"), "to": event.detail.get("to")}
        elif event.kind == EventKind.ERASED:
            # Who, when and why (the eraser's reason, which the page asks not to quote
            # the memory), the hash the save already logged and counts: nothing of the text.
            details = {
                key: event.detail[key]
                for key in ("content_sha256", "reason", "compositions", "deliveries")
                if key in event.detail
            }
        else:
            # A reviewer's note is their words: its length, not its text.
            details = {"bulk": bool(event.detail.get("bulk"))}
            if "undone" in event.detail:
                details["undone"] = event.detail["undone"]
            if event.detail.get("reason"):
                details["note_chars"] = len(event.detail["reason"])
        by_team.setdefault(team_id, []).append(
            Entry(action, "memory", event.record_id, slug, details, actor=event.actor)
        )
    for team_id, entries in by_team.items():
        append(team_id, entries[0].actor or "system", entries)
