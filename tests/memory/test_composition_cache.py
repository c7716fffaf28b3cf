"""Compose once per change (``memory.composed``): the kept composition is always the one
composing afresh gives, across processes, and every table a composition reads sets the
stamp whatever writes to it."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lens.actors import SYSTEM, Actor
from lens.agents import with_config
from lens.core.config import AgentConfig
from lens.models import Agent, Team
from memory import composed
from memory.composed import current, stamped_agent
from memory.composition import compose
from memory.configuring import store_config
from memory.core.records import MemoryInput
from memory.deliveries.ledger import deliver
from memory.erasure import erase_memory
from memory.migration import apply_migration, migration_plan
from memory.models import MemoryRecord
from memory.saving import save_memory
from memory.stamps import STAMPED_TABLES, stamp_of
from tests.factories import create_agent, grant, make_user, memory_config, migration_story, remember
from tests.memory.composition_steps import CONTENTS, REVIEWER, apply, check
from tests.web.mcp.harness import database_url, server_env

ROOT = Path(__file__).resolve().parents[2]
# Read with an agent, never composed from: the revision number says which revision the
# declarations read are (``lens.agents.with_config``), the stamp is the key itself.
NOT_INPUTS = {"lens_revision", "memory_compositionstamp"}


@pytest.fixture(autouse=True)
def empty_cache() -> Iterator[None]:
    composed.forget_all()
    yield
    composed.forget_all()


def tables_read(sql: str) -> set[str]:
    return set(re.findall(r'(?:FROM|JOIN)\s+"?(\w+)"?', sql))


def triggered_tables() -> set[str]:
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(
                "SELECT DISTINCT tbl_name FROM sqlite_master "
                "WHERE type = 'trigger' AND name LIKE 'composition_stamp_%'"
            )
        else:
            cursor.execute(
                "SELECT DISTINCT tgrelid::regclass::text FROM pg_trigger "
                "WHERE tgname LIKE 'composition_stamp_%'"
            )
        return {row[0] for row in cursor.fetchall()}


def test_every_table_a_composition_reads_sets_the_stamp(team: Team) -> None:
    """A new input of composing (a table it reads) without the triggers fails here, as
    does a trigger dropped from one that has them."""
    agent = create_agent(team, "wren", memory_config())
    remember(agent, "profile", "Lives in Lyon")
    with CaptureQueriesContext(connection) as queries:
        compose(with_config(Agent.objects.filter(pk=agent.pk)).get())
    read = set().union(*(tables_read(query["sql"]) for query in queries.captured_queries))
    assert read - NOT_INPUTS <= STAMPED_TABLES, read - NOT_INPUTS - STAMPED_TABLES
    assert {"memory_memoryrecord", "memory_promotion", "lens_authoredentry"} <= read
    assert triggered_tables() == STAMPED_TABLES


@pytest.fixture
def reviewer_actor(team: Team) -> Actor:
    return Actor.for_user(grant(make_user(REVIEWER, team)))


def kept(team: Team, slug: str) -> str:
    return current(stamped_agent(team, slug)).canonical_json()


@pytest.mark.django_db(transaction=True)
def test_each_kind_of_change_sets_the_stamp_and_the_composition_follows(
    team: Team, reviewer_actor: Actor
) -> None:
    agent = create_agent(team, "wren", memory_config())
    steps: list[list[Any]] = [
        ["save", "profile", 0, None],
        ["save", "preference", 1, None],
        ["decide", 0, True],
        ["save", "profile", 2, "city"],
        ["validity", 0, 5],
        ["validity", 0, None],
        ["revoke", 0],
        ["declare", 1, "Europe/Paris"],
        ["declare", 2, "Europe/Paris"],
        ["restore"],
        ["erase", 0],
    ]
    for step in steps:
        kept(team, "wren")  # kept before the change
        before = stamp_of(agent.pk)
        apply(team, "wren", step)
        assert stamp_of(agent.pk) != before, step
        check(team, "wren")  # and not served after it


@pytest.mark.django_db(transaction=True)
def test_a_migration_and_an_import_set_the_stamp(team: Team, settings: Any) -> None:
    agent, _ids = migration_story(team, settings)
    kept(team, "wren")
    before = stamp_of(agent.pk)
    plan = migration_plan(agent)
    assert plan.moves
    reviewer = Actor.for_user(grant(make_user("rhea", team)))
    apply_migration(agent, plan.sha256, actor=reviewer, approve_guarded=True)
    assert stamp_of(agent.pk) != before
    check(team, "wren")


@pytest.mark.django_db(transaction=True)
def test_a_raw_update_sets_the_stamp_too(team: Team) -> None:
    """No write path can forget: the database sets it, whatever wrote the row."""
    agent = create_agent(team, "wren", memory_config())
    record = remember(agent, "profile", "Lives in Lyon")
    text = kept(team, "wren")
    MemoryRecord.objects.filter(pk=record).update(content="Lives in Lille")
    assert kept(team, "wren") != text
    check(team, "wren")


@pytest.mark.django_db(transaction=True)
def test_a_hit_reads_the_stamp_alone(team: Team) -> None:
    create_agent(team, "wren", memory_config())
    kept(team, "wren")
    agent = stamped_agent(team, "wren")
    with CaptureQueriesContext(connection) as queries:
        current(agent)
    assert len(queries) == 0  # the stamp came with the agent
    plain = Agent.objects.get(team=team, slug="wren")
    with CaptureQueriesContext(connection) as queries:
        current(plain)
    assert len(queries) == 1  # one primary-key read


@pytest.mark.django_db(transaction=True)
def test_an_expiry_makes_the_kept_composition_due_with_no_write(team: Team) -> None:
    agent = create_agent(team, "wren", memory_config())
    closes = timezone.now() + timedelta(hours=1)
    saved = save_memory(
        agent, MemoryInput(kind="profile", content="In Oslo this week", valid_until=closes), SYSTEM
    )
    text = kept(team, "wren")
    assert "In Oslo this week" in text
    later = closes + timedelta(seconds=1)
    with mock.patch("memory.composed.timezone.now", return_value=later):
        after = kept(team, "wren")
        assert "In Oslo this week" not in after
        assert (
            after
            == compose(
                with_config(Agent.objects.filter(pk=agent.pk)).get(), now=later
            ).canonical_json()
        )
    assert saved is not None


@pytest.mark.django_db(transaction=True)
def test_the_fold_settings_are_part_of_the_key(team: Team, settings: Any) -> None:
    agent = create_agent(team, "wren", memory_config())
    remember(agent, "profile", "Lives in Lyon")
    text = kept(team, "wren")
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 5
    assert kept(team, "wren") != text
    check(team, "wren")


@pytest.mark.django_db(transaction=True)
def test_in_a_transaction_that_wrote_it_composes_afresh(team: Team) -> None:
    agent = create_agent(team, "wren", memory_config())
    kept(team, "wren")
    with transaction.atomic():
        remember(agent, "profile", "Lives in Lyon")
        assert "Lives in Lyon" in kept(team, "wren")
        transaction.set_rollback(True)
    assert "Lives in Lyon" not in kept(team, "wren")


# --- two processes, random interleavings ------------------------------------------------

SAVE = st.tuples(
    st.just("save"),
    st.sampled_from(("profile", "preference")),
    st.integers(0, len(CONTENTS) - 1),
    st.sampled_from((None, "city")),
)
CHANGE = st.one_of(
    SAVE,
    SAVE,
    st.tuples(st.just("decide"), st.integers(0, 5), st.booleans()),
    st.tuples(st.just("revoke"), st.integers(0, 5)),
    st.tuples(st.just("erase"), st.integers(0, 5)),
    st.tuples(st.just("validity"), st.integers(0, 5), st.sampled_from((None, 3, 30))),
    st.tuples(
        st.just("declare"), st.integers(0, 2), st.sampled_from(("Europe/Warsaw", "Asia/Tokyo"))
    ),
    st.tuples(st.just("restore")),
)
# A check keeps the composition of the moment in that process's cache; later changes
# in either process must make it stale there.
CHECK = st.just(("check",))
# Each step in one of the two processes: this one (False) or the peer (True).
STEPS = st.lists(st.tuples(st.booleans(), st.one_of(CHANGE, CHECK)), min_size=4, max_size=20)


class Peer:
    """The second process, on the same database."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.memory.composition_peer"],
            cwd=ROOT,
            env=server_env(database_url()),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(self, team: str, agent: str, step: list[Any]) -> dict[str, Any]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(json.dumps({"team": team, "agent": agent, "step": step}) + "\n")
        self.process.stdin.flush()
        answer: dict[str, Any] = json.loads(self.process.stdout.readline())
        assert "error" not in answer, answer["error"]
        return answer

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


