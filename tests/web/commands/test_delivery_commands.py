"""The deliveries in the commands (SPEC §10, §11): the demo's delivery history
(``seed_demo``), the storage line of ``doctor`` and ``prune_deliveries``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from demo.memories import DEMO_MEMORIES
from demo.sessions import DEMO_HISTORY, Save, Session
from lens.actors import Actor
from lens.audit import verify
from lens.models import Agent, ApiToken, AuditEvent, Team
from memory.deliveries.ledger import (
    deliver,
    delivery_diff,
    last_delivery,
    live_diff,
    memory_ids_of,
)
from memory.deliveries.retention import Storage, storage
from memory.models import (
    CompositionMemory,
    Delivery,
    EventKind,
    MemoryEvent,
    MemoryRecord,
    Promotion,
    PromotionStatus,
    SearchDoc,
    StoredComposition,
)
from tests.factories import composed, create_agent, memory_config, remember

pytestmark = pytest.mark.django_db

SESSION_NAME = re.compile(r"sess-(\d{4}-\d{2}-\d{2})-[a-z]")


def run(name: str, *args: str) -> str:
    out = StringIO()
    call_command(name, *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def demo_agent(slug: str) -> Agent:
    return Agent.objects.select_related("team").get(team__slug="demo", slug=slug)


def timeline(agent: Agent) -> list[Delivery]:
    """Oldest first, in the timeline's order."""
    return list(
        Delivery.objects.filter(agent=agent)
        .select_related("composition")
        .order_by("delivered_at", "id")
    )


def delivered_memories(agent: Agent) -> list[frozenset[str]]:
    return [memory_ids_of(delivery.composition) for delivery in timeline(agent)]


def memory_id(agent: Agent, content_start: str) -> str:
    return MemoryRecord.objects.get(agent=agent, content__startswith=content_start).pk


def row_counts() -> tuple[int, int, int, int]:
    return (
        Delivery.objects.count(),
        StoredComposition.objects.count(),
        CompositionMemory.objects.count(),
        MemoryRecord.objects.count(),
    )


# --- seed_demo: the delivery history --------------------------------------------------


def test_seed_demo_records_deliveries_across_sessions() -> None:
    out = run("seed_demo", "--force")
    seed_token = ApiToken.objects.get(team__slug="demo", name="demo seed")
    total = Delivery.objects.count()
    assert f"{total} new deliveries" in out
    # Each agent's sessions ran on its declared model's family and, once, a smaller one.
    models = {
        "wren": {"gpt-4o-2024-08-06", "gpt-4o-mini"},
        "sentinel": {"claude-sonnet-4-20250514", "claude-3-5-haiku-20241022"},
    }
    for slug in ("wren", "sentinel"):
        deliveries = timeline(demo_agent(slug))
        sessions = {delivery.session for delivery in deliveries}
        assert len(sessions) >= 2
        assert len(sessions) == len(deliveries)  # one delivery per session
        assert {delivery.model for delivery in deliveries} == models[slug]
        # Asked for by the runtime, through the demo's token.
        assert {delivery.actor_token_id for delivery in deliveries} == {seed_token.pk}
    assert Delivery.objects.filter(agent=demo_agent("atlas")).exists()
    # Each declares the model it mostly runs on: the pages measure its prompt against it.
    declared = {slug: demo_agent(slug).model for slug in ("wren", "sentinel", "atlas")}
    assert declared == {"wren": "gpt-4o", "sentinel": "claude-sonnet-4", "atlas": "gpt-4o-mini"}


def test_the_demo_history_lies_in_the_past_days_in_the_order_it_was_recorded() -> None:
    run("seed_demo", "--force")
    now = timezone.now()
    for slug in DEMO_HISTORY:
        deliveries = timeline(demo_agent(slug))
        # Record ids sort in the order they were made: the timeline keeps that order.
        assert [d.pk for d in deliveries] == sorted(d.pk for d in deliveries)
        days = {d.delivered_at.date() for d in deliveries}
        assert len(days) >= 2
        for delivery in deliveries:
            assert now - timedelta(days=8) < delivery.delivered_at < now - timedelta(hours=1)
            match = SESSION_NAME.fullmatch(delivery.session or "")
            assert match is not None, delivery.session
            assert match.group(1) == delivery.delivered_at.astimezone(UTC).date().isoformat()


