"""The event names webhooks derive from the audit log are the log's own (one list)."""

from __future__ import annotations

from lens.core.audit_actions import ACTIONS, unknown_actions
from webhooks.core import topics
from webhooks.endpoints import EVENT_TYPES


def test_every_action_the_topics_name_is_an_audit_action() -> None:
    assert topics.RECOMPOSING <= ACTIONS
    assert unknown_actions(["memory.saved", "memory.savd"]) == ["memory.savd"]


def test_every_event_type_is_an_audit_action_or_a_derived_one() -> None:
    assert set(EVENT_TYPES) == ACTIONS | set(topics.DERIVED)