@pytest.mark.django_db(transaction=True)
def test_two_processes_always_compose_what_composing_afresh_gives(
    team: Team, reviewer_actor: Actor
) -> None:
    peer = Peer()
    slugs = (f"agent-{n}" for n in itertools.count())
    try:

        @settings(
            max_examples=12,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        )
        @given(steps=STEPS)
        def interleaved(steps: list[tuple[bool, tuple[Any, ...]]]) -> None:
            slug = next(slugs)
            create_agent(team, slug, memory_config())
            # Both processes check at the end: each must see every change of the other.
            for in_peer, step in [*steps, (True, ("check",)), (False, ("check",))]:
                if in_peer:
                    peer.run(team.slug, slug, list(step))
                elif step == ("check",):
                    check(team, slug)
                else:
                    apply(team, slug, list(step))

        interleaved()
    finally:
        peer.close()


@pytest.mark.django_db(transaction=True)
def test_a_declaration_change_by_another_process_is_seen(team: Team, reviewer_actor: Actor) -> None:
    create_agent(team, "wren", memory_config())
    peer = Peer()
    try:
        before = peer.run(team.slug, "wren", ["check"])["sha"]
        store_config(
            team, "wren", AgentConfig.model_validate(memory_config("auto")), actor=reviewer_actor
        )
        assert peer.run(team.slug, "wren", ["check"])["sha"] != before
    finally:
        peer.close()


