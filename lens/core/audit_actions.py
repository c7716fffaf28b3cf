"""Every action an audit event can name (SPEC §15): the one list the audit log checks
appends against and webhooks derive their event types from. Pure."""

from __future__ import annotations

from collections.abc import Iterable

# What happens to a saved memory after its save: each can move it into or out of a prompt.
MEMORY_AFTER_SAVE = (
    "memory.approved",
    "memory.rejected",
    "memory.revoked",
    "memory.reopened",
    "memory.superseded",
    "memory.erased",
    # A migration moved its placement (SPEC §18.3).
    "memory.migrated",
    # A reviewer set, moved or cleared its validity window (SPEC §19.2).
    "memory.validity_changed",
)

# Every action an event can name (SPEC §15).
ACTIONS = frozenset(
    {
        "agent.created",
        "agent.revised",
        "agent.deleted",
        "proposal.created",
        "proposal.published",
        "proposal.rejected",
        "proposal.stale",
        "proposal.withdrawn",
        "memory.saved",
        *MEMORY_AFTER_SAVE,
        "delivery.recorded",
        # An agent's routing cases replaced or added to (SPEC §18.1).
        "routing_cases.changed",
        # Retention: the deliveries recorded before a time were removed (not in SPEC
        # §15's list, which names changes a person or an agent makes; pruning is the
        # operator's, and an auditor must see it).
        "delivery.pruned",
        "kv.written",
        "kv.deleted",
        "token.issued",
        "token.revoked",
        "member.added",
        "member.removed",
        "webhook.created",
        "webhook.deleted",
        # A webhook's signing secret replaced (the old one signs too for a day).
        "webhook.rotated",
    }
)


def unknown_actions(names: Iterable[str]) -> list[str]:
    """The names in ``names`` that are no audit action, in their order."""
    return [name for name in names if name not in ACTIONS]
