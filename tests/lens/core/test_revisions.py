"""A revision's summary (SPEC §14) and its canonical config text. Pure; no database.

The properties: an identical config has an empty summary; replaying a summary's changes
on the old config — taking the named items' new values from the new config, and
nothing else — rebuilds the new config's sections and entries exactly, so no change is
left out; and nothing is named that did not change.
"""

from __future__ import annotations

import json
import random
import time
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lens.core.background import Background, BackgroundEntry, BackgroundSection
from lens.core.config import AgentConfig
from lens.core.revisions import (
    Change,
    _kept_in_order,
    canonical_config,
    config_sha256,
    indented_config,
    summarise,
)

SECTION_IDS = ["facts", "prefs", "goals", "people", "places", "style"]
KEYS = ["city", "name", "tz", "pet", "job", "diet"]
values = st.one_of(
    st.sampled_from(["Lisbon", "Porto", "", "x"]),
    st.integers(-2, 2),
    st.booleans(),
)


@st.composite
def sections(draw: st.DrawFn) -> BackgroundSection:
    section_id = draw(st.sampled_from(SECTION_IDS))
    keys = draw(st.permutations(KEYS).map(lambda k: k[: draw(st.integers(0, len(KEYS)))]))
    return BackgroundSection(
        id=section_id,
        title=draw(st.sampled_from(["Facts", "Preferences", "Other"])),
        promotion=draw(st.sampled_from(["locked", "auto", "guarded"])),
        entries=tuple(BackgroundEntry(key=key, value=draw(values)) for key in keys),
    )


@st.composite
def configs(draw: st.DrawFn) -> AgentConfig:
    drawn = draw(st.lists(sections(), max_size=len(SECTION_IDS), unique_by=lambda s: s.id))
    return AgentConfig(
        name=draw(st.sampled_from(["Wren", "Atlas"])),
        persona=draw(st.sampled_from(["", "You help."])),
        routing_spec=draw(st.sampled_from([None, "user-background", "project"])),
        recall_pinned_candidates=draw(st.booleans()),
        background=Background(sections=tuple(drawn)),
        model=draw(st.sampled_from([None, "gpt-4o", "claude-sonnet-4"])),
    )


def replay(old: AgentConfig, new: AgentConfig, summary: list[Change]) -> list[Any]:
    """``old``'s sections and entries with the summary applied: a named item takes its
    value and place from ``new``; every unnamed one keeps its value and its relative
    order from ``old``."""
    new_sections = {s.id: s for s in new.background.sections}
    named: dict[str, set[Any]] = {}
    for c in summary:
        named.setdefault(c.change, set()).add((c.section, c.key) if c.key else c.section)
    removed = named.get("section_removed", set())
    added = named.get("section_added", set())
    moved = named.get("section_moved", set())
    rebuilt: dict[str, dict[str, Any]] = {}
    for section in old.background.sections:
        if section.id in removed:
            continue
        title = (
            new_sections[section.id].title
            if section.id in named.get("section_retitled", set())
            else section.title
        )
        tier = (
            new_sections[section.id].promotion
            if section.id in named.get("section_retiered", set())
            else section.promotion
        )
        rebuilt[section.id] = {
            "title": title,
            "tier": tier,
            "entries": _entries(section, new_sections[section.id], named),
        }
    for section_id in added:
        section = new_sections[section_id]
        rebuilt[section_id] = {
            "title": section.title,
            "tier": section.promotion,
            "entries": [(e.key, type(e.value), e.value) for e in section.entries],
        }
    # Unmoved old sections keep their relative order; moved and added ones go where the
    # new config has them.
    anchored = [s.id for s in old.background.sections if s.id in rebuilt and s.id not in moved]
    assert anchored == [s.id for s in new.background.sections if s.id in anchored]
    return [(sid, rebuilt[sid]) for sid in new_sections]


def _entries(
    old: BackgroundSection, new: BackgroundSection, named: dict[str, set[Any]]
) -> list[Any]:
    new_entries = {e.key: e for e in new.entries}
    changed = {key for section, key in named.get("entry_changed", set()) if section == old.id}
    added = {key for section, key in named.get("entry_added", set()) if section == old.id}
    removed = {key for section, key in named.get("entry_removed", set()) if section == old.id}
    assert not (added & {e.key for e in old.entries})
    kept = [e for e in old.entries if e.key not in removed]
    assert {e.key for e in kept} | added == set(new_entries)
    anchored = [e.key for e in kept if e.key not in changed]
    assert anchored == [e.key for e in new.entries if e.key in anchored]
    values = {e.key: (e.key, type(e.value), e.value) for e in kept}
    for key in changed | added:
        entry = new_entries[key]
        values[key] = (key, type(entry.value), entry.value)
    return [values[e.key] for e in new.entries]


