"""Which events an endpoint receives, and the events derived from audit events.

Every audit action is an event type (SPEC §15's list), and two more: ``approval.pending``
(a memory or a proposal starts waiting for a reviewer) and ``prompt.changed`` (an agent's
composed prompt differs from what it composed before).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from lens.core.audit_actions import MEMORY_AFTER_SAVE, unknown_actions

APPROVAL_PENDING = "approval.pending"
PROMPT_CHANGED = "prompt.changed"
DERIVED = (APPROVAL_PENDING, PROMPT_CHANGED)
EVERYTHING = "*"

# The audit actions after which an agent's composed prompt may differ (a save only when
# it was promoted at once: one that waits, or is declined, changes no prompt).
RECOMPOSING = frozenset({"agent.revised", *MEMORY_AFTER_SAVE})
# The other actions named below. Every name here is the audit log's own (checked at import,
# so a renamed action fails at start-up, not by silently never matching).
_NAMED = frozenset({"memory.saved", "proposal.created", "memory.reopened"})
if _misnamed := unknown_actions(sorted(RECOMPOSING | _NAMED)):
    raise ImportError(f"Not audit actions: {', '.join(_misnamed)}")


def wants(subscribed: Collection[str], event_type: str) -> bool:
    return EVERYTHING in subscribed or event_type in subscribed


def starts_waiting(event: Mapping[str, Any]) -> bool:
    """Whether an audit event puts something in the approval queue: a proposal made, a
    save that waits for review, a decision reopened."""
    action = event["action"]
    if action in ("proposal.created", "memory.reopened"):
        return True
    return action == "memory.saved" and _outcome(event) == "queued"


def recomposed_agents(events: Iterable[Mapping[str, Any]]) -> list[str]:
    """The agents (slugs, in first-named order) whose prompt the events may change."""
    seen: dict[str, None] = {}
    for event in events:
        promoted = event["action"] == "memory.saved" and _outcome(event) == "promoted"
        if (promoted or event["action"] in RECOMPOSING) and event["agent"]:
            seen.setdefault(event["agent"], None)
    return list(seen)


def _outcome(event: Mapping[str, Any]) -> object:
    return event["details"].get("outcome")


def unknown_types(requested: Iterable[str], known: Collection[str]) -> list[str]:
    """The requested event types that are neither known nor ``*``, in order."""
    return [name for name in requested if name != EVERYTHING and name not in known]
