"""What-if's pure half (SPEC §18.2): an empty change (the same order, the same spec, a
decision that does not move the memory's status) changes nothing, and the fates two
compositions disagree on are exactly those that differ."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from lens.core.config import AgentConfig
from lens.core.counts import Counts
from lens.core.prompt import Prompt, PromptTokens
from lens.core.render import render_sections
from memory.core.composition import Composition
from memory.core.overlay import apply_memory_overlay
from memory.core.report import PromotionState, routing_report
from memory.core.routing import PlacedRecord
from memory.core.what_if import (
    COMPOSED,
    DECISIONS,
    LEAVES,
    MOVES_FROM,
    DecisionChange,
    MemoryFate,
    Now,
    OrderChange,
    PromptFigures,
    Replay,
    SpecChange,
    WhatIf,
    changed_config,
    decided,
    effect_phrases,
    fate_changes,
    fates_of,
    in_order,
    order_problem,
    stability_sentence,
)

ids = st.lists(st.from_regex(r"[a-z][a-z0-9]{0,5}", fullmatch=True), unique=True, max_size=8)
STATUSES = ("pending", "approved", "rejected", "revoked", "declined", "superseded", "erased")


def config_of(section_ids: list[str], spec: str | None = "user-background") -> AgentConfig:
    sections = [
        {"id": s, "title": s.title(), "entries": [{"key": "k", "value": s}]} for s in section_ids
    ]
    return AgentConfig.model_validate(
        {"name": "Wren", "routing_spec": spec, "background": {"sections": sections}}
    )


@given(ids)
def test_the_current_order_changes_nothing(section_ids: list[str]) -> None:
    config = config_of(section_ids)
    assert order_problem(section_ids, section_ids) is None
    assert changed_config(config, OrderChange(tuple(section_ids))) is config


@given(ids, st.sampled_from([None, "user-background", "x"]))
def test_the_same_spec_changes_nothing(section_ids: list[str], spec: str | None) -> None:
    config = config_of(section_ids, spec)
    assert changed_config(config, SpecChange(spec)) is config
    other = "project" if spec != "project" else None
    assert changed_config(config, SpecChange(other)).routing_spec == other


@given(ids.flatmap(lambda found: st.tuples(st.just(found), st.permutations(found))))
def test_any_permutation_is_an_order_and_puts_the_sections_in_it(
    pair: tuple[list[str], list[str]],
) -> None:
    current, order = pair
    assert order_problem(current, order) is None
    moved = changed_config(config_of(current), OrderChange(tuple(order)))
    assert [section.id for section in moved.background.sections] == order


@given(ids.filter(bool), st.data())
def test_an_order_that_leaves_out_repeats_or_invents_a_section_is_refused(
    current: list[str], data: st.DataObject
) -> None:
    dropped = data.draw(st.sampled_from(current))
    assert order_problem(current, [s for s in current if s != dropped]) is not None
    assert order_problem(current, [*current, dropped]) is not None
    assert order_problem(current, [*current, "zz-not-declared"]) is not None


@given(ids, ids)
def test_sections_an_order_does_not_name_keep_their_order_after_it(
    named: list[str], past: list[str]
) -> None:
    background = config_of(past).background
    moved = [section.id for section in in_order(background, named).sections]
    assert sorted(moved) == sorted(past)
    known = [s for s in named if s in past]
    assert moved == known + [s for s in past if s not in named]


@given(st.sampled_from(STATUSES), st.sampled_from(DECISIONS))
def test_a_decision_moves_only_the_statuses_it_moves_from(status: str, decision: str) -> None:
    change = DecisionChange("m1", decision)  # type: ignore[arg-type]  # one of DECISIONS
    moved = decided(status, change)
    if status in MOVES_FROM[change.decision]:
        assert moved == LEAVES[change.decision]
    else:
        assert moved == status


MOMENT = datetime(2026, 1, 1, tzinfo=UTC)


def composition(
    config: AgentConfig, placed: list[PlacedRecord], states: list[PromotionState]
) -> Composition:
    background, fold = apply_memory_overlay(config.background, placed, None, 3000)
    prompt = Prompt(sections=render_sections(config, background))
    return Composition(
        agent="wren",
        spec=None,
        background=background,
        prompt=prompt,
        report=routing_report(states, fold, set()),
        counts=Counts.of(config.background, background),
        tokens=PromptTokens.of(prompt),
    )


def record(n: int, section: str) -> PlacedRecord:
    return PlacedRecord(f"m{n}", "profile", f"fact {n}", MOMENT, section, f"key{n}")


# The first example loads the token encoding.
@settings(deadline=None)
@given(st.lists(st.sampled_from(STATUSES), max_size=6), st.data())
def test_fates_differ_exactly_where_a_memory_moves_in_or_out(
    statuses: list[str], data: st.DataObject
) -> None:
    config = config_of(["about"])
    records = [record(n, "about") for n in range(len(statuses))]
    states = [PromotionState(f"m{n}", status) for n, status in enumerate(statuses)]
    before = composition(
        config, [r for r, s in zip(records, statuses, strict=True) if s == "approved"], states
    )
    assert fate_changes(before, before) == ()
    if not statuses:
        return
    n = data.draw(st.integers(0, len(statuses) - 1))
    decision = data.draw(st.sampled_from(DECISIONS))
    change = DecisionChange(f"m{n}", decision)
    moved = [decided(s, change) if i == n else s for i, s in enumerate(statuses)]
    after = composition(
        config,
        [r for r, s in zip(records, moved, strict=True) if s == "approved"],
        [PromotionState(f"m{i}", s) for i, s in enumerate(moved)],
    )
    changes = fate_changes(before, after)
    was, now = fates_of(before), fates_of(after)
    assert {fate.memory_id for fate in changes} == {m for m in was if was[m] != now[m]}
    assert all(fate.memory_id == f"m{n}" for fate in changes)
    assert bool(changes) == (moved[n] != statuses[n])


# --- in words ------------------------------------------------------------------------


def _found(
    changed: int,
    deliveries: int,
    before: float | None,
    after: float | None,
    fates: tuple[MemoryFate, ...] = (),
    tokens: tuple[int, int] = (100, 100),
) -> WhatIf:
    figures = [PromptFigures(n, "0" * 64) for n in tokens]
    return WhatIf(
        Now(figures[0], figures[1], "", fates),
        Replay(deliveries, changed, 0.0 if deliveries else None, before, after),
    )


def test_the_stability_card_says_it_as_the_spec_does() -> None:
    assert stability_sentence(_found(12, 50, 3210.4, 1004.0)) == (
        "would have changed 12 of the last 50 prompts; cached prefix 3,210 → 1,004 tokens"
    )
    # One delivery has no pair to share a prefix; none has nothing to replay.
    assert stability_sentence(_found(1, 1, None, None)) == (
        "would have changed 1 of the last 1 prompt"
    )
    assert stability_sentence(_found(0, 0, None, None)) == (
        "would have changed no prompt: none delivered yet"
    )


def test_a_queue_rows_phrases_say_what_enters_and_what_stays_out() -> None:
    fates = (
        MemoryFate("m1", "awaiting-approval", "awaiting-approval"),
        MemoryFate("m2", "over-budget", COMPOSED),
        MemoryFate("m3", "reconciled", COMPOSED),
        MemoryFate("m4", COMPOSED, "over-budget"),
    )
    found = _found(12, 50, 10.0, 10.0, fates, (1000, 2018))
    assert effect_phrases(found, "m1") == [
        "+1,018 tokens",
        "stays out (awaiting-approval)",
        "pushes out 1 memory",
        "brings in 2 memories",
        "12 of the last 50 prompts would change",
    ]
    fewer = _found(1, 1, None, None, fates[3:], (50, 22))
    assert effect_phrases(fewer) == [
        "\u221228 tokens",
        "pushes out 1 memory",
        "1 of the last 1 prompt would change",
    ]
