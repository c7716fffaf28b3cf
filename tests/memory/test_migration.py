"""Migrating placements (``memory.migration``, SPEC §18.3) on the real database: the
plan, applying it whole or in part, what it keeps for history, and as of a moment
before it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from django.contrib.auth.models import User

from lens.actors import Actor
from lens.agents import config_of, get_agent
from lens.core.config import AgentConfig
from lens.models import Agent, AuditEvent, Team
from memory.as_of import compose_as_of, statuses_at
from memory.configuring import store_config
from memory.core.deliveries import sha256_hex
from memory.core.what_if import OrderChange
from memory.deliveries.ledger import composition_data, deliver
from memory.erasure import erase_memory
from memory.migration import (
    MigrationNeedsReviewer,
    MoveNeedsAnother,
    NotInPlan,
    PlanChanged,
    apply_migration,
    migration_plan,
    plan_change,
)
from memory.models import Delivery, EventKind, MemoryEvent, MigratedPromotion, Promotion
from memory.what_if import what_if
from tests.factories import (
    composed,
    create_agent,
    event_kinds,
    memory_config,
    migration_story,
    remember,
    v2_config,
)
from tests.samples import V2_SPECS

pytestmark = pytest.mark.django_db

TOKEN = Actor(label="token abc…")


def moves_of(agent: Agent) -> dict[str, tuple[Any, Any, str]]:
    return {
        m.memory_id: (m.as_json()["from"], m.as_json()["to"], m.outcome)
        for m in migration_plan(agent).moves
    }


def test_the_plan_lists_every_memory_the_new_spec_places_elsewhere(
    team: Team, settings: Any
) -> None:
    agent, ids = migration_story(team, settings)
    assert moves_of(agent) == {
        ids["name"]: (
            {"section": "user_profile", "key": "name"},
            {"section": "about_user", "key": "name"},
            "approved",
        ),
        ids["city"]: (
            {"section": "user_profile", "key": "city"},
            {"section": "about_user", "key": "city"},
            "approved",
        ),
        ids["theme"]: (
            {"section": "user_preferences", "key": "theme"},
            {"section": "preferences", "key": "theme"},
            "pending",
        ),
    }
    found = migration_plan(agent)
    assert (found.spec_key, found.spec_version) == ("user-background", "2")


def test_nothing_moves_until_asked(team: Team, settings: Any) -> None:
    agent, ids = migration_story(team, settings)
    assert Promotion.objects.get(pk=ids["name"]).section == "user_profile"
    assert MigratedPromotion.objects.count() == 0


def test_applying_moves_each_memory_and_keeps_the_old_row_as_migrated(
    team: Team, settings: Any
) -> None:
    agent, ids = migration_story(team, settings)
    before = Promotion.objects.get(pk=ids["name"])
    found = migration_plan(agent)
    applied = apply_migration(agent, found.sha256, actor=TOKEN)
    assert sorted(m.memory_id for m in applied.moved) == sorted(ids.values())
    live = Promotion.objects.get(pk=ids["name"])
    assert (live.section, live.key, live.status, live.spec_version, live.tier) == (
        "about_user",
        "name",
        "approved",
        "2",
        "auto",
    )
    old = MigratedPromotion.objects.get(record_id=ids["name"])
    assert (old.section, old.key, old.status, old.previous_status) == (
        "user_profile",
        "name",
        "migrated",
        "approved",
    )
    assert (old.spec_version, old.promoted_at, old.migrated_by) == (
        "1",
        before.promoted_at,
        TOKEN.label,
    )
    assert (old.new_section, old.new_key) == ("about_user", "name")
    # Through the API, a move into a guarded section waits for a person.
    assert Promotion.objects.get(pk=ids["theme"]).status == "pending"
    assert migration_plan(agent).moves == ()


def test_a_migration_writes_its_events_and_one_audit_event_per_move(
    team: Team, settings: Any
) -> None:
    agent, ids = migration_story(team, settings)
    apply_migration(agent, migration_plan(agent).sha256, actor=TOKEN)
    assert event_kinds(ids["name"])[-2:] == ["migrated", "promoted"]
    assert event_kinds(ids["theme"])[-2:] == ["migrated", "queued"]
    migrated = AuditEvent.objects.filter(action="memory.migrated").order_by("seq")
    assert migrated.count() == 3
    details = {event.object_id: event.details for event in migrated}
    name = details[ids["name"]]
    assert name["from"]["section"] == "user_profile"
    assert name["to"]["section"] == "about_user"
    assert len(name["to"]["key_sha256"]) == 64
    assert "name" not in str(name["to"])
    assert (name["spec_version"], name["outcome"]) == ("2", "approved")
    event = MemoryEvent.objects.get(record_id=ids["name"], kind=EventKind.MIGRATED)
    assert event.detail["to"] == {"section": "about_user", "key": "name"}


def test_the_composition_follows_the_new_placements(team: Team, settings: Any) -> None:
    agent, ids = migration_story(team, settings)
    apply_migration(agent, migration_plan(agent).sha256, actor=TOKEN)
    sections = {s.id: s for s in composed(agent).background.sections}
    assert [e.key for e in sections["about_user"].entries] == ["name", "city"]
    assert [e.key for e in sections["user_profile"].entries] == ["timezone"]


def test_as_of_a_moment_before_the_migration_shows_the_old_placement(
    team: Team, settings: Any
) -> None:
    agent, ids = migration_story(team, settings)
    agent = get_agent(team, "wren")
    then = composed(agent)
    moment = MemoryEvent.objects.order_by("-at").values_list("at", flat=True).first()
    assert moment is not None
    applied = apply_migration(agent, migration_plan(agent).sha256, actor=TOKEN)
    agent = get_agent(team, "wren")
    assert compose_as_of(agent, moment).prompt.text == then.prompt.text
    assert compose_as_of(agent, applied.at).prompt.text == composed(agent).prompt.text
    assert compose_as_of(agent, applied.at).prompt.text != then.prompt.text
    assert statuses_at(agent, moment)[ids["theme"]] == "pending"


def test_a_reviewer_applying_approves_the_guarded_moves(
    team: Team, settings: Any, reviewer: User
) -> None:
    agent, ids = migration_story(team, settings)
    found = migration_plan(agent)
    apply_migration(agent, found.sha256, actor=Actor.for_user(reviewer), approve_guarded=True)
    theme = Promotion.objects.get(pk=ids["theme"])
    assert (theme.status, theme.decided_by) == ("approved", reviewer)
    assert event_kinds(ids["theme"])[-3:] == ["migrated", "queued", "approved"]


def waiting_story(team: Team, settings: Any) -> tuple[Agent, dict[str, str]]:
    """Wren's memories saved while ``user_preferences`` was undeclared, then version 2
    with ``preferences`` earned: a fact and an order move into the earned section, an
    order into the auto ``about_user``."""
    agent = create_agent(team, "wren", memory_config(preferences=None))
    ids = {
        "fact": remember(agent, "preference", "Dark theme", label="theme"),
        "earned_order": remember(agent, "preference", "Never mention the weather", label="w"),
        "auto_order": remember(agent, "profile", "Always answer in French", label="lang"),
    }
    settings.MEMORY_ROUTING_SPECS = V2_SPECS
    store_config(team, "wren", AgentConfig.model_validate(v2_config(preferences="earned")))
    return get_agent(team, "wren"), ids


def test_moves_that_wait_say_why_in_the_plan(team: Team, settings: Any) -> None:
    agent, ids = waiting_story(team, settings)
    found = migration_plan(agent)
    seen = {m.memory_id: (m.tier, m.outcome, m.reason, m.instruction) for m in found.moves}
    assert seen == {
        ids["fact"]: ("earned", "pending", "earning", False),
        ids["earned_order"]: ("earned", "pending", "instruction-shaped", True),
        ids["auto_order"]: ("auto", "pending", "instruction-shaped", True),
    }


def test_a_reviewers_apply_approves_what_waits_for_a_person_and_never_an_earned_move(
    team: Team, settings: Any, reviewer: User
) -> None:
    agent, ids = waiting_story(team, settings)
    found = migration_plan(agent)
    applied = apply_migration(
        agent, found.sha256, actor=Actor.for_user(reviewer), approve_guarded=True
    )
    assert applied.outcomes == {
        ids["fact"]: "pending",
        ids["earned_order"]: "pending",
        ids["auto_order"]: "approved",
    }
    rows = {p.pk: (p.status, p.reason, p.decided_by) for p in Promotion.objects.all()}
    assert rows[ids["fact"]] == ("pending", "earning", None)
    assert rows[ids["earned_order"]] == ("pending", "instruction-shaped", None)
    assert rows[ids["auto_order"]] == ("approved", "", reviewer)
    assert event_kinds(ids["auto_order"])[-3:] == ["migrated", "queued", "approved"]
    assert migration_plan(agent).moves == ()


def test_through_a_token_every_waiting_move_stays_pending(team: Team, settings: Any) -> None:
    agent, ids = waiting_story(team, settings)
    applied = apply_migration(agent, migration_plan(agent).sha256, actor=TOKEN)
    assert set(applied.outcomes.values()) == {"pending"}
    reasons = dict(Promotion.objects.values_list("record_id", "reason"))
    assert reasons == {
        ids["fact"]: "earning",
        ids["earned_order"]: "instruction-shaped",
        ids["auto_order"]: "instruction-shaped",
    }


def test_approve_guarded_is_ignored_for_someone_who_is_no_reviewer(
    team: Team, settings: Any, member: User
) -> None:
    agent, ids = migration_story(team, settings)
    found = migration_plan(agent)
    apply_migration(agent, found.sha256, actor=Actor.for_user(member), approve_guarded=True)
    assert Promotion.objects.get(pk=ids["theme"]).status == "pending"


def test_a_stale_hash_moves_nothing(team: Team, settings: Any) -> None:
    agent, ids = migration_story(team, settings)
    found = migration_plan(agent)
    # Saved under v2, it takes about_user/name first: name's move is now a conflict.
    remember(agent, "profile", "Mira N.", label="name")
    with pytest.raises(PlanChanged) as caught:
        apply_migration(agent, found.sha256, actor=TOKEN)
    assert caught.value.details["plan_sha256"] == migration_plan(agent).sha256
    assert MigratedPromotion.objects.count() == 0
    assert Promotion.objects.get(pk=ids["name"]).section == "user_profile"
    assert not AuditEvent.objects.filter(action="memory.migrated").exists()


def test_a_selection_moves_only_those(team: Team, settings: Any) -> None:
    agent, ids = migration_story(team, settings)
    found = migration_plan(agent)
    applied = apply_migration(agent, found.sha256, [ids["city"]], actor=TOKEN)
    assert [m.memory_id for m in applied.moved] == [ids["city"]]
    assert Promotion.objects.get(pk=ids["name"]).section == "user_profile"
    assert sorted(moves_of(agent)) == sorted([ids["name"], ids["theme"]])


def test_ids_not_in_the_plan_are_refused(team: Team, settings: Any) -> None:
    agent, ids = migration_story(team, settings)
    found = migration_plan(agent)
    with pytest.raises(NotInPlan) as caught:
        apply_migration(agent, found.sha256, [ids["city"], "nope"], actor=TOKEN)
    assert caught.value.details["memory_ids"] == ["nope"]
    assert MigratedPromotion.objects.count() == 0


def test_a_move_into_a_held_address_is_a_conflict_and_never_moves(
    team: Team, settings: Any
) -> None:
    agent = create_agent(team, "wren", memory_config())
    first = remember(agent, "profile", "Mira", label="name")
    settings.MEMORY_ROUTING_SPECS = V2_SPECS
    store_config(team, "wren", AgentConfig.model_validate(v2_config()))
    second = remember(agent, "profile", "Mira Nowak", label="name")  # about_user/name
    found = migration_plan(agent)
    assert {m.memory_id: m.outcome for m in found.moves} == {first: "conflict"}
    with pytest.raises(PlanChanged):
        apply_migration(agent, "0" * 64, actor=TOKEN)
    applied = apply_migration(agent, found.sha256, [first], actor=TOKEN)
    assert applied.moved == []
    assert Promotion.objects.get(pk=second).section == "about_user"


def test_a_chosen_move_into_an_unchosen_movers_address_is_refused(
    team: Team, settings: Any
) -> None:
    from memory.core.migration import Address, Move, Plan
    from memory.migration import _chosen

    a = Address("x", "k")
    b = Address("y", "k")
    at = datetime(2026, 1, 1, tzinfo=UTC)
    moves = (
        Move("m1", at, a, b, "auto", "approved", "", "label", held=True),
        Move("m2", at, Address("w", "k"), a, "auto", "approved", "", "label", held=True),
    )
    with pytest.raises(MoveNeedsAnother) as caught:
        _chosen(Plan("s", "1", moves), ["m2"])
    assert caught.value.details["needs"] == [{"memory_id": "m2", "needs": "m1"}]
    assert [m.memory_id for m in _chosen(Plan("s", "1", moves), ["m1", "m2"])] == ["m1", "m2"]


def test_a_protected_agent_migrates_only_by_a_reviewer(
    team: Team, settings: Any, reviewer: User, viewer: User
) -> None:
    agent, ids = migration_story(team, settings)
    Agent.objects.filter(pk=agent.pk).update(protected=True)
    agent.refresh_from_db()
    found = migration_plan(agent)
    with pytest.raises(MigrationNeedsReviewer):
        apply_migration(agent, found.sha256, actor=TOKEN)
    with pytest.raises(MigrationNeedsReviewer):
        apply_migration(agent, found.sha256, actor=Actor.for_user(viewer))
    apply_migration(agent, found.sha256, actor=Actor.for_user(reviewer))
    assert Promotion.objects.get(pk=ids["name"]).section == "about_user"


def test_a_chain_of_addresses_moves_in_one_apply(team: Team, settings: Any) -> None:
    # v2 declines nothing here; the chain is about_user ← user_profile: both free after.
    agent, ids = migration_story(team, settings)
    found = migration_plan(agent)
    apply_migration(agent, found.sha256, actor=TOKEN)
    # And back: version 1 again moves them home, swapping nothing twice.
    settings.MEMORY_ROUTING_SPECS = ["memory.core.presets.USER_BACKGROUND"]
    back = migration_plan(agent)
    assert {m.outcome for m in back.moves} == {"approved", "pending"}
    apply_migration(agent, back.sha256, actor=TOKEN)
    assert Promotion.objects.get(pk=ids["name"]).section == "user_profile"
    assert MigratedPromotion.objects.filter(record_id=ids["name"]).count() == 2


def test_as_of_between_two_migrations_reads_the_row_in_force_then(
    team: Team, settings: Any
) -> None:
    agent, ids = migration_story(team, settings)
    first = apply_migration(agent, migration_plan(agent).sha256, actor=TOKEN)
    middle = composed(get_agent(team, "wren")).prompt.text
    settings.MEMORY_ROUTING_SPECS = ["memory.core.presets.USER_BACKGROUND"]
    apply_migration(agent, migration_plan(agent).sha256, actor=TOKEN)
    # as of the first migration's moment: v2's placement, though the spec is v1 again
    assert compose_as_of(get_agent(team, "wren"), first.at).prompt.text == middle


def test_a_declined_memory_whose_section_is_declared_later_is_promoted(
    team: Team, settings: Any
) -> None:
    agent = create_agent(team, "solo", memory_config(preferences=None))
    tea = remember(agent, "preference", "Tea, not coffee", label="drink")
    assert Promotion.objects.get(pk=tea).reason == "undeclared-section"
    store_config(team, "solo", AgentConfig.model_validate(memory_config(preferences="auto")))
    (move,) = migration_plan(agent).moves
    assert move.as_json()["from"] == move.as_json()["to"]
    assert move.outcome == "approved"
    apply_migration(agent, migration_plan(agent).sha256, actor=TOKEN)
    row = Promotion.objects.get(pk=tea)
    assert (row.status, row.reason, row.tier) == ("approved", "", "auto")


def test_erasure_reaches_the_migrated_rows_and_events(team: Team, settings: Any) -> None:
    agent, ids = migration_story(team, settings)
    apply_migration(agent, migration_plan(agent).sha256, actor=TOKEN)
    erase_memory(ids["city"], Actor(label="dpo"), "request")
    old = MigratedPromotion.objects.get(record_id=ids["city"])
    assert (old.key, old.placement_key, old.new_key) == (None, None, None)
    event = MemoryEvent.objects.get(record_id=ids["city"], kind=EventKind.MIGRATED)
    assert event.detail["from"] == {"section": "user_profile", "key": None}
    assert "city" not in str(event.detail)


def test_every_delivery_before_and_after_a_migration_is_its_composition_as_of_then(
    team: Team, settings: Any, reviewer: User
) -> None:
    agent, ids = migration_story(team, settings)
    runtime = Actor(label="runtime")
    deliver(get_agent(team, "wren"), runtime)
    found = migration_plan(agent)
    apply_migration(agent, found.sha256, [ids["name"]], actor=TOKEN)
    deliver(get_agent(team, "wren"), runtime)
    apply_migration(
        agent,
        migration_plan(agent).sha256,
        actor=Actor.for_user(reviewer),
        approve_guarded=True,
    )
    deliver(get_agent(team, "wren"), runtime)
    agent = get_agent(team, "wren")
    deliveries = Delivery.objects.filter(agent=agent).select_related("composition")
    assert len({d.composition.prompt_sha256 for d in deliveries}) == 3
    for delivery in deliveries:
        delivered = composition_data(delivery.composition)
        then = json.loads(compose_as_of(agent, delivery.delivered_at).model_dump_json())
        assert then["prompt"] == delivered["prompt"]
        assert then["report"] == delivered["report"]


def test_two_memories_swap_addresses_in_one_apply(team: Team, settings: Any) -> None:
    settings.MEMORY_ROUTING_SPECS = ["tests.samples.SWAP_V1"]
    sections = [{"id": s, "title": s.upper(), "promotion": "auto"} for s in ("x", "y")]
    config = {**memory_config(), "routing_spec": "swapper", "background": {"sections": sections}}
    agent = create_agent(team, "swap", config)
    a = remember(agent, "a", "First", label="k")
    b = remember(agent, "b", "Second", label="k")
    settings.MEMORY_ROUTING_SPECS = ["tests.samples.SWAP_V2"]
    found = migration_plan(agent)
    assert {m.memory_id: m.outcome for m in found.moves} == {a: "approved", b: "approved"}
    apply_migration(agent, found.sha256, actor=TOKEN)
    assert Promotion.objects.get(pk=a).section == "y"
    assert Promotion.objects.get(pk=b).section == "x"
    assert migration_plan(agent).moves == ()


def test_the_plan_is_one_query_and_an_apply_a_bounded_number(
    team: Team, settings: Any, django_assert_max_num_queries: Any
) -> None:
    agent, _ids = migration_story(team, settings)
    agent = get_agent(team, "wren")
    with django_assert_max_num_queries(2):  # the declarations, the rows
        found = migration_plan(agent)
    with django_assert_max_num_queries(16):
        apply_migration(agent, found.sha256, actor=TOKEN)


def test_the_lens_count_follows_every_change_it_depends_on(team: Team, settings: Any) -> None:
    from memory.migration import moving_count
    from memory.saving import routing_context

    agent, ids = migration_story(team, settings)
    assert moving_count(agent, routing_context(agent)) == 3
    apply_migration(agent, migration_plan(agent).sha256, [ids["city"]], actor=TOKEN)
    assert moving_count(agent, routing_context(agent)) == 2
    store_config(team, "wren", AgentConfig.model_validate(v2_config(about_user="locked")))
    agent = get_agent(team, "wren")
    # name and city both decline now (about_user is locked); theme still moves.
    assert moving_count(agent, routing_context(agent)) == 3
    settings.MEMORY_ROUTING_SPECS = ["memory.core.presets.USER_BACKGROUND"]
    assert moving_count(agent, routing_context(agent)) == len(
        [m for m in migration_plan(agent).moves if m.moves]
    )


def test_what_if_replays_deliveries_across_migrations_at_the_placements_they_had(
    team: Team, settings: Any, reviewer: User
) -> None:
    """An empty change (the same order) replays every delivery as it was delivered,
    before, between and after two migrations: the replay reads the placement each
    memory held then (SPEC §18.2 with §18.3), as ``as_of`` does."""
    agent, ids = migration_story(team, settings)
    runtime = Actor(label="runtime")
    deliver(get_agent(team, "wren"), runtime)
    apply_migration(agent, migration_plan(agent).sha256, [ids["name"]], actor=TOKEN)
    deliver(get_agent(team, "wren"), runtime)
    apply_migration(
        agent, migration_plan(agent).sha256, actor=Actor.for_user(reviewer), approve_guarded=True
    )
    deliver(get_agent(team, "wren"), runtime)
    agent = get_agent(team, "wren")
    order = tuple(section.id for section in config_of(agent).background.sections)
    found = what_if(agent, OrderChange(order), 50)
    assert (found.replay.deliveries, found.replay.changed) == (3, 0)
    assert found.replay.tokens_delta_mean == 0


@pytest.mark.parametrize("reviewing", [True, False])
def test_the_plans_what_if_is_the_prompt_applying_it_makes(
    team: Team, settings: Any, reviewer: User, reviewing: bool
) -> None:
    agent, _ids = migration_story(team, settings)
    deliver(get_agent(team, "wren"), Actor(label="runtime"))
    found = migration_plan(agent)
    assert found.moves
    predicted = what_if(get_agent(team, "wren"), plan_change(found, approve_guarded=reviewing), 50)
    actor = Actor.for_user(reviewer) if reviewing else TOKEN
    apply_migration(agent, found.sha256, actor=actor, approve_guarded=reviewing)
    after = composed(agent)
    assert predicted.now.after.prompt_sha256 == sha256_hex(after.prompt.text)
    assert predicted.now.after.tokens == after.tokens.total
    assert predicted.replay.deliveries == 1


def test_the_plans_what_if_replays_a_memory_it_places_from_nowhere(
    team: Team, reviewer: User
) -> None:
    """A preference saved while the agent named no routing spec (placed nowhere), then
    a spec named: applying the plan as a reviewer places it, and the replay composes it
    there in every delivery made since it was saved, as a move applies at every
    moment."""
    agent = create_agent(team, "wren", memory_config(routing_spec=None))
    theme = remember(agent, "preference", "Dark theme", label="theme")
    assert Promotion.objects.get(record_id=theme).section is None
    deliver(get_agent(team, "wren"), TOKEN)
    deliver(get_agent(team, "wren"), TOKEN)
    store_config(team, "wren", AgentConfig.model_validate(memory_config()))
    deliver(get_agent(team, "wren"), TOKEN)
    found = migration_plan(get_agent(team, "wren"))
    assert [move.memory_id for move in found.moves] == [theme]
    predicted = what_if(get_agent(team, "wren"), plan_change(found, approve_guarded=True), 50)
    assert [(f.memory_id, f.after) for f in predicted.now.memories] == [(theme, "composed")]
    assert predicted.replay.deliveries == 3
    assert predicted.replay.changed == 3