@pytest.mark.django_db(transaction=True)
def test_after_a_change_of_memories_alone_the_declarations_are_not_read_again(
    team: Team,
) -> None:
    agent = create_agent(team, "wren", memory_config())
    kept(team, "wren")
    remember(agent, "profile", "Lives in Lyon")
    with CaptureQueriesContext(connection) as queries:
        text = kept(team, "wren")
    read = set().union(*(tables_read(query["sql"]) for query in queries.captured_queries))
    assert "Lives in Lyon" in text
    assert not read & {"lens_sectiondeclaration", "lens_authoredentry", "lens_capability"}
    check(team, "wren")
    # A change of the declarations: read again.
    store_config(team, "wren", AgentConfig.model_validate(memory_config("auto")))
    with CaptureQueriesContext(connection) as queries:
        kept(team, "wren")
    read = set().union(*(tables_read(query["sql"]) for query in queries.captured_queries))
    assert "lens_authoredentry" in read
    check(team, "wren")


@pytest.mark.django_db(transaction=True)
def test_a_delivery_never_serves_a_memory_erased_after_its_agent_was_read(team: Team) -> None:
    """The route reads the agent with its stamp before the delivery's transaction holds
    off erasures (``memory.deliveries.erasure_lock``): an erasure committed in between
    must not come back from the composition kept for the stamp read before it."""
    agent = create_agent(team, "wren", memory_config())
    record = remember(agent, "profile", "Lives in Lyon")
    assert "Lives in Lyon" in kept(team, "wren")
    read_before = stamped_agent(team, "wren", revision=True)
    erase_memory(record, SYSTEM, "The user asked for it to be forgotten.")
    delivered = deliver(read_before, Actor(label="runtime"))
    assert "Lives in Lyon" not in delivered.composition_json
    check(team, "wren")


@pytest.mark.django_db(transaction=True)
def test_an_agent_read_before_a_rename_never_keeps_its_old_slug(team: Team) -> None:
    """After a change of memories alone the kept declarations are reused, but the slug
    comes from the agent in hand: one read before a rename (and before its stamp) must
    not put its old slug in the composition kept for everyone."""
    agent = create_agent(team, "wren", memory_config())
    read_before = Agent.objects.get(pk=agent.pk)  # no stamp with it
    Agent.objects.filter(pk=agent.pk).update(slug="robin")
    kept(team, "robin")  # the renamed agent's declarations kept
    remember(agent, "profile", "Lives in Lyon")  # then memories alone change
    current(read_before)
    assert json.loads(kept(team, "robin"))["agent"] == "robin"
    check(team, "robin")


@pytest.mark.django_db(transaction=True)
def test_a_truncate_sets_every_stamp(team: Team) -> None:
    """PostgreSQL fires no row trigger on TRUNCATE; a statement trigger sets them all."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite has no TRUNCATE (a DELETE fires the row triggers)")
    agent = create_agent(team, "wren", memory_config())
    remember(agent, "profile", "Lives in Lyon")
    kept(team, "wren")
    before = stamp_of(agent.pk)
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE memory_searchdoc, memory_memoryevent, memory_promotion")
    assert stamp_of(agent.pk) != before
    check(team, "wren")


@pytest.mark.django_db(transaction=True)
def test_an_erasure_drops_what_this_process_keeps_at_once(team: Team) -> None:
    agent = create_agent(team, "wren", memory_config())
    record = remember(agent, "profile", "Lives in Lyon")
    assert "Lives in Lyon" in kept(team, "wren")
    erase_memory(record, SYSTEM, "The user asked for it to be forgotten.")
    assert not any(
        "Lives in Lyon" in (entry.text or "") for entry in composed._cache._entries.values()
    )
    assert "Lives in Lyon" not in kept(team, "wren")
