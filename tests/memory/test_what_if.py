"""What-if (SPEC §18.2): a change's effect on the prompt now and replayed over the last
deliveries, refused as making it would be refused, and never writing anything."""

from __future__ import annotations

import copy
import itertools
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.utils import timezone
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lens.actors import Actor
from lens.agents import config_of, get_agent
from lens.core.config import AgentConfig
from lens.core.errors import DomainError, InvalidInput
from lens.models import Agent, Team
from memory.as_of import compose_as_of
from memory.composition import compose
from memory.configuring import store_config
from memory.core.deliveries import sha256_hex
from memory.core.records import MemoryInput
from memory.core.what_if import (
    Change,
    ConfigChange,
    DecisionChange,
    OrderChange,
    Replay,
    SpecChange,
    effect_phrases,
)
from memory.decisions import decide, reopen, revoke
from memory.deliveries.ledger import deliver
from memory.erasure import erase_memory
from memory.migration import apply_migration, migration_plan
from memory.models import Delivery, Promotion, PromotionStatus
from memory.registry import UnknownRoutingSpec
from memory.saving import Saved, save_memory
from memory.validity import change_validity
from memory.what_if import config_change, decision_change, what_if
from tests.api_calls import db_snapshot
from tests.factories import create_agent, memory_config, remember

pytestmark = pytest.mark.django_db

RUNTIME = Actor(label="runtime")


def fresh(agent: Agent) -> Agent:
    return get_agent(agent.team, agent.slug)


def delivered(agent: Agent, times: int = 1) -> None:
    for _ in range(times):
        deliver(fresh(agent), RUNTIME)


@pytest.fixture
def decider(member: User) -> Actor:
    return Actor.for_user(member)


@pytest.fixture
def wren_story(team: Team, decider: Actor) -> dict[str, Any]:
    """Wren delivered at several states: saves, decisions and a revision between."""
    agent = create_agent(team, "wren", memory_config())
    ids: dict[str, str] = {}
    ids["name"] = remember(agent, "profile", "Mira", label="name")
    delivered(agent)
    ids["pending"] = remember(agent, "preference", "Prefers a dark theme.", label="theme")
    ids["drink"] = remember(agent, "preference", "Tea, never coffee.", label="drink")
    delivered(agent)
    decide(ids["drink"], True, decider)
    ids["jokes"] = remember(agent, "preference", "Wants daily jokes.", label="jokes")
    decide(ids["jokes"], False, decider, "no")
    delivered(agent)
    changed = memory_config(persona="You help, briefly.")
    store_config(team, "wren", AgentConfig.model_validate(changed))
    delivered(agent, 2)
    ids["city"] = remember(agent, "profile", "Lives in Gdańsk.", label="city")
    delivered(agent)
    return {"agent": fresh(agent), "ids": ids, "config": changed}


def test_the_same_config_order_or_spec_changes_nothing_now_or_in_replay(
    wren_story: dict[str, Any],
) -> None:
    agent = wren_story["agent"]
    config = AgentConfig.model_validate(wren_story["config"])
    unchanged: list[Change] = [
        ConfigChange(config),
        OrderChange(tuple(s.id for s in config.background.sections)),
        SpecChange("user-background"),
    ]
    for change in unchanged:
        found = what_if(agent, change, 50)
        assert found.now.after == found.now.before
        assert found.now.diff == ""
        assert found.now.memories == ()
        # Replayed with the declarations each was delivered with: every prompt is as
        # delivered, whatever the change (order and spec: the same as then).
        assert found.replay.deliveries == 6
        if not isinstance(change, ConfigChange):
            assert found.replay.changed == 0
            assert found.replay.tokens_delta_mean == 0
            assert found.replay.prefix_tokens_mean_before == found.replay.prefix_tokens_mean_after


def test_a_config_replays_over_every_delivery(wren_story: dict[str, Any]) -> None:
    agent = wren_story["agent"]
    config = AgentConfig.model_validate(wren_story["config"])
    found = what_if(agent, ConfigChange(config), 50)
    # The three delivered before the persona changed compose with the new one.
    assert found.replay.changed == 3
    assert found.replay.tokens_delta_mean is not None
    assert found.replay.tokens_delta_mean != 0