def test_the_demo_history_has_diffs_that_add_and_remove_memories() -> None:
    run("seed_demo", "--force")
    team = Team.objects.get(slug="demo")
    added = removed = both = unchanged = 0
    for slug in DEMO_HISTORY:
        for delivery in timeline(demo_agent(slug))[1:]:
            comparison = delivery_diff(team, delivery.pk).comparison
            added += bool(comparison.added)
            removed += bool(comparison.removed)
            both += bool(comparison.added and comparison.removed)
            unchanged += comparison.unchanged
    assert added >= 1
    assert removed >= 1
    assert both >= 1
    # A second session with nothing learned in between: the same stored composition.
    assert unchanged >= 1
    assert StoredComposition.objects.count() < Delivery.objects.count()


def test_demo_memories_appear_and_disappear_between_deliveries() -> None:
    run("seed_demo", "--force")
    wren = demo_agent("wren")
    delivered = delivered_memories(wren)
    assert delivered[0] == frozenset()  # before anything was learned
    denver = memory_id(wren, "Doug lives in Denver")
    lisbon = memory_id(wren, "Doug moved to Lisbon")
    held = [denver in ids for ids in delivered]
    assert True in held
    first_out = held.index(True) + held[held.index(True) :].index(False)
    assert lisbon in delivered[first_out]
    assert not any(held[first_out:])


def test_the_demo_history_shows_superseded_and_revoked_memories() -> None:
    run("seed_demo", "--force")
    superseded = revoked = 0
    for slug in DEMO_HISTORY:
        delivered = delivered_memories(demo_agent(slug))
        shaped = set().union(*delivered)
        superseded += MemoryRecord.objects.filter(
            pk__in=shaped, promotion__status=PromotionStatus.SUPERSEDED
        ).count()
        for record_id in MemoryEvent.objects.filter(
            record_id__in=shaped, kind=EventKind.REVOKED
        ).values_list("record_id", flat=True):
            revoked += 1
            assert record_id not in delivered[-1]
    assert superseded >= 2
    assert revoked >= 2


def test_the_live_prompt_of_wren_differs_from_its_last_delivery() -> None:
    run("seed_demo", "--force")
    wren = demo_agent("wren")
    delivery = last_delivery(wren)
    assert delivery is not None
    comparison = live_diff(delivery, composed(wren))
    assert comparison.added == (memory_id(wren, "His sister Ana visits"),)
    assert not comparison.removed


def test_every_session_of_the_story_opens_before_a_demo_memory() -> None:
    for slug, history in DEMO_HISTORY.items():
        contents = [demo.content for demo in DEMO_MEMORIES[slug]]
        positions = []
        for session in history.during:
            assert session.before is not None
            matching = [i for i, text in enumerate(contents) if text.startswith(session.before)]
            assert len(matching) == 1, (slug, session.before)
            positions.append(matching[0])
        assert positions == sorted(positions)
        sessions = [*history.during, *(s for s in history.after if isinstance(s, Session))]
        ages = [(-s.days_ago, s.at) for s in sessions]
        assert ages == sorted(ages)
        assert len(set(ages)) == len(ages)
        assert all(s.days_ago >= 1 for s in sessions)


def test_rerunning_seed_demo_adds_no_deliveries() -> None:
    run("seed_demo", "--force")
    before = row_counts()
    assert before[0] > 0
    out = run("seed_demo", "--force")
    assert row_counts() == before
    assert "0 new deliveries" in out


def test_an_agent_seeded_before_the_history_existed_gets_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with monkeypatch.context() as patched:
        patched.setattr("demo.sessions.DEMO_HISTORY", {})
        run("seed_demo", "--force")
    assert not Delivery.objects.exists()
    run("seed_demo", "--force")
    wren = demo_agent("wren")
    # Only the sessions after the demo memories: the earlier ones would all be one prompt.
    later = [step for step in DEMO_HISTORY["wren"].after if isinstance(step, Session)]
    assert len(timeline(wren)) == len(later)
    team = Team.objects.get(slug="demo")
    assert any(delivery_diff(team, d.pk).comparison.removed for d in timeline(wren)[1:])
    before = row_counts()
    run("seed_demo", "--force")
    assert row_counts() == before


# --- seed_demo: the times of the demo memories ------------------------------------------

TAKEN_OUT = (EventKind.SUPERSEDED, EventKind.REJECTED, EventKind.REVOKED)


