"""What a reviewer reads of a proposal (SPEC §14): its summary, the config and prompt
diffs, the token delta and every memory whose fate changes, in the lens's words."""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from lens.actors import Actor
from lens.models import Agent, Team
from memory.core.routing import Placement, placement_key
from memory.decisions import decide
from memory.models import MemoryRecord, Promotion, PromotionStatus, new_record_id
from memory.proposal_review import review_proposal, review_proposals
from tests.factories import create_agent, memory_config, propose, remember

pytestmark = pytest.mark.django_db


def protected_config() -> dict[str, Any]:
    return memory_config(protected=True)


@pytest.fixture
def wren(team: Team) -> Agent:
    """Wren, protected from the start: an auto profile section holding the authored
    ``timezone`` and a guarded preferences section."""
    return create_agent(team, "wren", protected_config())


@pytest.fixture
def memories(wren: Agent, reviewer: User) -> dict[str, str]:
    """A composed profile memory, an approved preference, a profile memory the authored
    ``timezone`` beats and a pending preference (which no config change composes)."""
    drink = remember(wren, "preference", "Tea, never coffee.", label="drink")
    decide(drink, True, Actor.for_user(reviewer))
    return {
        "name": remember(wren, "profile", "Mira K.", label="name"),
        "drink": drink,
        "timezone": remember(wren, "profile", "UTC", label="timezone"),
        "pending": remember(wren, "preference", "Short answers.", label="answers"),
    }


def changed(edit: Any) -> dict[str, Any]:
    config = copy.deepcopy(protected_config())
    edit(config["background"]["sections"])
    return config


def fates_of(review: Any) -> dict[str, tuple[str, str | None, str | None]]:
    """Each fate change: (change, reason before, reason after), by memory id."""
    return {
        change.memory_id: (change.change, change.before.reason or None, change.after.reason or None)
        for change in review.fates.changes
    }


def test_a_removed_section_drops_its_memories_with_the_reason_in_words(
    wren: Agent, memories: dict[str, str], rhea: User
) -> None:
    proposal = propose(wren.team, "wren", changed(lambda sections: sections.pop(1)), rhea)
    review = review_proposal(proposal)

    assert fates_of(review) == {memories["drink"]: ("dropped", None, "undeclared-section")}
    (drink,) = review.fates.changes
    assert drink.before.sentence == "It fills “drink” in User Preferences."
    assert drink.after.sentence == (
        "It was routed to the section user_preferences as “drink”, which this agent does "
        "not declare."
    )
    assert drink.words == "“drink: Tea, never coffee.”"
    assert drink.kind == "preference"
    assert (review.fates.total, review.fates.counts) == (
        1,
        {"dropped": 1, "composed": 0, "moved": 0},
    )
    assert review.summary == [{"change": "section_removed", "section": "user_preferences"}]
    assert review.titles["user_preferences"] == "User Preferences"


def test_the_diffs_run_from_the_newest_revision_to_the_proposal(
    wren: Agent, memories: dict[str, str], rhea: User
) -> None:
    proposal = propose(wren.team, "wren", changed(lambda sections: sections.pop(1)), rhea)
    review = review_proposal(proposal)

    assert (review.from_number, review.from_label) == (1, "revision 1")
    assert review.to_label == f"proposal {proposal.pk}"
    assert review.config_diff.startswith(f"--- revision 1\n+++ proposal {proposal.pk}\n")
    assert '-        "id": "user_preferences",\n' in review.config_diff
    assert review.prompt_diff.startswith(f"--- revision 1\n+++ proposal {proposal.pk}\n")
    assert "-### User Preferences\n" in review.prompt_diff
    assert "-- **drink**: Tea, never coffee.\n" in review.prompt_diff
    assert review.tokens_to < review.tokens_from


def test_a_retitled_section_moves_its_memories_and_a_retiered_one_drops_them(
    wren: Agent, memories: dict[str, str], rhea: User
) -> None:
    def edit(sections: list[dict[str, Any]]) -> None:
        sections[0]["title"] = "About You"
        sections[1]["promotion"] = "locked"

    review = review_proposal(propose(wren.team, "wren", changed(edit), rhea))

    assert fates_of(review) == {
        memories["drink"]: ("dropped", None, "locked-section"),
        memories["name"]: ("moved", None, None),
    }
    drink, name = review.fates.changes  # leaving the prompt comes first
    assert drink.after.sentence == "User Preferences is a locked section: memory never fills it."
    assert (name.before.place, name.after.place) == ("About the User → name", "About You → name")
    assert review.fates.counts == {"dropped": 1, "composed": 0, "moved": 1}


def test_removing_an_authored_entry_composes_the_memory_it_held_out(
    wren: Agent, memories: dict[str, str], rhea: User
) -> None:
    def edit(sections: list[dict[str, Any]]) -> None:
        sections[0]["entries"] = []

    review = review_proposal(propose(wren.team, "wren", changed(edit), rhea))

    assert fates_of(review) == {memories["timezone"]: ("composed", "authored-wins", None)}
    (timezone_memory,) = review.fates.changes
    assert timezone_memory.before.sentence == (
        "The authored entry “timezone” in About the User holds the same key and wins: "
        "“Europe/Warsaw”."
    )
    assert timezone_memory.after.sentence == "It fills “timezone” in About the User."