def test_the_live_prompt_is_the_before_side(wren_story: dict[str, Any]) -> None:
    agent = wren_story["agent"]
    live = compose(agent)
    found = what_if(agent, SpecChange("user-background"), 1)
    assert found.now.before.prompt_sha256 == sha256_hex(live.prompt.text)
    assert found.now.before.tokens == live.tokens.total
    assert found.replay.deliveries == 1
    assert found.replay.prefix_tokens_mean_before is None


def test_approving_a_pending_memory_composes_it_and_changes_the_prompts_after_its_save(
    wren_story: dict[str, Any],
) -> None:
    agent, ids = wren_story["agent"], wren_story["ids"]
    found = what_if(agent, DecisionChange(ids["pending"], "approve"), 50)
    assert [(f.memory_id, f.before, f.after) for f in found.now.memories] == [
        (ids["pending"], "awaiting-approval", "composed")
    ]
    assert found.now.after.tokens > found.now.before.tokens
    assert "+- **theme**: Prefers a dark theme." in found.now.diff
    # Saved after the first delivery: the other five would have held it.
    assert found.replay.changed == 5
    assert found.replay.tokens_delta_mean is not None
    assert found.replay.tokens_delta_mean > 0
    # The same without the diff, for pages that show only the figures.
    figures = what_if(agent, DecisionChange(ids["pending"], "approve"), 50, diff=False)
    assert figures.now.diff == ""
    assert figures.now.after == found.now.after
    assert figures.replay == found.replay


def test_rejecting_changes_a_fate_but_no_prompt(wren_story: dict[str, Any]) -> None:
    agent, ids = wren_story["agent"], wren_story["ids"]
    found = what_if(agent, DecisionChange(ids["pending"], "reject"), 50)
    assert found.now.after == found.now.before
    assert [(f.before, f.after) for f in found.now.memories] == [("awaiting-approval", "rejected")]
    assert found.replay.changed == 0


def test_revoking_takes_a_memory_out_from_its_approval_on(wren_story: dict[str, Any]) -> None:
    agent, ids = wren_story["agent"], wren_story["ids"]
    found = what_if(agent, DecisionChange(ids["drink"], "revoke"), 50)
    assert [(f.before, f.after) for f in found.now.memories] == [("composed", "revoked")]
    assert found.now.after.tokens < found.now.before.tokens
    # Approved after the second delivery: the four since held it.
    assert found.replay.changed == 4


def test_reopening_a_rejected_memory_puts_it_back_in_the_queue(
    wren_story: dict[str, Any],
) -> None:
    agent, ids = wren_story["agent"], wren_story["ids"]
    found = what_if(agent, DecisionChange(ids["jokes"], "reopen"), 50)
    assert [(f.before, f.after) for f in found.now.memories] == [("rejected", "awaiting-approval")]
    assert found.replay.changed == 0


def test_another_order_moves_text_but_no_memory(team: Team) -> None:
    agent = create_agent(team, "wren", memory_config())
    remember(agent, "profile", "Mira", label="name")
    delivered(agent, 3)
    found = what_if(fresh(agent), OrderChange(("user_preferences", "user_profile")), 50)
    # The preferences section has no entries: nothing renders differently.
    assert found.now.after == found.now.before
    pref = remember(agent, "preference", "Tea.", label="drink")
    decide(pref, True, Actor(label="alice"))
    delivered(agent, 2)
    found = what_if(fresh(agent), OrderChange(("user_preferences", "user_profile")), 50)
    assert found.now.after.prompt_sha256 != found.now.before.prompt_sha256
    assert found.now.memories == ()
    assert found.replay.changed == 2
    assert found.replay.tokens_delta_mean == 0


def test_no_spec_changes_how_composed_memories_render_never_their_promotion(
    wren_story: dict[str, Any],
) -> None:
    agent = wren_story["agent"]
    found = what_if(agent, SpecChange(None), 50)
    assert found.replay.deliveries == 6


