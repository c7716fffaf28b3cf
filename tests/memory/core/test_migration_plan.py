"""The migration plan (``memory.core.migration``, SPEC §18.3): pure rows in, moves out.

The properties are checked against a pure model of promotion rows: applying a plan's
moves to the rows and asking again leaves only its conflicts, unchanged; the plan does
not depend on the rows' order; and no move takes an address someone keeps.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from lens.core.background import Tier
from memory.core.migration import Address, CommittedRow, Plan, plan
from memory.core.presets import PresetSpec, derive_key
from memory.core.routing import DeclaredSection, RoutableRecord, RoutingContext

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def ctx(**tiers: Tier) -> RoutingContext:
    return RoutingContext(
        sections=tuple(
            DeclaredSection(id=s, title=s.title(), promotion=t) for s, t in tiers.items()
        )
    )


def spec(version: str = "2", **routes: str) -> PresetSpec:
    return PresetSpec(key="probe", version=version, sections=(), routes=routes)


def row(
    n: int,
    kind: str,
    section: str | None,
    status: str = "approved",
    label: str | None = "name",
    content: str = "x",
) -> CommittedRow:
    key = derive_key(RoutableRecord(kind=kind, content=content, label=label))[0]
    return CommittedRow(
        memory_id=f"m{n:03d}",
        created_at=T0 + timedelta(seconds=n),
        kind=kind,
        content=content,
        tags=(),
        label=label,
        address=None if section is None else Address(section, key),
        status=status,
    )


def test_a_renamed_section_moves_its_memories_with_the_new_tier() -> None:
    rows = [row(1, "profile", "about"), row(2, "profile", "about", label="city")]
    found = plan(rows, spec(profile="profile"), ctx(profile="guarded"))
    assert [m.as_json() for m in found.moves] == [
        {
            "memory_id": "m001",
            "from": {"section": "about", "key": "name"},
            "to": {"section": "profile", "key": "name"},
            "tier": "guarded",
            "outcome": "pending",
        },
        {
            "memory_id": "m002",
            "from": {"section": "about", "key": "city"},
            "to": {"section": "profile", "key": "city"},
            "tier": "guarded",
            "outcome": "pending",
        },
    ]


def test_memories_already_where_the_spec_puts_them_do_not_move() -> None:
    rows = [row(1, "profile", "profile"), row(2, "note", None, status="declined")]
    assert plan(rows, spec(profile="profile"), ctx(profile="auto")).moves == ()


def test_a_declined_memory_the_spec_now_places_moves_into_an_auto_section() -> None:
    rows = [row(1, "note", None, status="declined")]
    (move,) = plan(rows, spec(note="notes"), ctx(notes="auto")).moves
    assert (move.source, move.target, move.outcome) == (None, Address("notes", "name"), "approved")


def test_a_declined_memory_whose_section_is_now_declared_moves_in_place() -> None:
    rows = [row(1, "note", "notes", status="declined")]
    (move,) = plan(rows, spec(note="notes"), ctx(notes="auto")).moves
    assert move.source == move.target
    assert move.outcome == "approved"


def test_a_declined_memory_that_would_be_declined_again_stays() -> None:
    rows = [row(1, "note", "notes", status="declined")]
    assert plan(rows, spec(note="notes"), ctx(notes="locked")).moves == ()


def test_locked_and_removed_sections_decline_and_a_declining_spec_moves_to_nowhere() -> None:
    rows = [row(1, "a", "old"), row(2, "b", "old", label="b"), row(3, "c", "x", label="c")]
    found = plan(rows, spec(a="locked_one", b="gone"), ctx(locked_one="locked", x="auto"))
    assert [(m.memory_id, m.outcome, m.reason, m.tier) for m in found.moves] == [
        ("m001", "declined", "locked-section", "locked"),
        ("m002", "declined", "undeclared-section", None),
        ("m003", "declined", "spec-declined", None),
    ]
    assert found.moves[2].target is None


def test_a_holder_that_stays_makes_a_move_into_its_address_a_conflict() -> None:
    rows = [row(1, "profile", "profile"), row(2, "profile", "about")]
    (move,) = plan(rows, spec(profile="profile"), ctx(profile="auto")).moves
    assert (move.memory_id, move.outcome) == ("m002", "conflict")


def test_of_two_moves_to_one_address_the_older_wins() -> None:
    rows = [row(2, "b", "old_b"), row(1, "a", "old_a")]
    found = plan(rows, spec(a="s", b="s"), ctx(s="auto"))
    assert [(m.memory_id, m.outcome) for m in found.moves] == [
        ("m001", "approved"),
        ("m002", "conflict"),
    ]


def test_a_chain_of_moves_frees_each_address_for_the_next() -> None:
    # m1 moves into x, which m2 leaves for y: both move.
    rows = [row(1, "a", "w"), row(2, "b", "x")]
    found = plan(rows, spec(a="x", b="y"), ctx(x="auto", y="auto", w="auto"))
    assert [m.outcome for m in found.moves] == ["approved", "approved"]


def test_a_conflict_keeps_its_address_and_blocks_the_move_into_it() -> None:
    # m2 cannot move into z (held by m3, which stays); so m2 keeps x, and m1 cannot move there.
    rows = [row(1, "a", "w"), row(2, "b", "x"), row(3, "c", "z")]
    found = plan(rows, spec(a="x", b="z", c="z"), ctx(x="auto", z="auto", w="auto"))
    assert [(m.memory_id, m.outcome) for m in found.moves] == [
        ("m001", "conflict"),
        ("m002", "conflict"),
    ]


def test_a_declined_move_never_conflicts_and_a_declined_holder_holds_nothing() -> None:
    rows = [row(1, "a", "s", status="declined"), row(2, "a", "old")]
    found = plan(rows, spec(a="s"), ctx(s="auto"))
    assert [(m.memory_id, m.outcome) for m in found.moves] == [
        ("m001", "approved"),
        ("m002", "conflict"),
    ]


def test_a_held_memory_whose_section_was_removed_or_locked_is_declined_in_place() -> None:
    rows = [row(1, "a", "gone"), row(2, "b", "shut", label="b", status="pending")]
    found = plan(rows, spec(a="gone", b="shut"), ctx(shut="locked"))
    assert [(m.memory_id, m.outcome, m.reason) for m in found.moves] == [
        ("m001", "declined", "undeclared-section"),
        ("m002", "declined", "locked-section"),
    ]
    assert all(m.source == m.target for m in found.moves)


def test_a_tier_between_auto_and_guarded_moves_nothing() -> None:
    rows = [row(1, "a", "s", status="pending"), row(2, "b", "t", label="b")]
    assert plan(rows, spec(a="s", b="t"), ctx(s="auto", t="guarded")).moves == ()


def test_no_spec_means_no_plan() -> None:
    assert plan([row(1, "a", "s")], None, ctx(s="auto")).moves == ()


def test_the_hash_covers_the_spec_version_and_every_move() -> None:
    rows = [row(1, "profile", "about")]
    one = plan(rows, spec("2", profile="profile"), ctx(profile="auto"))
    two = plan(rows, spec("3", profile="profile"), ctx(profile="auto"))
    three = plan(rows, spec("2", profile="profile"), ctx(profile="guarded"))
    assert len({one.sha256, two.sha256, three.sha256}) == 3
    assert len(one.sha256) == 64


# --- properties against a model of rows ------------------------------------------------

KINDS = ("a", "b", "c", "d")
SECTIONS = ("s1", "s2", "s3", "s4")
LABELS = ("k1", "k2", None)
TIERS: tuple[Tier, ...] = ("auto", "guarded", "locked", "earned")


@st.composite
def worlds(draw: st.DrawFn) -> tuple[list[CommittedRow], PresetSpec, RoutingContext]:
    n = draw(st.integers(0, 24))
    rows: list[CommittedRow] = []
    held: set[str] = set()
    for i in range(n):
        kind = draw(st.sampled_from(KINDS))
        section = draw(st.one_of(st.none(), st.sampled_from(SECTIONS)))
        status = draw(st.sampled_from(("approved", "pending", "declined", "rejected")))
        label = draw(st.sampled_from(LABELS))
        content = draw(st.sampled_from(("x", "y", "z")))
        found = row(i, kind, section, status, label, content)
        if section is None and status in ("approved", "pending"):
            found = replace(found, status="declined")
        if (address := found.holds) is not None:
            if address in held:  # the gate let one holder per address
                found = replace(found, status="declined")
            else:
                held.add(address)
        rows.append(found)
    routes = draw(st.dictionaries(st.sampled_from(KINDS), st.sampled_from(SECTIONS)))
    tiers = draw(st.dictionaries(st.sampled_from(SECTIONS[:3]), st.sampled_from(TIERS)))
    return rows, spec(**routes), ctx(**tiers)


def applied(rows: list[CommittedRow], found: Plan) -> list[CommittedRow]:
    """The rows after a plan's moves, as ``memory.migration`` commits them."""
    moves = {m.memory_id: m for m in found.moves if m.moves}
    return [
        replace(r, address=moves[r.memory_id].target, status=moves[r.memory_id].outcome)
        if r.memory_id in moves
        else r
        for r in rows
    ]


