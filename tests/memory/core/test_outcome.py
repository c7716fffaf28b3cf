"""Where a placement leads (``memory.core.outcome``): the one rule from a section's tier
to a promotion outcome (SPEC §5.4), shared by saving, the fold and the preview.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lens.core.background import TIERS, Background, BackgroundEntry, BackgroundSection, Tier
from lens.core.identity import key_skeleton
from memory.core.outcome import Outcome, route_outcome, tier_block
from memory.core.overlay import apply_memory_overlay
from memory.core.routing import DeclaredSection, PlacedRecord, Placement, RoutingContext

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def context(**tiers: Tier) -> RoutingContext:
    return RoutingContext(
        sections=tuple(
            DeclaredSection(id=section_id, title=section_id.title(), promotion=tier)
            for section_id, tier in tiers.items()
        )
    )


def at(section: str, key: str = "name") -> Placement:
    return Placement(section=section, key=key)


# --- tier_block ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tier", "reason"),
    [
        ("locked", "locked-section"),
        ("earned", None),
        ("guarded", None),
        ("auto", None),
        (None, "undeclared-section"),
    ],
)
def test_tier_block_names_why_memory_may_not_fill_a_section(
    tier: Tier | None, reason: str | None
) -> None:
    assert tier_block(tier) == reason


def test_tier_block_covers_every_tier() -> None:
    assert {tier: tier_block(tier) for tier in TIERS} == {
        "locked": "locked-section",
        "guarded": None,
        "earned": None,
        "auto": None,
    }


# --- route_outcome ---------------------------------------------------------------------


def test_no_placement_is_declined_by_the_spec() -> None:
    assert route_outcome(None, context(notes="auto")) == Outcome("declined", "spec-declined", None)


def test_no_placement_is_declined_by_the_spec_even_without_sections() -> None:
    assert route_outcome(None, RoutingContext()) == Outcome("declined", "spec-declined", None)


def test_a_placement_in_an_undeclared_section_is_declined_without_a_tier() -> None:
    outcome = route_outcome(at("elsewhere"), context(notes="auto"))
    assert outcome == Outcome("declined", "undeclared-section", None)


def test_a_locked_section_declines_and_records_the_tier() -> None:
    assert route_outcome(at("notes"), context(notes="locked")) == Outcome(
        "declined", "locked-section", "locked"
    )


def test_an_earned_section_waits_for_its_sightings_and_records_the_tier() -> None:
    assert route_outcome(at("notes"), context(notes="earned")) == Outcome(
        "pending", "earning", "earned"
    )


def test_a_guarded_section_waits_for_a_person() -> None:
    assert route_outcome(at("notes"), context(notes="guarded")) == Outcome(
        "pending", None, "guarded"
    )


def test_an_auto_section_approves_at_once() -> None:
    assert route_outcome(at("notes"), context(notes="auto")) == Outcome("approved", None, "auto")


def test_the_outcome_reads_the_tier_of_the_named_section_only() -> None:
    ctx = context(rules="locked", notes="auto", later="earned")
    assert route_outcome(at("notes"), ctx).status == "approved"
    assert route_outcome(at("rules"), ctx).reason == "locked-section"
    assert route_outcome(at("later"), ctx).reason == "earning"


# --- the save-time outcome and the fold agree ------------------------------------------

section_ids = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)
keys = st.text(min_size=1, max_size=12)
tiers_or_none = st.one_of(st.none(), st.sampled_from(TIERS))


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[Background, Tier | None, PlacedRecord]:
    """A Background in which section ``target`` has the drawn tier (None: undeclared),
    other sections around it, and a record placed in ``target`` at a key no authored
    entry of it holds.
    """
    target = draw(section_ids)
    tier = draw(tiers_or_none)
    others = draw(
        st.dictionaries(
            section_ids.filter(lambda s: s != target), st.sampled_from(TIERS), max_size=3
        )
    )
    # Keys are one name when their confusable skeletons match ("0" and "O"): the
    # memory's key must not name an authored entry, or authored-wins applies.
    authored = draw(st.lists(keys, max_size=4, unique_by=key_skeleton))
    taken = {key_skeleton(k) for k in authored}
    key = draw(keys.filter(lambda k: key_skeleton(k) not in taken))
    sections = [
        BackgroundSection(id=section_id, title=section_id, promotion=other_tier)
        for section_id, other_tier in others.items()
    ]
    if tier is not None:
        entries = tuple(BackgroundEntry(key=k, value=f"authored {k}") for k in authored)
        position = draw(st.integers(0, len(sections)))
        sections.insert(
            position,
            BackgroundSection(id=target, title="Target", promotion=tier, entries=entries),
        )
    record = PlacedRecord(
        id=draw(st.from_regex(r"[0-9a-z]{1,18}", fullmatch=True)),
        kind=draw(st.from_regex(r"[a-z][a-z0-9_-]{0,8}", fullmatch=True)),
        content=draw(st.text(max_size=40)),
        created_at=T0 + timedelta(seconds=draw(st.integers(0, 10**6))),
        section=target,
        key=key,
    )
    return Background(sections=tuple(sections)), tier, record


def declarations(background: Background) -> RoutingContext:
    return RoutingContext(
        sections=tuple(
            DeclaredSection(id=s.id, title=s.title, promotion=s.promotion)
            for s in background.sections
        )
    )


@given(scenarios())
def test_the_fold_drops_a_placed_record_exactly_when_saving_would_decline_it(
    scenario: tuple[Background, Tier | None, PlacedRecord],
) -> None:
    background, tier, record = scenario
    outcome = route_outcome(
        Placement(section=record.section, key=record.key), declarations(background)
    )
    composed, report = apply_memory_overlay(background, [record], budget_chars=10**9)

    drops = {drop.memory_id: drop.reason for drop in report.drops}
    carried = [
        entry
        for section in composed.sections
        for entry in section.entries
        if record.id in entry.memory_ids
    ]
    assert outcome.tier == tier
    if outcome.status == "declined":
        assert outcome.reason == tier_block(tier)
        assert drops == {record.id: tier_block(tier)}
        assert carried == []
    else:
        assert tier_block(tier) is None
        assert drops == {}
        assert [(entry.key, entry.value) for entry in carried] == [(record.key, record.content)]
        (home,) = [s for s in composed.sections if record.id in _ids(s)]
        assert home.id == record.section


def _ids(section: BackgroundSection) -> set[str]:
    return {memory_id for entry in section.entries for memory_id in entry.memory_ids}