@pytest.mark.parametrize(
    ("memory", "decision", "code"),
    [
        ("drink", "approve", "not_pending"),
        ("jokes", "reject", "not_pending"),
        ("pending", "revoke", "not_approved"),
        ("pending", "reopen", "not_reopenable"),
        ("drink", "reopen", "not_reopenable"),
    ],
)
def test_a_decision_its_state_does_not_allow_is_refused_as_making_it_would_be(
    wren_story: dict[str, Any], memory: str, decision: str, code: str
) -> None:
    agent, ids = wren_story["agent"], wren_story["ids"]
    with pytest.raises(DomainError) as refused:
        what_if(agent, decision_change(ids[memory], decision), 50)
    assert refused.value.code == code


def test_reopening_where_another_memory_holds_the_address_is_refused(
    team: Team, decider: Actor
) -> None:
    agent = create_agent(team, "wren", memory_config())
    first = remember(agent, "preference", "Tea.", label="drink")
    decide(first, False, decider)
    holder = remember(agent, "preference", "Coffee.", label="drink")
    with pytest.raises(DomainError) as refused:
        what_if(fresh(agent), DecisionChange(first, "reopen"), 50)
    assert refused.value.code == "address_taken"
    assert refused.value.details["holder"] == holder
    # The real operation refuses it as well.
    assert type(reopen(first, decider)).__name__ == "AddressTaken"


def test_an_unknown_memory_or_another_agents_is_not_found(
    wren_story: dict[str, Any], team: Team
) -> None:
    agent, ids = wren_story["agent"], wren_story["ids"]
    for memory_id in ("0000000000000000zz", ids["name"]):
        target = agent if memory_id != ids["name"] else create_agent(team, "other")
        with pytest.raises(DomainError) as refused:
            what_if(fresh(target), DecisionChange(memory_id, "approve"), 50)
        assert refused.value.code == "promotion_not_found"
    with pytest.raises(InvalidInput):
        decision_change(ids["name"], "undo")


def test_an_order_that_is_not_a_permutation_is_refused(wren_story: dict[str, Any]) -> None:
    agent = wren_story["agent"]
    for order in (
        ("user_profile",),
        ("user_profile", "user_profile", "user_preferences"),
        ("user_profile", "user_preferences", "nope"),
    ):
        with pytest.raises(InvalidInput) as refused:
            what_if(agent, OrderChange(order), 50)
        assert refused.value.code == "invalid_request"
        assert "order" in refused.value.message


def test_unknown_spec_and_invalid_config_are_refused_as_storing_them_would_be(
    wren_story: dict[str, Any],
) -> None:
    agent = wren_story["agent"]
    with pytest.raises(UnknownRoutingSpec):
        what_if(agent, SpecChange("nope"), 50)
    with pytest.raises(UnknownRoutingSpec):
        config_change({**wren_story["config"], "routing_spec": "nope"})
    twice = copy.deepcopy(wren_story["config"])
    twice["background"]["sections"].append(twice["background"]["sections"][0])
    with pytest.raises(InvalidInput) as refused:
        config_change(twice)
    assert refused.value.code == "invalid_background"
    # A config as GET answers it (with its revision) is taken.
    assert config_change({**wren_story["config"], "revision": 3}).config.name == "Wren"


@pytest.mark.parametrize("last", [0, 201, -1])
def test_last_is_between_1_and_200(wren_story: dict[str, Any], last: int) -> None:
    with pytest.raises(InvalidInput):
        what_if(wren_story["agent"], SpecChange(None), last)


def test_a_memory_saved_after_a_delivery_stays_out_of_its_replay(
    team: Team, decider: Actor
) -> None:
    agent = create_agent(team, "wren", memory_config())
    delivered(agent, 3)
    pending = remember(agent, "preference", "Prefers tea.", label="drink")
    found = what_if(fresh(agent), DecisionChange(pending, "approve"), 50)
    assert found.replay.deliveries == 3
    assert found.replay.changed == 0
    delivered(agent, 2)
    found = what_if(fresh(agent), DecisionChange(pending, "approve"), 50)
    assert found.replay.changed == 2
    # Only the last ones, when asked for fewer.
    assert what_if(fresh(agent), DecisionChange(pending, "approve"), 2).replay.deliveries == 2