def shape(config: AgentConfig) -> list[Any]:
    return [
        (
            s.id,
            {
                "title": s.title,
                "tier": s.promotion,
                "entries": [(e.key, type(e.value), e.value) for e in s.entries],
            },
        )
        for s in config.background.sections
    ]


@given(configs())
def test_an_identical_config_has_an_empty_summary(config: AgentConfig) -> None:
    again = AgentConfig.model_validate(json.loads(canonical_config(config)))
    assert summarise(config, again) == []


@settings(max_examples=300)
@given(configs(), configs())
def test_replaying_the_summary_on_the_old_config_gives_the_new_sections_and_entries(
    old: AgentConfig, new: AgentConfig
) -> None:
    summary = summarise(old, new)
    assert replay(old, new, summary) == shape(new)
    fields = {c.field for c in summary if c.change == "field_changed"}
    assert fields == {
        name
        for name in ("name", "persona", "recall_pinned_candidates", "model")
        if getattr(old, name) != getattr(new, name)
    }
    spec = [c for c in summary if c.change == "routing_spec_changed"]
    assert (
        (spec[0].from_, spec[0].to) == (old.routing_spec, new.routing_spec)
        if spec
        else (old.routing_spec == new.routing_spec)
    )


@given(configs(), configs())
def test_nothing_unchanged_is_named(old: AgentConfig, new: AgentConfig) -> None:
    before = {s.id: s for s in old.background.sections}
    for change in summarise(old, new):
        if change.change == "section_retitled":
            assert before[change.section or ""].title != _section(new, change.section).title
        if change.change == "section_retiered":
            assert before[change.section or ""].promotion != _section(new, change.section).promotion
        if change.change == "entry_changed":
            old_entry = _entry(before[change.section or ""], change.key)
            new_entry = _entry(_section(new, change.section), change.key)
            moved = [e.key for e in before[change.section or ""].entries] != [
                e.key for e in _section(new, change.section).entries
            ]
            assert moved or (type(old_entry.value), old_entry.value) != (
                type(new_entry.value),
                new_entry.value,
            )


def _section(config: AgentConfig, section_id: str | None) -> BackgroundSection:
    return next(s for s in config.background.sections if s.id == section_id)


def _entry(section: BackgroundSection, key: str | None) -> BackgroundEntry:
    return next(e for e in section.entries if e.key == key)


def test_a_new_agent_adds_each_of_its_sections() -> None:
    config = AgentConfig(
        name="Wren",
        background=Background(sections=(BackgroundSection(id="facts", title="Facts"),)),
    )
    assert [c.as_json() for c in summarise(None, config)] == [
        {"change": "section_added", "section": "facts"}
    ]


def test_the_summary_in_the_contract_shape() -> None:
    facts = BackgroundSection(
        id="facts",
        title="Facts",
        entries=(BackgroundEntry(key="city", value="Lisbon"), BackgroundEntry(key="tz", value=1)),
    )
    prefs = BackgroundSection(id="prefs", title="Preferences", promotion="guarded")
    old = AgentConfig(
        name="Wren", routing_spec=None, background=Background(sections=(facts, prefs))
    )
    new = AgentConfig(
        name="Wren",
        persona="You help.",
        routing_spec="user-background",
        background=Background(
            sections=(
                BackgroundSection(id="prefs", title="Likes", promotion="auto"),
                BackgroundSection(
                    id="facts",
                    title="Facts",
                    entries=(
                        BackgroundEntry(key="city", value="Porto"),
                        BackgroundEntry(key="tz", value=True),  # 1 → true is a change
                        BackgroundEntry(key="pet", value="cat"),
                    ),
                ),
                BackgroundSection(id="goals", title="Goals"),
            )
        ),
    )
    assert [c.as_json() for c in summarise(old, new)] == [
        {"change": "field_changed", "field": "persona"},
        {"change": "routing_spec_changed", "from": None, "to": "user-background"},
        # Of two swapped sections, one moved (either explains the new order).
        {"change": "section_moved", "section": "prefs"},
        {"change": "section_retitled", "section": "prefs", "from": "Preferences", "to": "Likes"},
        {"change": "section_retiered", "section": "prefs"},
        {"change": "entry_changed", "section": "facts", "key": "city"},
        {"change": "entry_changed", "section": "facts", "key": "tz"},
        {"change": "entry_added", "section": "facts", "key": "pet"},
        {"change": "section_added", "section": "goals"},
    ]
    for change in summarise(old, new):
        assert Change.from_json(change.as_json()) == change