def demo_agents() -> list[Agent]:
    return list(Agent.objects.filter(team__slug="demo").order_by("slug"))


def demo_times() -> list[tuple[str, str, datetime | None]]:
    """Every time the demo wrote about memories and deliveries, by row."""
    team = {"agent__team__slug": "demo"}
    times: list[tuple[str, str, datetime | None]] = []
    for pk, at in MemoryRecord.objects.filter(**team).values_list("pk", "created_at"):
        times.append(("record", pk, at))
    for pk, at in SearchDoc.objects.filter(**team).values_list("record_id", "created_at"):
        times.append(("doc", pk, at))
    for pk, promoted, decided in Promotion.objects.filter(**team).values_list(
        "pk", "promoted_at", "decided_at"
    ):
        times += [("promoted", pk, promoted), ("decided", pk, decided)]
    for event, at in MemoryEvent.objects.filter(**team).values_list("pk", "at"):
        times.append(("event", str(event), at))
    for pk, at in Delivery.objects.filter(**team).values_list("pk", "delivered_at"):
        times.append(("delivery", pk, at))
    return sorted(times, key=lambda row: row[:2])


def assert_coherent_times(agent: Agent, now: datetime) -> None:
    """The demo's past tells one story: saves in order, events and decisions after
    their save, every delivered memory saved (and not yet taken out) before it.
    """
    records = list(MemoryRecord.objects.filter(agent=agent).select_related("promotion"))
    # Ids sort in the order the records were made: that is the order they were saved.
    saved = [r.created_at for r in sorted(records, key=lambda r: r.pk)]
    assert saved == sorted(saved)
    assert len(set(saved)) == len(saved)  # strictly increasing, as next_timestamp has it
    created = {r.pk: r.created_at for r in records}
    for record in records:
        assert record.created_at < now - timedelta(minutes=30), record.content
        promotion = record.promotion
        assert promotion.promoted_at == record.created_at
        if promotion.decided_at is not None:
            assert promotion.decided_at >= promotion.promoted_at
            assert promotion.decided_at < now
    docs = dict(SearchDoc.objects.filter(agent=agent).values_list("record_id", "created_at"))
    assert docs == created
    events = list(MemoryEvent.objects.filter(agent=agent).order_by("pk"))
    # Written in story order, and still in that order by time.
    assert [e.at for e in events] == sorted(e.at for e in events)
    for event in events:
        assert event.at >= created[event.record_id], (event.kind, event.record_id)
        assert event.at < now - timedelta(minutes=30)
        if event.kind == EventKind.SUPERSEDED:
            assert event.at == created[str(event.detail["by"])]
    taken_out: dict[str, datetime] = {}
    for event in events:
        if event.kind in TAKEN_OUT:
            taken_out.setdefault(event.record_id, event.at)
    deliveries = timeline(agent)
    for delivery in deliveries:
        for memory in memory_ids_of(delivery.composition):
            assert created[memory] < delivery.delivered_at
            assert taken_out.get(memory, delivery.delivered_at) >= delivery.delivered_at


def test_demo_memories_are_saved_before_the_deliveries_that_hold_them() -> None:
    run("seed_demo", "--force")
    now = timezone.now()
    held = 0
    for agent in demo_agents():
        assert_coherent_times(agent, now)
        for delivery in timeline(agent):
            held += len(memory_ids_of(delivery.composition))
    assert held > 0


def test_demo_memories_keep_the_order_they_were_saved_in() -> None:
    run("seed_demo", "--force")
    for slug, history in DEMO_HISTORY.items():
        expected = [demo.content for demo in DEMO_MEMORIES[slug]]
        expected += [step.content for step in history.after if isinstance(step, Save)]
        by_time = MemoryRecord.objects.filter(agent=demo_agent(slug)).order_by("created_at")
        assert list(by_time.values_list("content", flat=True)) == expected


def test_each_demo_memory_sits_just_before_the_next_delivery() -> None:
    run("seed_demo", "--force")
    for agent in demo_agents():
        deliveries = [d.delivered_at for d in timeline(agent)]
        for created in MemoryRecord.objects.filter(agent=agent).values_list(
            "created_at", flat=True
        ):
            later = [at for at in deliveries if at > created]
            if later:
                # Not back at the previous delivery: on the day of the one after it.
                assert later[0] - created < timedelta(hours=2)