def test_a_memory_left_out_for_its_own_reasons_never_changes_fate(
    wren: Agent, memories: dict[str, str], rhea: User
) -> None:
    def edit(sections: list[dict[str, Any]]) -> None:
        sections[1]["promotion"] = "auto"

    review = review_proposal(propose(wren.team, "wren", changed(edit), rhea))
    # The pending preference stays pending: a tier decides new memories, not old rows.
    assert review.fates.total == 0
    assert review.fates.changes == ()


def test_a_smaller_budget_share_names_what_each_line_needs(
    wren: Agent, memories: dict[str, str], rhea: User, settings: Any
) -> None:
    # Lines of 20 (name) and 32 (drink) characters: room for one, and the newer (name)
    # is kept first.
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 40
    review = review_proposal(
        propose(wren.team, "wren", changed(lambda sections: sections.pop(0)), rhea)
    )
    fates = fates_of(review)
    # The profile section goes: name leaves it; drink, over the budget before, now fits.
    assert fates[memories["name"]] == ("dropped", None, "undeclared-section")
    change, before, after = fates[memories["drink"]]
    assert (change, before, after) == ("composed", "over-budget", None)
    drink = next(c for c in review.fates.changes if c.memory_id == memories["drink"])
    assert drink.before.sentence.startswith("Over the memory budget: its line needs ")
    assert drink.before.sentence.endswith("needs 32 chars and 20 of 40 are left.")


def test_a_decided_proposal_is_compared_with_the_revision_it_was_made_on(
    wren: Agent, memories: dict[str, str], rhea: User, reviewer: User
) -> None:
    from memory.configuring import publish_proposal

    proposal = propose(wren.team, "wren", changed(lambda sections: sections.pop(1)), rhea)
    publish_proposal(wren.team, proposal.pk, Actor.for_user(reviewer))
    proposal.refresh_from_db()
    assert proposal.status == "published"

    review = review_proposal(proposal)
    assert review.from_label == "revision 1"  # not revision 2, which it became
    assert fates_of(review) == {memories["drink"]: ("dropped", None, "undeclared-section")}


def test_several_proposals_are_reviewed_in_a_fixed_number_of_queries(
    team: Team, wren: Agent, memories: dict[str, str], rhea: User, django_assert_num_queries: Any
) -> None:
    atlas = create_agent(team, "atlas", memory_config(name="Atlas", protected=True))
    remember(atlas, "profile", "Lives by the sea.", label="home")
    proposals = [
        propose(team, "wren", changed(lambda sections: sections.pop(1)), rhea),
        propose(team, "wren", changed(lambda sections: sections.pop(0)), rhea),
        propose(
            team, "atlas", {**memory_config(name="Atlas", protected=True), "tone": "Dry."}, rhea
        ),
    ]
    from lens.proposals import get_proposal

    loaded = [get_proposal(team, proposal.pk) for proposal in proposals]
    # The revisions compared, the placed memories and the promotion states.
    with django_assert_num_queries(3):
        reviews = review_proposals(loaded)
    assert sorted(reviews) == sorted(p.pk for p in proposals)
    assert reviews[proposals[2].pk].fates.total == 0
    assert reviews[proposals[2].pk].summary == [{"change": "field_changed", "field": "tone"}]


def placed_in_bulk(agent: Agent, section: str, count: int) -> None:
    """``count`` approved profile memories placed in ``section``, written in bulk (the
    saving path would take minutes for this many)."""
    start = timezone.now() - timedelta(days=1)
    records = [
        MemoryRecord(
            id=new_record_id(),
            agent=agent,
            kind="profile",
            content=f"Fact {n}",
            tags=[],
            label=f"k{n}",
            created_at=start + timedelta(microseconds=n),
        )
        for n in range(count)
    ]
    MemoryRecord.objects.bulk_create(records)
    Promotion.objects.bulk_create(
        Promotion(
            record=record,
            agent=agent,
            section=section,
            key=record.label,
            placement_key=placement_key(Placement(section=section, key=str(record.label))),
            key_source="label",
            spec_key="user-background",
            spec_version="1",
            tier="auto",
            status=PromotionStatus.APPROVED,
            promoted_at=record.created_at,
        )
        for record in records
    )


def test_thousands_of_moving_memories_are_counted_and_at_most_a_hundred_put_in_words(
    wren: Agent, rhea: User, settings: Any
) -> None:
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 1_000_000  # every one of them composed
    placed_in_bulk(wren, "user_profile", 3000)

    def edit(sections: list[dict[str, Any]]) -> None:
        sections[0]["title"] = "About You"

    review = review_proposal(propose(wren.team, "wren", changed(edit), rhea))
    assert review.fates.total == 3000
    assert review.fates.counts == {"dropped": 0, "composed": 0, "moved": 3000}
    assert len(review.fates.changes) == 100
    assert review.fates.more == 2900
    assert {change.change for change in review.fates.changes} == {"moved"}
    ids = [change.memory_id for change in review.fates.changes]
    assert ids == sorted(ids)
    assert json.dumps(review.summary) == json.dumps(
        [
            {
                "change": "section_retitled",
                "section": "user_profile",
                "from": "About the User",
                "to": "About You",
            }
        ]
    )