def test_prefix_figures_compare_consecutive_prompts(team: Team, decider: Actor) -> None:
    agent = create_agent(team, "wren", memory_config())
    remember(agent, "profile", "Mira", label="name")
    delivered(agent)
    remember(agent, "profile", "Gdańsk", label="city")
    delivered(agent)
    found = what_if(fresh(agent), SpecChange("user-background"), 50)
    recorded = list(
        Delivery.objects.filter(agent=agent)
        .order_by("delivered_at")
        .values_list("cache_prefix_tokens", flat=True)
    )
    assert found.replay.prefix_tokens_mean_before == recorded[1]
    assert found.replay.prefix_tokens_mean_after == recorded[1]


# --- it writes nothing ---------------------------------------------------------------


def _every_change(ids: dict[str, str], config: dict[str, Any]) -> list[Change]:
    return [
        config_change(memory_config(persona="Another persona.")),
        ConfigChange(AgentConfig.model_validate(config)),
        DecisionChange(ids["pending"], "approve"),
        DecisionChange(ids["pending"], "reject"),
        DecisionChange(ids["drink"], "revoke"),
        DecisionChange(ids["jokes"], "reopen"),
        OrderChange(("user_preferences", "user_profile")),
        SpecChange(None),
        SpecChange("project"),
    ]


def test_no_change_writes_a_row_in_any_table(wren_story: dict[str, Any]) -> None:
    agent = wren_story["agent"]
    before = db_snapshot()
    for change in _every_change(wren_story["ids"], wren_story["config"]):
        what_if(fresh(agent), change, 50)
        assert db_snapshot() == before, change


@contextmanager
def refusing_writes() -> Iterator[list[str]]:
    """Every statement that would write fails, and is listed."""
    seen: list[str] = []

    def refuse(execute: Callable[..., Any], sql: str, *args: Any) -> Any:
        head = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else ""
        if head in {"INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP", "ALTER"}:
            seen.append(sql)
            raise AssertionError(f"what-if wrote: {sql}")
        return execute(sql, *args)

    with connection.execute_wrapper(refuse):
        yield seen


def test_it_runs_with_every_write_refused(wren_story: dict[str, Any]) -> None:
    agent = wren_story["agent"]
    changes = _every_change(wren_story["ids"], wren_story["config"])
    with refusing_writes() as seen:
        for change in changes:
            what_if(fresh(agent), change, 50)
    assert seen == []


def test_a_refused_change_writes_nothing_either(wren_story: dict[str, Any]) -> None:
    agent, ids = wren_story["agent"], wren_story["ids"]
    before = db_snapshot()
    with refusing_writes():
        for change in (DecisionChange(ids["drink"], "approve"), SpecChange("nope")):
            with pytest.raises(DomainError):
                what_if(agent, change, 50)
    assert db_snapshot() == before


def test_the_replay_reads_a_fixed_number_of_queries(
    wren_story: dict[str, Any], django_assert_max_num_queries: Any, decider: Actor
) -> None:
    agent, ids = wren_story["agent"], wren_story["ids"]
    for n in range(10):
        remember(agent, "profile", f"Fact {n}", label=f"f{n}")
        delivered(agent)
    revoke(ids["drink"], decider)
    agent = fresh(agent)
    with django_assert_max_num_queries(14):
        what_if(agent, DecisionChange(ids["pending"], "approve"), 200)


# --- empty changes over random histories ----------------------------------------------

_agents = itertools.count()
OPS = (
    "deliver",
    "deliver",
    "fact",
    "preference",
    "expiring",
    "sight",
    "approve",
    "reject",
    "revoke",
    "reopen",
    "revise",
    "migrate",
    "window",
    "wait",
    "erase",
    "deliver",
)
# The tiers a revision gives the preferences section (None: not declared, so the
# memories placed there decline, and a migration moves them out and back in).
TIERS = (None, "guarded", "auto", "earned")


class _Gate:
    """The moment every window set to close soon closes at, and a delivery is never
    made close to it: a delivery composes a moment before its ``delivered_at``, so a
    window closing in between would be open in its prompt and closed as of its time
    (the limit ``memory.as_of`` states)."""

    MARGIN = timedelta(milliseconds=250)

    def __init__(self) -> None:
        self.at: datetime | None = None

    def soon(self) -> datetime:
        if self.at is None or self.at - timezone.now() < self.MARGIN:
            self.passed()
            self.at = timezone.now() + 2 * self.MARGIN
        return self.at

    def passed(self) -> None:
        """Wait until the windows have closed."""
        if self.at is not None:
            time.sleep(max(0.0, (self.at - timezone.now()).total_seconds()) + 0.01)
            self.at = None

    def clear(self) -> None:
        if self.at is not None and self.at - timezone.now() < self.MARGIN:
            self.passed()


