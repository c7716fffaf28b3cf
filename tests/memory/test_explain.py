"""Why each memory is or is not in the prompt (``memory.explain``), built with the real
operations: saving, approving, rejecting, revoking, superseding, a tight budget and
changed declarations. The words name what blocks each memory (SPEC §5.6, §9).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import User

from lens.actors import Actor
from lens.core.render import ENTRY_LINE_OVERHEAD
from lens.models import Agent, Team
from memory.core.explain import UNROUTED, Explanation, Link, utc
from memory.core.presets import USER_BACKGROUND
from memory.core.routing import OverlayPlan, PlacedRecord
from memory.decisions import decide, revoke
from memory.deliveries.fates import Fate
from memory.explain import explain_agent, explain_memory, prompt_reasons
from memory.models import MemoryRecord
from tests.factories import (
    PLAIN_CONFIG,
    SOLO_CONFIG,
    VAULT_CONFIG,
    composed,
    create_agent,
    every_drop,
    memory_config,
    preference,
    promotion_of,
    remember,
)

pytestmark = pytest.mark.django_db


def explained(agent: Agent, memory_id: str) -> Explanation:
    return explain_memory(agent, composed(agent), memory_id)


# --- in the prompt -----------------------------------------------------------------------


def test_a_composed_memory_is_in_the_prompt_with_its_section_and_key(wren: Agent) -> None:
    memory_id = remember(wren, "profile", "Mira", label="Name")
    found = explained(wren, memory_id)
    assert found.in_prompt
    assert found.reason == ""
    assert found.sentence == "It fills “name” in About the User."
    assert found.place == "About the User → name"


# --- the reasons, one by one -------------------------------------------------------------


def test_authored_wins_names_the_authored_key_and_value(wren: Agent) -> None:
    memory_id = remember(wren, "profile", "UTC", label="timezone")
    found = explained(wren, memory_id)
    assert found.reason == "authored-wins"
    assert found.sentence == (
        "The authored entry “timezone” in About the User holds the same key and wins: "
        "“Europe/Warsaw”."
    )
    assert found.facts.authored_value == "Europe/Warsaw"


def test_superseded_links_to_the_memory_that_replaced_it(wren: Agent) -> None:
    older = remember(wren, "profile", "Mira", label="name")
    newer = remember(wren, "profile", "Mira Kowalska", label="name", supersedes=older)
    found = explained(wren, older)
    assert found.reason == "superseded"
    assert found.facts.other_id == newer
    assert found.links == (Link("memory", newer),)
    assert found.sentence == "A newer memory replaced it: “Mira Kowalska”."


def test_over_budget_says_what_its_line_needs_and_what_is_left(wren: Agent, settings: Any) -> None:
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 40
    remember(wren, "profile", "Mira", label="name")
    long = remember(wren, "profile", "A very long biography " * 5, label="bio")
    found = explained(wren, long)
    assert found.reason == "over-budget"
    # Measured here from the rendered line, not with the overlay's own function.
    needed = len("- **bio**: " + ("A very long biography " * 5) + "\n")
    left = 40 - len("- **name**: Mira\n")
    assert (found.facts.needed, found.facts.left, found.facts.budget) == (needed, left, 40)
    assert found.sentence == (
        f"Over the memory budget: its line needs {needed} chars and {left} of 40 are left."
    )


def test_over_budget_numbers_use_thousands_separators(wren: Agent, settings: Any) -> None:
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 1200
    remember(wren, "profile", "x" * 1100, label="a")
    big = remember(wren, "profile", "y" * 1500, label="b")
    found = explained(wren, big)
    used = len("a") + 1100 + ENTRY_LINE_OVERHEAD
    needed = len("b") + 1500 + ENTRY_LINE_OVERHEAD
    assert found.sentence == (
        f"Over the memory budget: its line needs {needed:,} chars and "
        f"{1200 - used:,} of 1,200 are left."
    )
    assert "needs 1,510 chars" in found.sentence


def test_undeclared_section_names_the_missing_section(team: Team) -> None:
    solo = create_agent(team, "solo", SOLO_CONFIG)
    memory_id = remember(solo, "preference", "Dark theme.", label="theme")
    found = explained(solo, memory_id)
    assert found.reason == "undeclared-section"
    assert found.facts.section == "user_preferences"
    assert "user_preferences" in found.sentence
    assert "“theme”" in found.sentence


def test_locked_and_earned_sections_name_their_title_and_tier(team: Team) -> None:
    vault = create_agent(team, "vault", VAULT_CONFIG)
    locked = remember(vault, "profile", "Mira", label="name")
    earned = remember(vault, "preference", "Jazz.", label="music")
    found = explained(vault, locked)
    assert found.reason == "locked-section"
    assert found.facts.tier == "locked"
    assert found.sentence == "About the User is a locked section: memory never fills it."
    found = explained(vault, earned)
    assert found.reason == "earning"
    assert found.facts.tier == "earned"
    assert found.sentence.startswith("User Preferences is earned")
    assert "seen in 1 of 3 sessions" in found.sentence


def test_a_section_locked_after_approval_says_so_with_today_s_tier(team: Team) -> None:
    agent = create_agent(team, "wren", memory_config())
    memory_id = remember(agent, "profile", "Mira", label="name")
    config = memory_config()
    config["background"]["sections"][0]["promotion"] = "locked"
    agent = create_agent(team, "wren", config)
    found = explained(agent, memory_id)
    assert found.reason == "locked-section"
    assert found.facts.tier == "locked"
    assert promotion_of(memory_id).tier == "auto"  # the row keeps what it was saved with


def test_spec_declined_names_the_spec_and_the_kind(wren: Agent, team: Team) -> None:
    memory_id = remember(wren, "fact", "Visited Kraków once.")
    found = explained(wren, memory_id)
    assert found.reason == "spec-declined"
    assert found.sentence.startswith(
        "The routing spec user-background v1 does not place memories of kind “fact”"
    )
    plain = create_agent(team, "plain", PLAIN_CONFIG)
    other = remember(plain, "profile", "Mira", label="name")
    assert explained(plain, other).sentence.startswith("The agent had no routing spec")


def test_awaiting_approval_names_the_section_since_when_and_the_queue(wren: Agent) -> None:
    memory_id = preference(wren, "Dark theme.", label="theme")
    found = explained(wren, memory_id)
    assert found.reason == "awaiting-approval"
    since = utc(promotion_of(memory_id).promoted_at)
    assert found.sentence.startswith(
        f"Waiting for approval since {since}: User Preferences is a guarded section"
    )
    assert found.links == (Link("approvals", "wren"),)


def test_rejected_names_who_when_and_why(wren: Agent, member: User) -> None:
    memory_id = preference(wren, "Daily jokes.", label="jokes")
    decide(memory_id, False, Actor.for_user(member), "not useful")
    found = explained(wren, memory_id)
    decided_at = promotion_of(memory_id).decided_at
    assert decided_at is not None
    assert found.reason == "rejected"
    assert found.sentence == f"Rejected by mira on {utc(decided_at)}: “not useful”."


def test_revoked_is_its_own_state_with_who_when_and_why(wren: Agent, rhea: User) -> None:
    memory_id = preference(wren, "Tea, never coffee.", label="drink")
    decide(memory_id, True, Actor.for_user(rhea))
    assert explained(wren, memory_id).in_prompt
    revoke(memory_id, Actor.for_user(rhea), "wrong person")
    found = explained(wren, memory_id)
    decided_at = promotion_of(memory_id).decided_at
    assert decided_at is not None
    assert found.reason == "revoked"
    assert found.sentence == (
        f"Revoked by rhea on {utc(decided_at)}, after it was approved: “wrong person”."
    )
    assert "reject" not in found.sentence.lower()


@dataclass(frozen=True)
class UserBackgroundPlus:
    """Routes as ``user-background`` does, under a key of its own; each subclass adds one
    hook."""

    key: str
    version: str

    def route(self, record: Any, ctx: Any) -> Any:
        return USER_BACKGROUND.route(record, ctx)

    def key_source(self, record: Any) -> Any:
        return USER_BACKGROUND.key_source(record)


# A spec whose finalize step leaves out the memories saying "skip": the fold reports them
# as reconciled.
@dataclass(frozen=True)
class SkippingSpec(UserBackgroundPlus):
    key: str = "skipping"
    version: str = "2"

    def finalize(self, records: tuple[PlacedRecord, ...], report: Any) -> OverlayPlan:
        return OverlayPlan(drop=frozenset(r.id for r in records if "skip" in r.content))


SKIPPING = SkippingSpec()


def test_a_memory_the_spec_leaves_out_is_reconciled_in_words(team: Team, settings: Any) -> None:
    settings.MEMORY_ROUTING_SPECS = [
        "memory.core.presets.USER_BACKGROUND",
        "tests.memory.test_explain.SKIPPING",
    ]
    agent = create_agent(team, "wren", memory_config(routing_spec="skipping"))
    kept = remember(agent, "profile", "Mira", label="name")
    skipped = remember(agent, "profile", "Lives in Gdansk (skip)", label="city")
    assert explained(agent, kept).in_prompt
    found = explained(agent, skipped)
    assert found.reason == "reconciled"
    assert found.sentence == (
        "The routing spec left it out when composing (“city” in About the User)."
    )


# --- every memory, and what it costs -------------------------------------------------------


def test_every_memory_is_explained_exactly_as_the_report_says(
    wren: Agent, member: User, settings: Any
) -> None:
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 120
    every_drop(wren, member, 2)
    remember(wren, "profile", "UTC", label="timezone")
    composition = composed(wren)
    found = explain_agent(wren, composition)
    ids = set(MemoryRecord.objects.filter(agent=wren).values_list("pk", flat=True))
    assert set(found) == ids
    drops = {d.memory_id: d.reason for d in composition.report.drops}
    for memory_id, explanation in found.items():
        assert explanation.reason == drops.get(memory_id, ""), memory_id
        assert explanation.sentence, memory_id
    reasons = {e.reason for e in found.values()}
    assert {
        "",
        "awaiting-approval",
        "rejected",
        "revoked",
        "spec-declined",
        "superseded",
        "authored-wins",
        "over-budget",
    } <= reasons


def test_an_id_without_a_promotion_row_is_not_routed(wren: Agent) -> None:
    found = explain_agent(wren, composed(wren), ["nosuchmemory"])
    assert found["nosuchmemory"].reason == UNROUTED


def test_explaining_costs_the_same_queries_for_few_and_many_drops(
    wren: Agent, member: User, settings: Any, django_assert_max_num_queries: Any
) -> None:
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 120
    every_drop(wren, member, 1)
    composition = composed(wren)
    # The fifth reads who reopened the memories waiting for approval.
    with django_assert_max_num_queries(5) as few:
        explain_agent(wren, composition)
    every_drop(wren, member, 30, start=1)
    composition = composed(wren)
    assert len(composition.report.drops) > 200
    with django_assert_max_num_queries(len(few)):
        found = explain_agent(wren, composition)
    assert len(found) == MemoryRecord.objects.filter(agent=wren).count()


# --- the memories list's states --------------------------------------------------------------


def test_prompt_reasons_agree_with_each_agent_s_composition(
    team: Team, wren: Agent, member: User, settings: Any
) -> None:
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 120
    every_drop(wren, member, 2)
    other = create_agent(team, "solo", SOLO_CONFIG)
    remember(other, "profile", "Sol", label="name")
    remember(other, "preference", "Dark.", label="theme")
    records = list(MemoryRecord.objects.select_related("promotion").order_by("pk"))
    agents = list(Agent.objects.prefetch_related("sections"))
    found = prompt_reasons(records, agents)
    for agent in (wren, other):
        composition = composed(agent)
        drops = {d.memory_id: d.reason for d in composition.report.drops}
        for record in records:
            if record.agent_id == agent.pk:
                assert found[record.pk] == drops.get(record.pk), record.pk


def test_prompt_reasons_cost_the_same_queries_for_few_and_many_rows(
    team: Team, wren: Agent, member: User, django_assert_max_num_queries: Any
) -> None:
    every_drop(wren, member, 1)
    agents = list(Agent.objects.prefetch_related("sections"))
    few = list(MemoryRecord.objects.select_related("promotion"))
    with django_assert_max_num_queries(3) as captured:
        prompt_reasons(few, agents)
    for i in range(3):
        extra = create_agent(team, f"extra-{i}", memory_config(name=f"Extra {i}"))
        every_drop(extra, member, 3)
    agents = list(Agent.objects.prefetch_related("sections"))
    many = list(MemoryRecord.objects.select_related("promotion"))
    assert len(many) > 4 * len(few)
    with django_assert_max_num_queries(len(captured)):
        prompt_reasons(many, agents)


def test_a_delivered_memory_waiting_again_reads_as_waiting_for_approval() -> None:
    assert Fate("pending").words == "waiting for approval"
    assert Fate("in-prompt").words == "still in the prompt"


# A spec that renders each line itself: the budget counts its rendering.
@dataclass(frozen=True)
class TaggingSpec(UserBackgroundPlus):
    key: str = "tagging"
    version: str = "1"

    def render_entry(self, placed: PlacedRecord) -> str:
        return f"[{placed.kind}] {placed.content}"


TAGGING = TaggingSpec()


def test_over_budget_counts_the_line_as_the_spec_renders_it(team: Team, settings: Any) -> None:
    settings.MEMORY_ROUTING_SPECS = [
        "memory.core.presets.USER_BACKGROUND",
        "tests.memory.test_explain.TAGGING",
    ]
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 40
    agent = create_agent(team, "wren", memory_config(routing_spec="tagging"))
    over = remember(agent, "profile", "A very long biography " * 5, label="bio")
    remember(agent, "profile", "Mira", label="name")
    found = explained(agent, over)
    assert found.reason == "over-budget"
    line = "- **bio**: [profile] " + "A very long biography " * 5 + "\n"
    assert found.facts.needed == len(line)
    assert found.facts.left == 40 - len("- **name**: [profile] Mira\n")
