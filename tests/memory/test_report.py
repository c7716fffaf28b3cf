"""The routing report in the lens (SPEC §5.6): every memory composed or dropped, none silent."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lens.core.background import TIERS, Background, BackgroundSection
from lens.core.config import AgentConfig
from lens.core.render import entry_line, render_sections
from memory.core.overlay import DEFAULT_BUDGET_CHARS, apply_memory_overlay
from memory.core.presets import USER_BACKGROUND, PresetSpec
from memory.core.report import (
    DROP_REASON_HELP,
    DROP_REASONS,
    Drop,
    DropReason,
    PromotionState,
    ReportStats,
    RoutingReport,
    routing_report,
)
from memory.core.routing import PlacedRecord, RoutableRecord, RoutingContext, evaluate

ALLOWED = (
    "erased",
    "spec-declined",
    "undeclared-section",
    "locked-section",
    "earning",
    "corroborating",
    "awaiting-approval",
    "rejected",
    "revoked",
    "superseded",
    "expired",
    "authored-wins",
    "reconciled",
    "over-budget",
)
SAVE_TIME: tuple[DropReason, ...] = (
    "spec-declined",
    "undeclared-section",
    "locked-section",
)
FOLD_ONLY: tuple[DropReason, ...] = ("authored-wins", "reconciled", "over-budget")
STATUSES = (
    "pending",
    "approved",
    "rejected",
    "revoked",
    "declined",
    "superseded",
    "erased",
    "corroborates",
)
T0 = datetime(2025, 6, 1, tzinfo=UTC)


def state(
    memory_id: str, status: str, reason: str = "", holder: str | None = None
) -> PromotionState:
    return PromotionState(memory_id=memory_id, status=status, reason=reason, holder=holder)


def fold(*drops: tuple[str, DropReason], **stats: object) -> RoutingReport:
    return RoutingReport(
        drops=tuple(Drop(memory_id=mid, reason=reason) for mid, reason in drops),
        stats=ReportStats(**stats),
    )


def reasons(report: RoutingReport) -> dict[str, str]:
    return {drop.memory_id: drop.reason for drop in report.drops}


# --- the vocabulary -------------------------------------------------------------------


def test_drop_reasons_are_exactly_the_thirteen_of_the_spec() -> None:
    assert set(DROP_REASONS) == set(ALLOWED)
    assert len(DROP_REASONS) == 14
    assert set(DROP_REASON_HELP) == set(ALLOWED)


def test_drop_reasons_are_listed_in_precedence_order() -> None:
    assert DROP_REASONS[:3] == ("erased", "superseded", "expired")
    assert DROP_REASONS[3:6] == SAVE_TIME
    assert DROP_REASONS[6:8] == ("earning", "corroborating")
    assert DROP_REASONS[8:11] == ("awaiting-approval", "rejected", "revoked")
    assert set(DROP_REASONS[11:]) == set(FOLD_ONLY)


# --- precedence -----------------------------------------------------------------------


@pytest.mark.parametrize("fold_reason", [None, *FOLD_ONLY, "undeclared-section", "superseded"])
def test_erased_beats_every_other_outcome(fold_reason: DropReason | None) -> None:
    drops = [("m1", fold_reason)] if fold_reason else []
    report = routing_report([state("m1", "erased")], fold(*drops))
    assert report.drops == (Drop(memory_id="m1", reason="erased"),)


@pytest.mark.parametrize("fold_reason", [None, *FOLD_ONLY, "undeclared-section"])
def test_superseded_beats_every_other_outcome(fold_reason: DropReason | None) -> None:
    drops = [("m1", fold_reason)] if fold_reason else []
    report = routing_report([state("m1", "superseded")], fold(*drops))
    assert report.drops == (Drop(memory_id="m1", reason="superseded"),)


@pytest.mark.parametrize("saved_reason", SAVE_TIME)
def test_a_declined_row_keeps_its_save_time_reason(saved_reason: DropReason) -> None:
    report = routing_report([state("m1", "declined", saved_reason)], fold(("m1", "over-budget")))
    assert report.drops == (Drop(memory_id="m1", reason=saved_reason),)


@pytest.mark.parametrize("saved_reason", ["", "over-budget", "nonsense"])
def test_a_declined_row_without_a_save_time_reason_reads_spec_declined(saved_reason: str) -> None:
    report = routing_report([state("m1", "declined", saved_reason)], fold())
    assert reasons(report) == {"m1": "spec-declined"}


@pytest.mark.parametrize("fold_reason", [None, "over-budget", "authored-wins"])
def test_a_pending_row_is_awaiting_approval(fold_reason: DropReason | None) -> None:
    drops = [("m1", fold_reason)] if fold_reason else []
    assert reasons(routing_report([state("m1", "pending")], fold(*drops))) == {
        "m1": "awaiting-approval"
    }


def test_a_rejected_row_is_rejected() -> None:
    assert reasons(routing_report([state("m1", "rejected")], fold())) == {"m1": "rejected"}


@pytest.mark.parametrize("fold_reason", [*FOLD_ONLY, "undeclared-section", "locked-section"])
def test_an_approved_row_takes_the_fold_reason(fold_reason: DropReason) -> None:
    report = routing_report([state("m1", "approved")], fold(("m1", fold_reason)))
    assert reasons(report) == {"m1": fold_reason}


def test_an_approved_row_the_fold_composed_is_not_dropped() -> None:
    assert routing_report([state("m1", "approved")], fold()).drops == ()


def test_the_report_recounts_drops_and_keeps_the_fold_stats() -> None:
    folded = fold(
        ("a", "over-budget"),
        placed=3,
        composed=2,
        drops_by_reason={"over-budget": 1},
        chars_used={"background": 42},
    )
    states = [
        state("a", "approved"),
        state("b", "approved"),
        state("c", "pending"),
        state("d", "declined", "locked-section"),
        state("e", "superseded"),
    ]
    report = routing_report(states, folded)
    assert report.stats.drops_by_reason == {
        "awaiting-approval": 1,
        "locked-section": 1,
        "over-budget": 1,
        "superseded": 1,
    }
    assert (report.stats.placed, report.stats.composed) == (3, 2)
    assert report.stats.chars_used == {"background": 42}
    assert [d.memory_id for d in report.drops] == ["a", "c", "d", "e"]


def test_the_report_holds_ids_and_reasons_only() -> None:
    report = routing_report([state("m1", "declined", "locked-section")], fold())
    dumped = report.model_dump(mode="json")
    assert dumped["drops"] == [{"memory_id": "m1", "reason": "locked-section"}]


def test_an_earning_row_is_earning_and_its_sightings_corroborate_until_it_composes() -> None:
    earning = [state("h", "pending", "earning"), state("s", "corroborates", holder="h")]
    assert reasons(routing_report(earning, fold())) == {"h": "earning", "s": "corroborating"}
    earned = [state("h", "approved"), state("s", "corroborates", holder="h")]
    assert reasons(routing_report(earned, fold())) == {}
    dropped = fold(("h", "over-budget"), ("s", "corroborating"))
    assert reasons(routing_report(earned, dropped)) == {"h": "over-budget", "s": "corroborating"}
    # Superseded and erased come first, for a sighting too.
    gone = [state("h", "approved"), state("s", "superseded")]
    assert reasons(routing_report(gone, fold())) == {"s": "superseded"}


# --- none silent, over random agents --------------------------------------------------

SECTION_POOL = ("a", "b", "c", "d")
KEY_POOL = ("k0", "k1", "k2")
RECORD_IDS = st.text(alphabet="0123456789abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=3)


@st.composite
def authored_backgrounds(draw: st.DrawFn) -> Background:
    sections = []
    for section_id in draw(st.lists(st.sampled_from(SECTION_POOL), unique=True, max_size=4)):
        keys = draw(st.lists(st.sampled_from(KEY_POOL), unique=True, max_size=2))
        sections.append(
            BackgroundSection.model_validate(
                {
                    "id": section_id,
                    "title": f"Section {section_id}",
                    "promotion": draw(st.sampled_from(TIERS)),
                    "entries": [{"key": key, "value": f"authored {key}"} for key in keys],
                }
            )
        )
    return Background(sections=tuple(sections))


@st.composite
def memories(draw: st.DrawFn) -> tuple[list[PromotionState], list[PlacedRecord]]:
    states: list[PromotionState] = []
    placed: list[PlacedRecord] = []
    holders: list[str] = []
    sightings: dict[str, list[str]] = {}
    for record_id in draw(st.lists(RECORD_IDS, unique=True, max_size=16)):
        status = draw(st.sampled_from(STATUSES))
        if status == "corroborates" and not holders:
            status = "pending"
        reason = draw(st.sampled_from(SAVE_TIME)) if status == "declined" else ""
        if status == "pending" and draw(st.booleans()):
            reason = "earning"
        holder = None
        if status == "corroborates":
            # A sighting of an earlier earning (or earned) memory (SPEC §19.1).
            holder = draw(st.sampled_from(holders))
            sightings.setdefault(holder, []).append(record_id)
        elif status in ("pending", "approved"):
            holders.append(record_id)
        states.append(state(record_id, status, reason, holder))
    by_id = {s.memory_id: s for s in states}
    for record_id in holders:
        if by_id[record_id].status == "approved":
            placed.append(
                PlacedRecord(
                    id=record_id,
                    kind="fact",
                    content=draw(st.text(max_size=30)),
                    created_at=T0 + timedelta(seconds=draw(st.integers(0, 3))),
                    section=draw(st.sampled_from((*SECTION_POOL, "gone"))),
                    key=draw(st.sampled_from(KEY_POOL)),
                    sightings=tuple(sightings.get(record_id, ())),
                )
            )
    return states, placed


class CorroboratingSpec:
    key = "corroborating"
    version = "1"

    def route(self, record: RoutableRecord, ctx: RoutingContext) -> None:
        return None

    def reconcile(self, a: RoutableRecord, b: RoutableRecord) -> str:
        return "both" if a.created_at == b.created_at else "a"


@settings(max_examples=150, deadline=None)
@given(
    authored_backgrounds(),
    memories(),
    st.one_of(st.integers(0, 120), st.just(DEFAULT_BUDGET_CHARS)),
    st.booleans(),
)
def test_every_memory_is_either_in_the_prompt_or_in_the_drops_never_both_never_neither(
    authored: Background,
    agent_memories: tuple[list[PromotionState], list[PlacedRecord]],
    budget: int,
    corroborate: bool,
) -> None:
    states, placed = agent_memories
    spec = CorroboratingSpec() if corroborate else None
    composed, folded = apply_memory_overlay(authored, placed, spec, budget)
    report = routing_report(states, folded)
    sections = render_sections(AgentConfig(name="x", background=authored), composed)

    by_id = {s.memory_id: s for s in states}
    fragments = [f for s in sections for f in s.fragments]
    in_prompt = Counter(mid for f in fragments for mid in f.memory_ids)
    in_drops = Counter(drop.memory_id for drop in report.drops)
    everyone = {s.memory_id for s in states}

    assert set(in_prompt) | set(in_drops) == everyone  # never neither
    assert not set(in_prompt) & set(in_drops)  # never both
    assert all(n == 1 for n in in_prompt.values())
    assert all(n == 1 for n in in_drops.values())
    assert all(drop.reason in ALLOWED for drop in report.drops)

    dropped = reasons(report)
    fold_reasons = reasons(folded)
    for row in states:
        if row.status in ("erased", "superseded"):
            assert dropped[row.memory_id] == row.status
        elif row.status == "declined":
            assert dropped[row.memory_id] == row.reason
        elif row.status == "pending":
            waits = "earning" if row.reason == "earning" else "awaiting-approval"
            assert dropped[row.memory_id] == waits
        elif row.status == "corroborates":
            holder = by_id[row.holder or ""]
            if row.memory_id in in_prompt:
                assert holder.status == "approved"
                assert holder.memory_id in in_prompt
            else:
                assert dropped[row.memory_id] == "corroborating"
        elif row.status in ("rejected", "revoked"):
            assert dropped[row.memory_id] == row.status
        else:
            assert dropped.get(row.memory_id) == fold_reasons.get(row.memory_id)
            assert dropped.get(row.memory_id) in (None, *FOLD_ONLY, *SAVE_TIME[1:])

    # Memory fragments are exactly the composed memory entry lines.
    memory_lines = [
        (entry_line(e), e.memory_ids) for s in composed.sections for e in s.entries if e.memory_ids
    ]
    assert [(f.text, f.memory_ids) for f in fragments if f.source == "memory"] == memory_lines
    assert all(not f.memory_ids for f in fragments if f.source == "authored")
    assert report.stats.drops_by_reason == dict(Counter(d.reason for d in report.drops))


# --- one agent, end to end through a preset -------------------------------------------


def save_time(
    spec: PresetSpec, ctx: RoutingContext, record_id: str, kind: str, label: str, seconds: int
) -> tuple[PromotionState, PlacedRecord | None]:
    """What memory_save commits (SPEC §5.4), reduced to the pure decision."""
    routable = RoutableRecord(kind=kind, content=f"{label} is {record_id}", label=label)
    placement = evaluate(spec, routable, ctx)
    if placement is None:
        return state(record_id, "declined", "spec-declined"), None
    declared = ctx.section(placement.section)
    if declared is None:
        return state(record_id, "declined", "undeclared-section"), None
    if declared.promotion == "locked":
        return state(record_id, "declined", "locked-section"), None
    if declared.promotion == "earned":
        return state(record_id, "pending", "earning"), None
    status = "approved" if declared.promotion == "auto" else "pending"
    placed = PlacedRecord(
        id=record_id,
        kind=kind,
        content=routable.content,
        label=label,
        created_at=T0 + timedelta(seconds=seconds),
        section=placement.section,
        key=placement.key,
        key_source=spec.key_source(routable),
    )
    return state(record_id, status), placed


def test_a_user_background_agent_reports_every_memory_once() -> None:
    authored = Background.model_validate(
        {
            "sections": [
                {
                    "id": "user_profile",
                    "title": "About the User",
                    "promotion": "auto",
                    "entries": [{"key": "name", "value": "Ada"}],
                },
                {"id": "user_preferences", "title": "User Preferences", "promotion": "guarded"},
            ]
        }
    )
    ctx = RoutingContext(sections=USER_BACKGROUND.sections)
    saves = [
        save_time(USER_BACKGROUND, ctx, "m1", "profile", "Name", 1),  # authored wins
        save_time(USER_BACKGROUND, ctx, "m2", "profile", "Timezone", 2),  # reconciled
        save_time(USER_BACKGROUND, ctx, "m3", "profile", "timezone ", 3),  # composed
        save_time(USER_BACKGROUND, ctx, "m4", "preference", "Theme", 4),  # pending
        save_time(USER_BACKGROUND, ctx, "m5", "episode", "Lunch", 5),  # declined
        save_time(USER_BACKGROUND, ctx, "m6", "profile", "City", 6),  # superseded below
    ]
    states = [row for row, _ in saves]
    states[-1] = state("m6", "superseded")
    placed = [p for (row, p) in saves if p is not None and row.status == "approved"]
    placed = [p for p in placed if p.id != "m6"]

    composed, folded = apply_memory_overlay(authored, placed, USER_BACKGROUND)
    report = routing_report(states, folded)
    sections = render_sections(AgentConfig(name="x", background=authored), composed)

    assert reasons(report) == {
        "m1": "authored-wins",
        "m2": "reconciled",
        "m4": "awaiting-approval",
        "m5": "spec-declined",
        "m6": "superseded",
    }
    context = next(s for s in sections if s.name == "Context")
    assert context.memory_ids == ("m3",)
    assert "- **timezone**: timezone  is m3\n" in context.text
    assert "- **name**: Ada\n" in context.text