def _random_history(team: Team, steps: list[tuple[str, int]]) -> tuple[Agent, bool]:
    """The agent after ``steps``, and whether a window closed while a delivery was being
    made (a machine slowed down past the gate's margin): the limit ``memory.as_of``
    states, where no replay can match the delivery."""
    slug = f"w{next(_agents)}"
    create_agent(team, slug, memory_config())
    # Delivered first: what a first delivery loads once takes longer than a margin.
    deliver(get_agent(team, slug), RUNTIME)
    reviewer = Actor(label="alice")
    saved: list[str] = []
    gate = _Gate()
    straddled = False

    def pick(status: str | None, n: int) -> str | None:
        rows = Promotion.objects.filter(record_id__in=saved)
        rows = rows.exclude(status=PromotionStatus.ERASED) if status is None else rows
        found = list(
            (rows if status is None else rows.filter(status=status))
            .order_by("record_id")
            .values_list("record_id", flat=True)
        )
        return found[n % len(found)] if found else None

    def save(kind: str, content: str, label: str, **more: Any) -> None:
        result = save_memory(
            get_agent(team, slug),
            MemoryInput(kind=kind, content=content, label=label, **more),
            RUNTIME,
        )
        if isinstance(result, Saved):
            saved.append(result.id)

    for op, n in [*steps, ("deliver", 0)]:
        agent = get_agent(team, slug)
        if op in ("fact", "preference"):
            kind = "profile" if op == "fact" else "preference"
            save(kind, f"{op} {n}", f"{op[:4]}{n}-{len(saved)}")
        elif op == "expiring":
            save("profile", f"Away {n}", f"away{n}-{len(saved)}", valid_until=gate.soon())
        elif op == "sight":  # seen again in a session: a sighting in an earned section
            save("preference", "Likes jazz.", "music", session=f"s{n % 4}")
        elif op in ("approve", "reject") and (rid := pick(PromotionStatus.PENDING, n)):
            decide(rid, op == "approve", reviewer)
        elif op == "revoke" and (rid := pick(PromotionStatus.APPROVED, n)):
            revoke(rid, reviewer)
        elif op == "reopen" and (rid := pick(PromotionStatus.REJECTED, n)):
            reopen(rid, reviewer)
        elif op == "revise":
            changed = memory_config(TIERS[n % len(TIERS)], persona=f"You are Wren, take {n}.")
            store_config(team, slug, AgentConfig.model_validate(changed))
        elif op == "migrate" and (plan := migration_plan(agent)).moves:
            apply_migration(agent, plan.sha256, actor=reviewer, approve_guarded=n % 2 == 0)
        elif op == "window" and (rid := pick(None, n)):
            # A reviewer sets, moves or clears a window.
            until = (None, gate.soon(), timezone.now() + timedelta(days=n + 1))[n % 3]
            change_validity(rid, until, reviewer)
        elif op == "wait":
            gate.passed()
        elif op == "erase" and (rid := pick(None, n)):
            erase_memory(rid, reviewer, "Asked to forget it.")
        elif op == "deliver":
            gate.clear()
            started = timezone.now()
            deliver(agent, RUNTIME)
            straddled |= gate.at is not None and started <= gate.at <= timezone.now()
    return get_agent(team, slug), straddled


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 9)), min_size=1, max_size=24))
# A window closing between two deliveries, cleared by a reviewer afterwards.
@example([("fact", 0), ("expiring", 0), ("deliver", 0), ("wait", 0), ("deliver", 0), ("window", 3)])
# One moved later, after it had closed.
@example([("expiring", 0), ("deliver", 0), ("wait", 0), ("deliver", 0), ("window", 2)])
# A delivered memory erased.
@example([("fact", 1), ("deliver", 0), ("fact", 2), ("deliver", 0), ("erase", 0)])
# Preferences dropped, migrated out, declared again and migrated back.
@example(
    [
        ("preference", 1),
        ("approve", 0),
        ("deliver", 0),
        ("revise", 0),
        ("migrate", 0),
        ("deliver", 0),
        ("revise", 1),
        ("migrate", 0),
        ("deliver", 0),
    ]
)
# Sightings in three sessions earn a memory its place.
@example([("revise", 3), ("sight", 0), ("deliver", 0), ("sight", 1), ("sight", 2), ("deliver", 0)])
def test_an_empty_change_replays_every_delivery_as_delivered(
    team: Team, steps: list[tuple[str, int]]
) -> None:
    """Whatever happened between deliveries — saves, decisions, revisions, windows set,
    moved, cleared and closing, migrations, erasures, sightings earning a memory its
    place — an empty change reports nothing changed."""
    agent, straddled = _random_history(team, steps)
    if straddled:
        return  # nothing to compare this time (never on a machine that keeps up)
    config = config_of(agent)
    for change in (
        SpecChange(config.routing_spec),
        OrderChange(tuple(section.id for section in config.background.sections)),
    ):
        found = what_if(agent, change, 200)
        assert found.now.after == found.now.before
        assert found.now.memories == ()
        assert found.replay.deliveries == Delivery.objects.filter(agent=agent).count()
        assert found.replay.changed == 0
        assert found.replay.tokens_delta_mean == 0
        assert found.replay.prefix_tokens_mean_after == found.replay.prefix_tokens_mean_before