def test_the_newest_demo_memory_was_saved_after_the_last_delivery_an_hour_ago() -> None:
    run("seed_demo", "--force")
    now = timezone.now()
    wren = demo_agent("wren")
    newest = MemoryRecord.objects.filter(agent__team__slug="demo").order_by("-created_at")[0]
    assert newest.pk == memory_id(wren, "His sister Ana visits")
    last = last_delivery(wren)
    assert last is not None
    assert last.delivered_at < newest.created_at
    assert now - timedelta(hours=2) < newest.created_at <= now - timedelta(minutes=30)
    # Nothing else of the demo claims to be newer than that.
    assert max(at for _kind, _pk, at in demo_times() if at is not None) == newest.created_at


def test_rerunning_seed_demo_moves_no_time() -> None:
    run("seed_demo", "--force")
    before = demo_times()
    run("seed_demo", "--force")
    assert demo_times() == before


def test_an_agent_without_a_history_has_its_memories_in_the_past(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("demo.sessions.DEMO_HISTORY", {})
    run("seed_demo", "--force")
    now = timezone.now()
    assert not Delivery.objects.exists()
    for agent in demo_agents():
        assert MemoryRecord.objects.filter(agent=agent).exists()
        assert_coherent_times(agent, now)
    before = demo_times()
    run("seed_demo", "--force")
    assert demo_times() == before


def test_an_agent_seeded_before_the_history_existed_gets_coherent_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with monkeypatch.context() as patched:
        patched.setattr("demo.sessions.DEMO_HISTORY", {})
        run("seed_demo", "--force")
    run("seed_demo", "--force")
    now = timezone.now()
    assert Delivery.objects.exists()
    for agent in demo_agents():
        assert_coherent_times(agent, now)
    before = demo_times()
    run("seed_demo", "--force")
    assert demo_times() == before


# --- doctor ---------------------------------------------------------------------------


def test_doctor_reports_the_deliveries_and_is_healthy() -> None:
    run("seed_demo", "--force")
    held = storage()
    out = run("doctor")
    line = (
        f"deliveries: {held.deliveries:,} recorded  {held.compositions:,} distinct "
        f"compositions  {held.body_bytes:,} bytes stored (compositions, compressed)"
    )
    assert line in out
    assert held.deliveries > 0
    if held.table_bytes is not None:
        assert f"{line}  {held.table_bytes:,} bytes in tables and indexes\n" in out
    assert out.rstrip().endswith("healthy")


def test_doctor_reports_no_deliveries_on_an_empty_database() -> None:
    out = run("doctor")
    assert "deliveries: 0 recorded  0 distinct compositions  0 bytes stored" in out
    assert out.rstrip().endswith("healthy")


def test_doctor_is_healthy_when_the_database_cannot_tell_table_sizes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        "web.management.commands.doctor.storage",
        lambda: Storage(deliveries=3, compositions=2, body_bytes=18432, table_bytes=None),
    )
    out = run("doctor")
    assert (
        "deliveries: 3 recorded  2 distinct compositions  18,432 bytes stored "
        "(compositions, compressed)\n" in out
    )
    assert "tables and indexes" not in out
    assert out.rstrip().endswith("healthy")


# --- prune_deliveries ----------------------------------------------------------------

RUNTIME = Actor(label="runtime")


def deliver_at(agent: Agent, days_ago: float) -> Delivery:
    delivery = deliver(agent, RUNTIME).delivery
    # Tests may move a delivery in time; the product never changes one.
    Delivery.objects.filter(pk=delivery.pk).update(
        delivered_at=timezone.now() - timedelta(days=days_ago)
    )
    return delivery


@pytest.fixture
def history(team: Team) -> dict[str, Delivery]:
    """Four deliveries of three compositions: ``old`` (40 days ago) alone uses its
    composition; ``older_shared`` (35 days) shares one with ``recent`` (5 days); ``now``
    has its own.
    """
    agent = create_agent(team, "wren", memory_config())
    remember(agent, "profile", "Lives in Lisbon.", label="city")
    old = deliver_at(agent, 40)
    remember(agent, "profile", "Works as a nurse.", label="job")
    older_shared = deliver_at(agent, 35)
    recent = deliver_at(agent, 5)
    remember(agent, "profile", "Has a cat.", label="pet")
    now = deliver(agent, RUNTIME).delivery
    assert older_shared.composition_id == recent.composition_id
    assert len({old.composition_id, recent.composition_id, now.composition_id}) == 3
    return {"old": old, "older_shared": older_shared, "recent": recent, "now": now}