def test_the_canonical_text_is_sorted_compact_utf8_and_hashed() -> None:
    config = AgentConfig(name="Wrén")
    text = canonical_config(config)
    assert text.startswith('{"awareness":[],"background":{"sections":[]},')
    assert '"name":"Wrén"' in text
    assert config_sha256(text) == __import__("hashlib").sha256(text.encode()).hexdigest()
    assert json.loads(indented_config(config)) == json.loads(text)


# What the standard library and orjson write differently: small and large floats, integers
# beyond 64 bits, lone surrogates, control characters.
awkward_values = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([1e-07, 1.5e-05, 1e16, 1e22, -0.0, 5e-324, 2**63, 2**64, -(2**63) - 1, 2**70]),
    st.integers(),
    st.booleans(),
    st.text(),
    st.sampled_from(["\ud800", "a\x00\x1f\x7f\u2028\u2029\ufeff", '"\\/']),
)


@given(st.lists(awkward_values, max_size=8))
def test_the_texts_are_the_standard_librarys_whatever_the_values(
    entry_values: list[Any],
) -> None:
    entries = tuple(BackgroundEntry(key=f"k{i}", value=v) for i, v in enumerate(entry_values))
    section = BackgroundSection(id="facts", title="Facts", entries=entries)
    config = AgentConfig(name="Wrén", background=Background(sections=(section,)))
    data = config.model_dump(mode="json")
    assert indented_config(config) == json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False)
    assert canonical_config(config) == json.dumps(
        data, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )


def test_entry_values_are_the_only_numbers_a_config_holds() -> None:
    """The texts check only entry values for numbers orjson writes differently."""
    numbers: list[list[Any]] = []

    def walk(node: Any, path: list[Any]) -> None:
        if isinstance(node, dict):
            if node.get("type") in ("number", "integer"):
                numbers.append(path)
            for key, child in node.items():
                walk(child, [*path, key])
        elif isinstance(node, list):
            for i, child in enumerate(node):
                walk(child, [*path, i])

    walk(AgentConfig.model_json_schema(mode="serialization"), [])
    assert numbers
    assert all(path[:4] == ["$defs", "BackgroundEntry", "properties", "value"] for path in numbers)


@given(st.lists(st.integers(0, 50), unique=True))
def test_the_kept_order_is_a_longest_increasing_run(positions: list[int]) -> None:
    kept = _kept_in_order(positions)
    in_order = [p for p in positions if p in kept]
    assert in_order == sorted(in_order)
    # No longer increasing run exists (quadratic check on small inputs).
    best = [1] * len(positions)
    for i in range(len(positions)):
        for j in range(i):
            if positions[j] < positions[i]:
                best[i] = max(best[i], best[j] + 1)
    assert len(kept) == max(best, default=0)


def _reversed_configs(count: int) -> tuple[AgentConfig, AgentConfig]:
    # The slowest order for moves: every section reversed, half of them shuffled.
    sections = tuple(
        BackgroundSection(
            id=f"s{i}",
            title="T",
            entries=tuple(BackgroundEntry(key=f"k{j}", value=j) for j in range(5)),
        )
        for i in range(count)
    )
    old = AgentConfig(name="A", background=Background(sections=sections))
    shuffled = list(reversed(sections))
    random.Random(7).shuffle(shuffled[: count // 2])
    return old, AgentConfig(name="A", background=Background(sections=tuple(shuffled)))


def _fastest_summary(count: int) -> float:
    old, new = _reversed_configs(count)
    timings = []
    for _ in range(9):
        began = time.perf_counter()
        summary = summarise(old, new)
        timings.append(time.perf_counter() - began)
    assert len(summary) >= count // 2
    return min(timings)


def test_a_summary_of_thousands_of_sections_takes_linearithmic_time() -> None:
    # Measured as a ratio in one run (the fastest of nine each), so a busy machine slows
    # both sizes alike: four times the sections take about five times as long (n log n;
    # 4.9-5.0x measured idle); a quadratic summary would take sixteen times. The bound
    # leaves room for the other test worker taking a core during the larger run.
    small, large = _fastest_summary(2_000), _fastest_summary(8_000)
    assert large / small < 10.0, (small, large)
    assert large < 10.0, large  # and never pathological