@settings(max_examples=300, deadline=None)
@given(worlds())
def test_applying_a_plan_then_asking_again_leaves_only_its_conflicts(
    world: tuple[list[CommittedRow], PresetSpec, RoutingContext],
) -> None:
    rows, routing, declared = world
    first = plan(rows, routing, declared)
    again = plan(applied(rows, first), routing, declared)
    conflicts = [m.as_json() for m in first.moves if not m.moves]
    assert [m.as_json() for m in again.moves] == conflicts
    # With nothing left to move, the plan is empty after all.
    assert all(m.outcome == "conflict" for m in again.moves)


@settings(max_examples=300, deadline=None)
@given(worlds(), st.randoms(use_true_random=False))
def test_the_plan_does_not_depend_on_the_rows_order(
    world: tuple[list[CommittedRow], PresetSpec, RoutingContext], shuffler: random.Random
) -> None:
    rows, routing, declared = world
    shuffled = list(rows)
    shuffler.shuffle(shuffled)
    assert plan(shuffled, routing, declared) == plan(rows, routing, declared)
    assert plan(shuffled, routing, declared).sha256 == plan(rows, routing, declared).sha256


@settings(max_examples=300, deadline=None)
@given(worlds())
def test_no_move_goes_to_an_address_held_after_it(
    world: tuple[list[CommittedRow], PresetSpec, RoutingContext],
) -> None:
    rows, routing, declared = world
    after = applied(rows, plan(rows, routing, declared))
    holders = Counter(address for r in after if (address := r.holds) is not None)
    assert all(count == 1 for count in holders.values())


@given(st.text(), st.text())
def test_an_address_key_is_the_placement_key_json(section: str, key: str) -> None:
    import json

    from memory.core.routing import address_key

    expected = json.dumps([section, key], ensure_ascii=False, separators=(",", ":"))
    assert address_key(section, key) == expected