def test_prune_removes_old_deliveries_and_compositions_no_delivery_uses(
    history: dict[str, Delivery],
) -> None:
    out = run("prune_deliveries", "--older-than", "30")
    assert out.strip() == (
        "Removed 2 deliveries older than 30 days and 1 composition no delivery uses."
    )
    assert set(Delivery.objects.values_list("pk", flat=True)) == {
        history["recent"].pk,
        history["now"].pk,
    }
    kept = {history["recent"].composition_id, history["now"].composition_id}
    assert set(StoredComposition.objects.values_list("pk", flat=True)) == kept
    assert set(CompositionMemory.objects.values_list("composition_id", flat=True)) == kept
    assert not CompositionMemory.objects.filter(composition_id=history["old"].composition_id)


def test_prune_writes_an_audit_event_for_each_team_it_pruned(
    history: dict[str, Delivery],
) -> None:
    team_id = history["old"].agent.team_id
    run("prune_deliveries", "--older-than", "30")
    [event] = AuditEvent.objects.filter(team_id=team_id, action="delivery.pruned")
    assert event.actor == "system"
    assert event.details == {"deliveries": 2, "older_than_days": 30}
    assert verify(Team.objects.get(pk=team_id)).first_bad is None
    run("prune_deliveries", "--older-than", "30")  # nothing more to remove: no event
    assert AuditEvent.objects.filter(action="delivery.pruned").count() == 1


def test_prune_keeps_what_is_recent_enough(history: dict[str, Delivery]) -> None:
    before = row_counts()
    out = run("prune_deliveries", "--older-than", "41")
    assert out.strip() == (
        "Removed 0 deliveries older than 41 days and 0 compositions no delivery uses."
    )
    assert row_counts() == before
    out = run("prune_deliveries", "--older-than", "1")
    assert out.strip() == (
        "Removed 3 deliveries older than 1 day and 2 compositions no delivery uses."
    )
    assert list(Delivery.objects.values_list("pk", flat=True)) == [history["now"].pk]


@pytest.mark.parametrize("batch", [1, 2, 3])
def test_prune_removes_unused_compositions_in_batches_of_any_size(
    history: dict[str, Delivery], batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two compositions go at --older-than 1: fewer, as many and more than a batch.
    monkeypatch.setattr("memory.deliveries.retention.PRUNE_BATCH", batch)
    out = run("prune_deliveries", "--older-than", "1")
    assert out.strip() == (
        "Removed 3 deliveries older than 1 day and 2 compositions no delivery uses."
    )
    assert list(StoredComposition.objects.values_list("pk", flat=True)) == [
        history["now"].composition_id
    ]
    assert set(CompositionMemory.objects.values_list("composition_id", flat=True)) == {
        history["now"].composition_id
    }


def test_a_dry_run_says_what_would_go_and_removes_nothing(history: dict[str, Delivery]) -> None:
    before = row_counts()
    out = run("prune_deliveries", "--older-than", "30", "--dry-run")
    assert out.strip() == (
        "Would remove 2 deliveries older than 30 days and 1 composition no delivery would "
        "use then. Nothing was removed (dry run)."
    )
    assert row_counts() == before


def test_a_dry_run_counts_what_prune_then_removes() -> None:
    run("seed_demo", "--force")
    dry = run("prune_deliveries", "--older-than=3", "--dry-run")
    counts = re.search(r"Would remove (\d+) deliver\w+ .* and (\d+) composition", dry)
    assert counts is not None
    assert int(counts.group(1)) > 0
    done = run("prune_deliveries", "--older-than=3")
    assert done.startswith(f"Removed {counts.group(1)} deliver")
    assert f"and {counts.group(2)} composition" in done


@pytest.mark.parametrize("days", ["0", "-3", "abc", "2.5", "", "9999999999"])
def test_prune_refuses_a_bad_number_of_days(history: dict[str, Delivery], days: str) -> None:
    before = row_counts()
    with pytest.raises(CommandError, match="--older-than"):
        run("prune_deliveries", f"--older-than={days}")
    with pytest.raises(CommandError, match="--older-than"):
        run("prune_deliveries", f"--older-than={days}", "--dry-run")
    assert row_counts() == before


def test_prune_needs_the_number_of_days() -> None:
    with pytest.raises(CommandError, match="--older-than"):
        run("prune_deliveries")
