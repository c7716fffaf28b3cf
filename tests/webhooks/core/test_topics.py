"""Which events an endpoint gets, and the events derived from the audit log's."""

from __future__ import annotations

from typing import Any

from webhooks.core.topics import recomposed_agents, starts_waiting, unknown_types, wants


def event(action: str, agent: str | None = "wren", **details: Any) -> dict[str, Any]:
    return {"action": action, "agent": agent, "details": details}


def test_an_endpoint_gets_what_it_names_or_everything() -> None:
    assert wants(["kv.written"], "kv.written")
    assert not wants(["kv.written"], "kv.deleted")
    assert wants(["*"], "prompt.changed")


def test_what_starts_waiting_for_a_reviewer() -> None:
    assert starts_waiting(event("memory.saved", outcome="queued"))
    assert not starts_waiting(event("memory.saved", outcome="promoted"))
    assert not starts_waiting(event("memory.saved", outcome="declined"))
    assert starts_waiting(event("memory.reopened"))
    assert starts_waiting(event("proposal.created"))
    assert not starts_waiting(event("memory.approved"))


def test_the_agents_a_change_may_recompose_each_once_in_order() -> None:
    events = [
        event("memory.saved", "queued", outcome="queued"),
        event("memory.saved", "declined", outcome="declined"),
        event("memory.approved", "wren"),
        event("memory.saved", "sol", outcome="promoted"),
        event("kv.written", None),
        event("delivery.recorded", "atlas"),
        event("agent.revised", "atlas"),
        event("memory.revoked", "wren"),
    ]
    assert recomposed_agents(events) == ["wren", "sol", "atlas"]


def test_unknown_event_types_are_named() -> None:
    assert unknown_types(["*", "kv.written", "kv.writen"], {"kv.written"}) == ["kv.writen"]