def test_without_deliveries_the_replay_is_empty(team: Team) -> None:
    agent = create_agent(team, "wren", memory_config())
    pending = remember(agent, "preference", "Tea.", label="drink")
    found = what_if(fresh(agent), DecisionChange(pending, "approve"), 50)
    assert found.replay == Replay(0, 0, None, None, None)
    assert effect_phrases(found, pending)[-1] == "no prompt delivered yet"


def test_the_replay_judges_each_window_as_it_stood_then_as_as_of_does(
    team: Team, decider: Actor
) -> None:
    """A memory expiring between two deliveries, its window later cleared by a reviewer:
    the replay of an empty change is every delivered prompt, as ``compose_as_of`` is."""
    agent = create_agent(team, "wren", memory_config())
    remember(agent, "profile", "Mira", label="name")
    closes = timezone.now() + timedelta(milliseconds=300)
    saved = save_memory(
        fresh(agent),
        MemoryInput(kind="profile", content="In Lisbon.", label="city", valid_until=closes),
        RUNTIME,
    )
    assert isinstance(saved, Saved)
    delivered(agent)
    time.sleep(max(0.0, (closes - timezone.now()).total_seconds()) + 0.05)
    delivered(agent)  # the window has closed: out of this prompt
    change_validity(saved.id, None, decider)  # then cleared: it composes again now
    rows = list(Delivery.objects.filter(agent=agent).order_by("delivered_at"))
    for row in rows:
        as_of = compose_as_of(fresh(agent), row.delivered_at)
        assert sha256_hex(as_of.prompt.text) == row.composition.prompt_sha256
    config = config_of(fresh(agent))
    for change in (
        SpecChange(config.routing_spec),
        OrderChange(tuple(section.id for section in config.background.sections)),
    ):
        found = what_if(fresh(agent), change, 50)
        assert found.replay.deliveries == 2
        assert found.replay.changed == 0
        assert found.replay.tokens_delta_mean == 0
        assert found.replay.prefix_tokens_mean_after == found.replay.prefix_tokens_mean_before


def test_a_memory_erased_since_its_delivery_is_not_the_changes_doing(
    team: Team, decider: Actor
) -> None:
    agent = create_agent(team, "wren", memory_config())
    name = remember(agent, "profile", "Mira", label="name")
    delivered(agent)
    pending = remember(agent, "preference", "Tea.", label="drink")
    delivered(agent)
    erase_memory(name, decider, "Asked to forget it.")
    delivered(agent)
    empty = what_if(fresh(agent), SpecChange("user-background"), 50)
    assert (empty.replay.changed, empty.replay.tokens_delta_mean) == (0, 0)
    assert empty.replay.prefix_tokens_mean_after == empty.replay.prefix_tokens_mean_before
    # A real change still counts where it would have made a difference.
    approving = what_if(fresh(agent), DecisionChange(pending, "approve"), 50)
    assert approving.replay.changed == 2
