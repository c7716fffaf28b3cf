"""The routing preview predicts the save (SPEC §5.7), as a property: for random agents
(tiers per section, undeclared sections, authored entries at keys memories may take, a
small budget) and random histories (saves whose labels collide, supersedes, reviewers'
decisions, re-declared sections), before every save the preview says exactly what the
save then records, and whether the memory is in the prompt right after it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.test import override_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lens.actors import Actor
from lens.agents import get_agent
from lens.core.render import ENTRY_LINE_OVERHEAD
from lens.models import Agent, Team
from memory.core.presets import content_key
from memory.core.records import MemoryInput
from memory.decisions import decide, revoke
from memory.models import MemoryRecord, Promotion
from memory.preview import Preview, preview_save
from memory.saving import Conflict, save_memory
from tests.factories import composed, create_agent, drop_reason, in_prompt, written_rows
from tests.samples import SAMPLE_CONFIG

pytestmark = pytest.mark.django_db

MODEL = Actor(label="model")
TIERS = ("auto", "guarded", "locked", "earned")
KINDS = ("profile", "preference", "episode")
# "Name " and "name" are one address; "!!!" has no slug, so it keys by content.
LABELS = (None, "name", "Name ", "city", "theme", "!!!")
CONTENTS = (
    "Doug.",
    "Lives by the sea.",
    "  lives BY the   sea. ",  # the same content key as the one above
    "Prefers short answers, and never before nine in the morning.",
    "x" * 90,
)
# Keys an authored entry may hold that memories may also take.
AUTHORED_KEYS = ("name", "city", "theme", content_key("Doug."), "timezone")
BUDGETS = (3000, 3000, 3000, 0, 30, 60, 120)


@dataclass(frozen=True)
class Shape:
    """An agent: its spec, and per preset section its tier and authored keys (None:
    the section is not declared)."""

    spec: str | None
    profile: tuple[str, frozenset[str]] | None
    preferences: tuple[str, frozenset[str]] | None

    def config(self) -> dict[str, Any]:
        sections: list[dict[str, Any]] = []
        for section_id, title, declared in (
            ("user_profile", "About the User", self.profile),
            ("user_preferences", "User Preferences", self.preferences),
        ):
            if declared is None:
                continue
            tier, keys = declared
            sections.append(
                {
                    "id": section_id,
                    "title": title,
                    "promotion": tier,
                    "entries": [{"key": k, "value": f"Authored {k}."} for k in sorted(keys)],
                }
            )
        return {**SAMPLE_CONFIG, "routing_spec": self.spec, "background": {"sections": sections}}


# A declared section (mostly one memory may fill) with up to two authored keys, or none.
SECTION = st.builds(
    lambda tier, keys: None if tier is None else (tier, keys),
    st.sampled_from(("auto", "auto", "guarded", "guarded", "locked", "earned", None)),
    st.frozensets(st.sampled_from(AUTHORED_KEYS), max_size=2),
)
SHAPE = st.builds(
    Shape,
    spec=st.sampled_from(("user-background",) * 5 + (None,)),
    profile=SECTION,
    preferences=SECTION,
)
SAVE = st.tuples(
    st.just("save"),
    st.sampled_from(("profile", "profile", "preference", "preference", "episode")),
    st.sampled_from(LABELS),
    st.sampled_from(CONTENTS),
    # Supersedes the n-th memory saved so far (modulo), or nothing.
    st.sampled_from((None, None, None, 0, 1, 2, 3, 4, 5, 6, 7)),
    # The session (SPEC §19.1): sightings in distinct ones earn a memory its place.
    st.sampled_from((None, "a", "b", "c")),
)
DECIDE = st.tuples(st.sampled_from(("approve", "reject", "revoke")), st.integers(0, 20))
DECLARE = st.tuples(st.just("declare"), SHAPE)
STEP = st.sampled_from(("save",) * 6 + ("decide",) * 2 + ("declare",)).flatmap(
    lambda name: {"save": SAVE, "decide": DECIDE, "declare": DECLARE}[name]
)


class History:
    """One agent and what was saved for it, replayed step by step."""

    def __init__(self, team: Team, reviewer: Actor, shape: Shape, budget: int) -> None:
        self.team = team
        self.budget = budget
        self.reviewer = reviewer
        self.saved: list[str] = []
        self.seen: Counter[str] = Counter()
        create_agent(team, "wren", shape.config())

    @property
    def agent(self) -> Agent:
        """The agent as the API would load it: fresh, with its whole configuration."""
        return get_agent(self.team, "wren")

    def step(self, step: tuple[Any, ...]) -> None:
        match step:
            case ("save", kind, label, content, pick, *session):
                supersedes = (
                    self.saved[pick % len(self.saved)] if pick is not None and self.saved else None
                )
                data = MemoryInput(
                    kind=kind,
                    content=content,
                    label=label,
                    supersedes=supersedes,
                    session=session[0] if session else None,
                )
                self.save(data)
            case ("approve" | "reject" as verdict, pick) if self.saved:
                decide(self.saved[pick % len(self.saved)], verdict == "approve", self.reviewer)
            case ("revoke", pick) if self.saved:
                revoke(self.saved[pick % len(self.saved)], self.reviewer)
            case ("declare", shape):
                create_agent(self.team, "wren", shape.config())
            case _:
                pass  # a decision before anything was saved

    def save(self, data: MemoryInput) -> None:
        agent = self.agent
        before = written_rows()
        found = preview_save(agent, data)
        assert written_rows() == before, "the preview wrote something"
        holder_before = (
            Promotion.objects.get(record_id=found.corroborates).status
            if found.corroborates is not None
            else None
        )
        result = save_memory(agent, data, MODEL)
        where = (found.placement.section, found.placement.key) if found.placement else None
        if isinstance(result, Conflict):
            self.seen["conflict"] += 1
            assert found.outcome == "conflict", (data, found)
            assert found.existing is not None
            assert found.existing.pk == result.existing.pk
            holder = Promotion.objects.get(record_id=result.existing.pk)
            assert where == (holder.section, holder.key)
            assert (found.reason, found.would_compose, found.fold_reason) == (None, False, None)
            return
        self.saved.append(result.id)
        promotion = Promotion.objects.get(record_id=result.id)
        if promotion.status == "corroborates":
            self.sighting(found, data, promotion, holder_before)
            return
        recorded = (
            promotion.status,
            (promotion.section, promotion.key) if promotion.section is not None else None,
            promotion.key_source,
            promotion.tier,
            promotion.reason or None,
        )
        assert (found.outcome, where, found.key_source, found.tier, found.reason) == recorded, data
        self.seen[found.reason or found.fold_reason or found.outcome] += 1
        if found.outcome == "approved":
            assert found.would_compose == in_prompt(agent, result.id), (data, found)
            assert found.fold_reason == drop_reason(agent, result.id), (data, found)
            self.check_the_budget(found, data)
        elif found.outcome == "pending":
            assert not found.would_compose
            self.approve_for_a_moment(found, result.id)
        else:
            assert (found.would_compose, found.fold_reason) == (False, None)

    def sighting(
        self, found: Preview, data: MemoryInput, promotion: Promotion, holder_before: str | None
    ) -> None:
        """A sighting (SPEC §19.1): the preview says what becomes of its holder's line,
        as the save leaves it: earned its place by this save, already composing, or
        still waiting (earning, or for a person)."""
        agent = self.agent
        holder = Promotion.objects.get(record_id=promotion.corroborates_id)
        assert found.corroborates == holder.record_id, data
        where = (found.placement.section, found.placement.key) if found.placement else None
        assert where == (promotion.section, promotion.key)
        assert found.tier == promotion.tier
        if holder.status == "approved":
            expected = ("approved", "earned" if holder_before == "pending" else None)
            assert (found.outcome, found.reason) == expected, (data, found)
            assert found.would_compose == in_prompt(agent, promotion.record_id), (data, found)
            assert found.fold_reason == drop_reason(agent, holder.record_id), (data, found)
            self.check_the_budget(found, holder.record)
            self.seen["earned" if found.reason else "corroborates-composed"] += 1
        else:
            assert (found.outcome, found.reason) == ("pending", holder.reason), (data, found)
            assert not found.would_compose
            self.seen["corroborates"] += 1

    def check_the_budget(self, found: Preview, data: MemoryInput | MemoryRecord) -> None:
        """Over budget: the line the memory needs, and what the composition now leaves."""
        assert found.budget == self.budget
        if found.fold_reason != "over-budget":
            assert (found.needed, found.left) == (None, None)
            return
        assert found.placement is not None
        line = len(found.placement.key) + len(data.content) + ENTRY_LINE_OVERHEAD
        used = composed(self.agent).report.stats.chars_used["background"]
        assert (found.needed, found.left) == (line, self.budget - used), found
        assert line > self.budget - used

    def approve_for_a_moment(self, found: Preview, record_id: str) -> None:
        """A pending preview's fold reason is what approving it now would meet."""
        savepoint = transaction.savepoint()
        try:
            decide(record_id, True, self.reviewer)
            assert in_prompt(self.agent, record_id) == (found.fold_reason is None), found
            assert drop_reason(self.agent, record_id) == found.fold_reason, found
            self.check_the_budget(found, MemoryRecord.objects.get(pk=record_id))
        finally:
            transaction.savepoint_rollback(savepoint)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    shape=SHAPE,
    budget=st.sampled_from(BUDGETS),
    steps=st.lists(STEP, min_size=2, max_size=10),
)
def test_the_preview_says_what_every_save_then_records(
    team: Team, member: User, shape: Shape, budget: int, steps: list[tuple[Any, ...]]
) -> None:
    # Each example starts from nothing: everything it writes is rolled back.
    with override_settings(MEMORY_OVERLAY_BUDGET_CHARS=budget), transaction.atomic():
        history = History(team, Actor.for_user(member), shape, budget)
        for step in steps:
            history.step(step)
        transaction.set_rollback(True)
    assert not MemoryRecord.objects.exists()


