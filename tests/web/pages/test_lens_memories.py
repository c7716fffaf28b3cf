"""Memories on the lens at ``/agents/<slug>/`` (SPEC §4.3, §5.6): each memory fragment
matches the composition and links to its memory, and every drop is shown with its reason.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from lens.models import Agent
from memory.core.explain import group_title
from memory.core.report import DROP_REASONS
from tests.factories import (
    Story,
    composed,
    remember,
)
from tests.pages import dom

pytestmark = pytest.mark.django_db


# --- the lens: memory fragments ----------------------------------------------------


def test_each_fragment_element_matches_the_composition(member_client: Client, story: Story) -> None:
    composition = composed(story.agent)
    page = dom(member_client.get("/agents/wren/"))
    shown = page.all("data-source")
    expected = [f for s in composition.prompt.sections for f in s.fragments]
    assert [e.get("data-source") for e in shown] == [f.source for f in expected]
    for element, fragment in zip(shown, expected, strict=True):
        assert element.text == fragment.text
        if fragment.source == "memory":
            assert element.get("data-memory-ids") == " ".join(fragment.memory_ids)
        else:
            assert "data-memory-ids" not in element.attrs
            assert "data-tip" not in element.attrs
    assert sum(f.source == "memory" for f in expected) == len(story.composed_ids)


def test_memory_fragments_link_to_their_memory_and_explain_it_on_hover(
    member_client: Client, story: Story
) -> None:
    page = dom(member_client.get("/agents/wren/"))
    fragments = page.all("data-source", "memory")
    assert {e.get("data-memory-ids") for e in fragments} == story.composed_ids
    for element in fragments:
        memory_id = element.get("data-memory-ids") or ""
        assert element.tag == "a"
        assert element.get("href") == f"/memories/{memory_id}/"
        assert memory_id in (element.get("data-tip") or "")
    city = page.one("data-memory-ids", story.ids["city"])
    # No label: the key is derived from the content.
    assert re.fullmatch(
        r'- \*\*c-[0-9a-f]{16}\*\*: Lives in <Gdańsk> & "likes" the sea\n', city.text
    )
    # The tooltip tells where it came from, not the text already shown.
    tip = city.get("data-tip") or ""
    assert "Lives in" not in tip
    assert "Approved automatically (auto tier)" in tip
    assert "Saved " in tip


def test_the_memory_fragments_are_the_composed_entries(member_client: Client, story: Story) -> None:
    page = dom(member_client.get("/agents/wren/"))
    name = page.one("data-memory-ids", story.ids["name"])
    assert name.text == "- **name**: Mira K.\n"
    drink = page.one("data-memory-ids", story.ids["approved_pref"])
    assert drink.text == "- **drink**: Tea, never coffee.\n"
    # The authored entry keeps its key; the memory that wanted it is a drop.
    context = page.one("data-section", "Context")
    authored = [e for e in context.descendants() if e.get("data-source") == "authored"]
    assert any("- **timezone**: Europe/Warsaw\n" in e.text for e in authored)
    assert "UTC" not in context.text


def test_an_agent_without_memories_has_only_authored_fragments(
    member_client: Client, wren: Agent
) -> None:
    page = dom(member_client.get("/agents/wren/"))
    assert {e.get("data-source") for e in page.all("data-source")} == {"authored"}
    assert page.all("data-memory-ids") == []
    assert page.all("data-drop-reason") == []


# --- the lens: the drops panel -----------------------------------------------------


def test_every_drop_is_shown_with_its_reason(member_client: Client, story: Story) -> None:
    report = composed(story.agent).report
    assert {d.memory_id: d.reason for d in report.drops} == story.expected_drops
    page = dom(member_client.get("/agents/wren/"))
    shown = page.all("data-drop-reason")
    assert sorted((e.get("data-memory-id"), e.get("data-drop-reason")) for e in shown) == sorted(
        (d.memory_id, d.reason) for d in report.drops
    )
    for element in shown:
        links = [e.get("href") or "" for e in element.descendants() if e.tag == "a"]
        # The memory first; then what its reason names (a newer memory, the queue).
        assert links[0] == f"/memories/{element.get('data-memory-id')}/"
        assert all(h.startswith(("/memories/", "/approvals/?agent=wren")) for h in links[1:])


def test_no_memory_is_silent_or_shown_twice(member_client: Client, story: Story) -> None:
    page = dom(member_client.get("/agents/wren/"))
    in_fragments = [
        i for e in page.all("data-memory-ids") for i in (e.get("data-memory-ids") or "").split()
    ]
    dropped = [e.get("data-memory-id") for e in page.all("data-drop-reason")]
    assert len(in_fragments) == len(set(in_fragments))
    assert len(dropped) == len(set(dropped))
    assert not set(in_fragments) & set(dropped)
    assert set(in_fragments) | set(dropped) == set(story.ids.values())


def test_drops_are_grouped_by_reason(member_client: Client, story: Story) -> None:
    page = dom(member_client.get("/agents/wren/"))
    groups: dict[int, set[str]] = {}
    group_of_reason: dict[str, set[int]] = {}
    for element in page.all("data-drop-reason"):
        group = element.ancestor("details")
        assert group is not None
        reason = element.get("data-drop-reason") or ""
        groups.setdefault(id(group), set()).add(reason)
        group_of_reason.setdefault(reason, set()).add(id(group))
        assert group.get("data-drop-group") == reason
        summary = next(c for c in group.children if c.tag == "summary")
        count = sum(1 for e in group.descendants() if e.get("data-drop-reason"))
        assert summary.squashed == f"{group_title(reason)} · {count}"
    assert all(len(reasons) == 1 for reasons in groups.values())
    assert all(len(found) == 1 for found in group_of_reason.values())
    assert set(group_of_reason) == set(story.expected_drops.values())
    # Groups follow the report's order of reasons.
    order = [e.get("data-drop-reason") for e in page.all("data-drop-reason")]
    assert order == sorted(order, key=DROP_REASONS.index)


def test_a_superseded_memory_that_was_pending_is_reported_superseded(
    member_client: Client, wren: Agent
) -> None:
    first = remember(wren, "preference", "Light theme.", label="theme")
    second = remember(wren, "preference", "Dark theme.", label="theme", supersedes=first)
    page = dom(member_client.get("/agents/wren/"))
    reasons = {
        e.get("data-memory-id"): e.get("data-drop-reason") for e in page.all("data-drop-reason")
    }
    assert reasons == {first: "superseded", second: "awaiting-approval"}


def test_over_budget_memories_are_dropped_whole(
    member_client: Client, wren: Agent, settings: Any
) -> None:
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 40
    short = remember(wren, "profile", "Mira", label="name")
    long = remember(wren, "profile", "A very long biography " * 5, label="bio")
    composition = composed(wren)
    assert {d.memory_id: d.reason for d in composition.report.drops} == {long: "over-budget"}
    page = dom(member_client.get("/agents/wren/"))
    assert page.one("data-drop-reason", "over-budget").get("data-memory-id") == long
    assert page.one("data-memory-ids", short).text == "- **name**: Mira\n"
