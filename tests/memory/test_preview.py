"""Routing preview (``memory.preview.preview_save``, SPEC §5.7), called directly: it
writes nothing, and what it predicts is exactly what a save then records.
"""

from __future__ import annotations

from typing import Any

import pytest

from lens.actors import Actor
from lens.models import Agent, Team
from memory.core.records import MemoryInput
from memory.models import MemoryRecord
from memory.preview import Preview, preview_save
from memory.saving import Conflict, UnknownSupersedes, save_memory
from tests.factories import create_agent, in_prompt, memory_row_counts
from tests.samples import SAMPLE_CONFIG

pytestmark = pytest.mark.django_db

AGENT = Actor(label="test")


def config(profile: str, preferences: str | None, authored: dict[str, str] | None = None) -> Any:
    sections: list[dict[str, Any]] = [
        {
            "id": "user_profile",
            "title": "About the User",
            "promotion": profile,
            "entries": [{"key": k, "value": v} for k, v in (authored or {}).items()],
        }
    ]
    if preferences is not None:
        sections.append({"id": "user_preferences", "title": "Prefs", "promotion": preferences})
    return {
        **SAMPLE_CONFIG,
        "routing_spec": "user-background",
        "background": {"sections": sections},
    }


# Between them, these agents reach every outcome a save can have.
AGENTS = {
    "open": config("auto", "guarded"),
    "closed": config("locked", "earned"),
    "partial": config("auto", None, authored={"name": "Authored name."}),
}
CANDIDATES = [
    MemoryInput(kind="profile", content="Doug.", label="name"),
    MemoryInput(kind="profile", content="Lisbon.", label="city"),
    MemoryInput(kind="profile", content="Lisbon, again.", label="city"),  # same address
    MemoryInput(kind="preference", content="Short answers.", label="answers"),
    MemoryInput(kind="preference", content="Short answers.", label="answers"),
    MemoryInput(kind="episode", content="Had a rough week."),
    MemoryInput(kind="profile", content="No label, so a content key."),
    MemoryInput(kind="profile", content="No label, so a content key."),
]


def agree(agent: Agent, data: MemoryInput) -> Preview:
    """Preview ``data``, check that nothing was written, save it, and check the save
    recorded what the preview said."""
    before = memory_row_counts()
    preview = preview_save(agent, data)
    assert memory_row_counts() == before
    result = save_memory(agent, data, AGENT)
    if isinstance(result, Conflict):
        assert preview.outcome == "conflict"
        assert preview.existing is not None
        assert preview.existing.pk == result.existing.pk
        return preview
    record = MemoryRecord.objects.select_related("promotion").get(pk=result.id)
    promotion = record.promotion
    if promotion.status == "corroborates":  # a sighting waits with its earning memory
        assert (preview.outcome, preview.reason) == ("pending", "earning")
        return preview
    assert preview.outcome == promotion.status, data
    assert preview.reason == (promotion.reason or None)
    assert preview.tier == promotion.tier
    assert preview.key_source == promotion.key_source
    placement = preview.placement
    where = (placement.section, placement.key) if placement else (None, None)
    assert where == (promotion.section, promotion.key)
    assert preview.would_compose == in_prompt(agent, record.pk)
    return preview


@pytest.mark.parametrize("slug", sorted(AGENTS))
def test_the_preview_says_what_every_save_then_records(team: Team, slug: str) -> None:
    agent = create_agent(team, slug, AGENTS[slug])
    outcomes = {agree(agent, data).outcome for data in CANDIDATES}
    expected = {
        "open": {"approved", "pending", "declined", "conflict"},
        "closed": {"declined", "pending"},
        "partial": {"approved", "declined", "conflict"},
    }
    assert outcomes == expected[slug]


def test_every_outcome_is_reached_and_nothing_is_ever_written(team: Team) -> None:
    reasons = set()
    for slug, raw in AGENTS.items():
        agent = create_agent(team, slug, raw)
        for data in CANDIDATES:
            before = memory_row_counts()
            preview = preview_save(agent, data)
            assert memory_row_counts() == before
            reasons.add(preview.reason or preview.fold_reason or preview.outcome)
    assert reasons >= {
        "approved",
        "pending",
        "spec-declined",
        "undeclared-section",
        "locked-section",
        "earning",
        "authored-wins",
    }


def test_an_authored_entry_at_the_key_means_approved_but_not_composed(team: Team) -> None:
    agent = create_agent(team, "partial", AGENTS["partial"])
    preview = preview_save(agent, MemoryInput(kind="profile", content="Doug.", label="Name"))
    assert (preview.outcome, preview.would_compose, preview.fold_reason) == (
        "approved",
        False,
        "authored-wins",
    )


def test_a_memory_that_would_not_fit_the_budget_is_over_budget(team: Team, settings: Any) -> None:
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 40
    agent = create_agent(team, "open", AGENTS["open"])
    agree(agent, MemoryInput(kind="profile", content="Doug.", label="name"))
    long = MemoryInput(kind="profile", content="x" * 100, label="city")
    preview = preview_save(agent, long)
    assert (preview.outcome, preview.would_compose, preview.fold_reason) == (
        "approved",
        False,
        "over-budget",
    )
    agree(agent, long)


def test_a_guarded_memory_is_pending_and_says_what_the_fold_would_do(team: Team) -> None:
    agent = create_agent(team, "open", AGENTS["open"])
    data = MemoryInput(kind="preference", content="Short answers.", label="answers")
    preview = agree(agent, data)
    assert (preview.outcome, preview.tier, preview.would_compose, preview.fold_reason) == (
        "pending",
        "guarded",
        False,
        None,
    )


def test_superseding_the_holder_is_no_conflict(team: Team) -> None:
    agent = create_agent(team, "open", AGENTS["open"])
    first = save_memory(agent, MemoryInput(kind="profile", content="Denver.", label="city"), AGENT)
    assert not isinstance(first, Conflict)
    again = MemoryInput(kind="profile", content="Lisbon.", label="city")
    assert agree(agent, again).outcome == "conflict"
    newer = MemoryInput(kind="profile", content="Lisbon.", label="city", supersedes=first.id)
    preview = agree(agent, newer)
    assert (preview.outcome, preview.would_compose) == ("approved", True)


def test_an_unknown_supersedes_is_refused_as_a_save_would_be(team: Team) -> None:
    agent = create_agent(team, "open", AGENTS["open"])
    data = MemoryInput(kind="profile", content="Doug.", label="name", supersedes="nope")
    before = memory_row_counts()
    with pytest.raises(UnknownSupersedes) as raised:
        preview_save(agent, data)
    assert raised.value.code == "unknown_supersedes"
    assert memory_row_counts() == before