def test_the_histories_reach_every_outcome(team: Team, member: User) -> None:
    """The property's vocabulary can reach every answer: one history that does."""
    reviewer = Actor.for_user(member)
    seen: Counter[str] = Counter()
    shapes = [
        Shape("user-background", ("auto", frozenset({"name"})), ("guarded", frozenset())),
        Shape("user-background", ("locked", frozenset()), ("earned", frozenset())),
        Shape("user-background", ("auto", frozenset()), None),
        Shape(None, ("auto", frozenset()), None),
    ]
    saves = [
        ("save", "profile", "Name ", "Doug.", None),  # authored-wins
        ("save", "profile", "city", "Doug.", None),  # approved
        ("save", "profile", "city", "Lives by the sea.", None),  # conflict
        ("save", "profile", "city", "Lives by the sea.", 1),  # supersedes: approved
        ("save", "preference", "theme", "Doug.", None),  # pending or undeclared
        ("save", "episode", None, "Doug.", None),  # spec-declined
        ("save", "profile", None, "x" * 90, None),  # over-budget under 60
        # Sightings in an earned section: waiting, earning its place, then composing.
        ("save", "preference", "theme", "doug.", None, "b"),  # corroborates
        ("save", "preference", "theme", "DOUG.", None, "c"),  # earned
        ("save", "preference", "theme", "Doug.", None, "a"),  # corroborates-composed
    ]
    with override_settings(MEMORY_OVERLAY_BUDGET_CHARS=60):
        for shape in shapes:
            with transaction.atomic():
                history = History(team, reviewer, shape, 60)
                for step in saves:
                    history.step(step)
                seen.update(history.seen)
                transaction.set_rollback(True)
    assert set(seen) == {
        "approved",
        "authored-wins",
        "conflict",
        "pending",
        "over-budget",
        "spec-declined",
        "undeclared-section",
        "locked-section",
        "earning",
        "corroborates",
        "earned",
        "corroborates-composed",
    }
