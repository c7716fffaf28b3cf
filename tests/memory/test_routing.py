"""Placement, routing specs and the presets (SPEC §5.2, §5.3), without a database."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from lens.core.background import BackgroundSection
from memory.core.presets import PROJECT, USER_BACKGROUND, PresetSpec, content_key, derive_key, slug
from memory.core.routing import (
    DeclaredSection,
    PlacedRecord,
    Placement,
    RoutableRecord,
    RoutingContext,
    RoutingSpec,
    classify_then_route,
    evaluate,
    placement_key,
    spec_key_source,
    spec_reconcile,
    spec_render_entry,
)
from tests.event_loops import run_async

TRICKY = st.text(alphabet=st.sampled_from(['"', ",", "]", "[", "\\", "a", "b", " ", "\n"]))
ANY_PART = st.one_of(TRICKY, st.text())


def record(kind: str = "fact", content: str = "c", label: str | None = None) -> RoutableRecord:
    return RoutableRecord(kind=kind, content=content, label=label)


def context(*sections: tuple[str, str]) -> RoutingContext:
    return RoutingContext(
        sections=tuple(
            DeclaredSection(id=sid, title=sid.title(), promotion=tier) for sid, tier in sections
        )
    )


@dataclass
class FixedSpec:
    """A spec whose route returns whatever it was given, and remembers what it saw."""

    returns: Any
    key: str = "fixed"
    version: str = "1"

    def __post_init__(self) -> None:
        self.seen: list[tuple[RoutableRecord, RoutingContext]] = []

    def route(self, record: RoutableRecord, ctx: RoutingContext) -> Any:
        self.seen.append((record, ctx))
        return self.returns


# --- placement_key --------------------------------------------------------------------


def test_placement_key_is_the_json_text_of_section_and_key() -> None:
    text = placement_key(Placement(section="user_profile", key="name"))
    assert json.loads(text) == ["user_profile", "name"]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (("a,b", "c"), ("a", "b,c")),
        (('a","b', "c"), ("a", 'b","c')),
        (("a]", "b"), ("a", "]b")),
        (("a\\", "b"), ("a", "\\b")),
        (('a\\",\\"', "b"), ("a", '\\",\\"b')),
        (("a", "b c"), ("a b", "c")),
    ],
)
def test_placement_key_cannot_be_forged_with_separators(
    first: tuple[str, str], second: tuple[str, str]
) -> None:
    one = placement_key(Placement(section=first[0], key=first[1]))
    two = placement_key(Placement(section=second[0], key=second[1]))
    assert one != two
    assert json.loads(one) == list(first)
    assert json.loads(two) == list(second)


@settings(max_examples=200, deadline=None)
@given(
    st.tuples(ANY_PART.filter(bool), ANY_PART.filter(bool)),
    st.tuples(ANY_PART.filter(bool), ANY_PART.filter(bool)),
)
def test_placement_key_is_injective(first: tuple[str, str], second: tuple[str, str]) -> None:
    one = placement_key(Placement(section=first[0], key=first[1]))
    two = placement_key(Placement(section=second[0], key=second[1]))
    assert (one == two) == (first == second)
    assert json.loads(one) == list(first)


def test_placed_record_placement_key_matches_its_placement() -> None:
    placed = PlacedRecord(
        id="a1", kind="fact", content="c", created_at=datetime.now(UTC), section="s", key='k",'
    )
    assert placed.placement_key == placement_key(Placement(section="s", key='k",'))


# --- Placement ------------------------------------------------------------------------


def test_placement_defaults_to_the_background_primitive() -> None:
    assert Placement(section="s", key="k").primitive == "background"


@pytest.mark.parametrize(
    "data",
    [
        {"section": "", "key": "k"},
        {"section": "s", "key": ""},
        {"section": "s"},
        {"key": "k"},
        {"primitive": "recall", "section": "s", "key": "k"},
        {"primitive": "Background", "section": "s", "key": "k"},
        {"primitive": "", "section": "s", "key": "k"},
        {"section": "s", "key": "k", "target": "elsewhere"},
    ],
)
def test_placement_refuses_an_invalid_shape(data: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Placement.model_validate(data)


# --- evaluate ---------------------------------------------------------------------------


def test_evaluate_returns_none_when_the_spec_declines() -> None:
    assert evaluate(FixedSpec(None), record(), context()) is None


def test_evaluate_returns_a_valid_placement_unchanged() -> None:
    placement = Placement(section="s", key="k")
    assert evaluate(FixedSpec(placement), record(), context()) == placement


def test_evaluate_validates_a_placement_given_as_a_mapping() -> None:
    result = evaluate(FixedSpec({"section": "s", "key": "k"}), record(), context())
    assert result == Placement(section="s", key="k")


@dataclass
class LookAlike:
    section: str
    key: str
    primitive: str = "background"


@pytest.mark.parametrize(
    "returned",
    [
        {"section": "", "key": "k"},
        {"section": "s", "key": ""},
        {"primitive": "recall", "section": "s", "key": "k"},
        {"section": "s", "key": "k", "target": "x"},
        LookAlike(section="s", key=""),
        LookAlike(section="s", key="k", primitive="recall"),
        Placement.model_construct(primitive="background", section="", key="k"),
        Placement.model_construct(primitive="recall", section="s", key="k"),  # type: ignore[arg-type]  # invalid on purpose: evaluate must refuse it
        "user_profile",
        ("s", "k"),
        42,
    ],
)
def test_evaluate_raises_when_the_spec_returns_an_invalid_placement(returned: object) -> None:
    with pytest.raises(ValidationError):
        evaluate(FixedSpec(returned), record(), context())


def test_evaluate_passes_the_record_and_context_to_route() -> None:
    spec = FixedSpec(None)
    ctx = context(("s", "auto"))
    candidate = record(kind="profile", label="name")
    evaluate(spec, candidate, ctx)
    assert spec.seen == [(candidate, ctx)]


# --- RoutingContext -------------------------------------------------------------------


def test_routing_context_holds_section_declarations_only() -> None:
    ctx = context(("user_profile", "auto"), ("notes", "guarded"))
    assert list(RoutingContext.model_fields) == ["sections"]
    assert list(DeclaredSection.model_fields) == ["id", "title", "promotion"]
    assert not hasattr(ctx, "entries")
    assert all(not hasattr(section, "entries") for section in ctx.sections)
    assert ctx.section("notes") == DeclaredSection(id="notes", title="Notes", promotion="guarded")
    assert ctx.section("missing") is None


def test_routing_context_built_from_a_section_with_entries_keeps_no_entries() -> None:
    authored = BackgroundSection.model_validate(
        {"id": "s", "title": "S", "promotion": "auto", "entries": [{"key": "k", "value": "v"}]}
    )
    declaration = DeclaredSection.model_validate(authored, from_attributes=True)
    assert declaration.model_dump() == {"id": "s", "title": "S", "promotion": "auto"}


def test_routing_context_is_frozen() -> None:
    ctx = context(("s", "auto"))
    with pytest.raises(ValidationError):
        ctx.sections = ()  # type: ignore[misc]  # frozen: the assignment must raise


# --- optional hooks and their defaults ------------------------------------------------


def test_spec_key_source_defaults_to_label_exactly_when_there_is_a_label() -> None:
    spec = FixedSpec(None)
    assert spec_key_source(spec, record(label="name")) == "label"
    assert spec_key_source(spec, record(label=None)) == "content"
    assert spec_key_source(spec, record(label="")) == "content"


def test_spec_key_source_uses_the_spec_hook_when_present() -> None:
    class ContentOnly(FixedSpec):
        def key_source(self, record: RoutableRecord) -> str:
            return "content"

    assert spec_key_source(ContentOnly(None), record(label="name")) == "content"


def test_spec_render_entry_defaults_to_the_content() -> None:
    placed = PlacedRecord(
        id="a", kind="fact", content="body", created_at=datetime.now(UTC), section="s", key="k"
    )
    assert spec_render_entry(None, placed) == "body"
    assert spec_render_entry(FixedSpec(None), placed) == "body"
    assert spec_reconcile(FixedSpec(None)) is None


# --- classify_then_route --------------------------------------------------------------


def test_classify_then_route_is_an_async_helper() -> None:
    assert inspect.iscoroutinefunction(classify_then_route)


def test_classify_then_route_keeps_the_spec_placement_whatever_the_signals_say() -> None:
    chosen = Placement(section="notes", key="k")
    spec = FixedSpec(chosen)
    records = [record(kind="profile", content="one"), record(kind="fact", content="two")]

    async def classify(candidate: RoutableRecord) -> Sequence[str]:
        await asyncio.sleep(0)
        return ["section:user_profile", "key:name", "placement", candidate.content]

    results = run_async(classify_then_route, records, context(), spec, classify)
    assert [(r, p) for r, p, _ in results] == [(records[0], chosen), (records[1], chosen)]
    assert [signals for _, _, signals in results] == [
        ("section:user_profile", "key:name", "placement", "one"),
        ("section:user_profile", "key:name", "placement", "two"),
    ]


def test_classify_then_route_never_turns_a_decline_into_a_placement() -> None:
    async def classify(candidate: RoutableRecord) -> Sequence[str]:
        return [json.dumps({"section": "user_profile", "key": "name"})]

    results = run_async(
        classify_then_route,
        [record()],
        context(("user_profile", "auto")),
        FixedSpec(None),
        classify,
    )
    assert results == [(record(), None, ('{"section": "user_profile", "key": "name"}',))]


def test_classify_then_route_raises_on_an_invalid_placement_like_evaluate() -> None:
    async def classify(candidate: RoutableRecord) -> Sequence[str]:
        return []

    spec = FixedSpec({"section": "", "key": "k"})
    with pytest.raises(ValidationError):
        run_async(classify_then_route, [record()], context(), spec, classify)


# --- presets --------------------------------------------------------------------------


def test_presets_are_routing_specs() -> None:
    assert isinstance(USER_BACKGROUND, RoutingSpec)
    assert isinstance(PROJECT, RoutingSpec)
    assert USER_BACKGROUND.key == "user-background"
    assert PROJECT.key == "project"


def test_user_background_declares_its_two_sections() -> None:
    assert [(s.id, s.title, s.promotion) for s in USER_BACKGROUND.sections] == [
        ("user_profile", "About the User", "auto"),
        ("user_preferences", "User Preferences", "guarded"),
    ]


def test_project_declares_its_four_sections() -> None:
    assert [(s.id, s.title, s.promotion) for s in PROJECT.sections] == [
        ("team_context", "Team Context", "locked"),
        ("project_context", "Project Context", "guarded"),
        ("conventions", "Conventions", "guarded"),
        ("project_state", "Project State", "auto"),
    ]


def preset_context(spec: PresetSpec) -> RoutingContext:
    return RoutingContext(sections=spec.sections)


@pytest.mark.parametrize(
    ("spec", "kind", "section"),
    [
        (USER_BACKGROUND, "profile", "user_profile"),
        (USER_BACKGROUND, "preference", "user_preferences"),
        (PROJECT, "convention", "conventions"),
        (PROJECT, "decision", "project_context"),
        (PROJECT, "state", "project_state"),
    ],
)
def test_presets_route_their_kinds_to_their_sections(
    spec: PresetSpec, kind: str, section: str
) -> None:
    placement = evaluate(spec, record(kind=kind, label="name"), preset_context(spec))
    assert placement == Placement(section=section, key="name")


@pytest.mark.parametrize(
    ("spec", "kind"),
    [
        (USER_BACKGROUND, "episode"),
        (USER_BACKGROUND, "fact"),
        (USER_BACKGROUND, "convention"),
        (USER_BACKGROUND, "profiles"),
        (PROJECT, "episode"),
        (PROJECT, "fact"),
        (PROJECT, "profile"),
        (PROJECT, "team"),
    ],
)
def test_presets_decline_every_other_kind(spec: PresetSpec, kind: str) -> None:
    assert evaluate(spec, record(kind=kind, label="name"), preset_context(spec)) is None


@pytest.mark.parametrize("label", ["Name", "name ", "NAME", " name", "name"])
def test_label_spellings_of_one_name_give_one_key(label: str) -> None:
    candidate = record(kind="profile", label=label)
    placement = evaluate(USER_BACKGROUND, candidate, preset_context(USER_BACKGROUND))
    assert placement is not None
    assert placement.key == "name"
    assert USER_BACKGROUND.key_source(candidate) == "label"


def test_a_label_slug_drops_diacritics() -> None:
    assert slug("Café") == "cafe"
    assert derive_key(record(label="Café")) == ("cafe", "label")
    assert slug("Time  Zone!") == "time-zone"


@pytest.mark.parametrize("label", ["!!!", "   ", "\u0301", "--"])
def test_a_label_that_slugs_to_nothing_falls_back_to_the_content_key(label: str) -> None:
    candidate = record(kind="profile", content="I live in Lisbon.", label=label)
    assert slug(label) == ""
    assert derive_key(candidate) == (content_key("I live in Lisbon."), "content")
    assert USER_BACKGROUND.key_source(candidate) == "content"
    placement = USER_BACKGROUND.route(candidate, preset_context(USER_BACKGROUND))
    assert placement is not None
    assert placement.key == content_key("I live in Lisbon.")


def test_without_a_label_the_key_comes_from_the_content() -> None:
    candidate = record(kind="state", content="Release is frozen.")
    assert PROJECT.key_source(candidate) == "content"
    placement = PROJECT.route(candidate, preset_context(PROJECT))
    assert placement == Placement(section="project_state", key=content_key("Release is frozen."))


def test_content_key_ignores_case_and_whitespace_differences() -> None:
    variants = ["Hello World", "hello world", "  HELLO\tworld\n", "Hello\n\n World "]
    assert len({content_key(v) for v in variants}) == 1


def test_content_key_differs_for_different_content() -> None:
    assert content_key("Hello World") != content_key("Hello World!")
    assert content_key("Hello World") != content_key("HelloWorld")


def test_resaving_identical_content_gives_the_same_address() -> None:
    ctx = preset_context(PROJECT)
    first = PROJECT.route(record(kind="decision", content="Use Postgres."), ctx)
    again = PROJECT.route(record(kind="decision", content="Use Postgres."), ctx)
    assert first is not None
    assert first == again
    assert placement_key(first) == placement_key(again)


@settings(max_examples=150, deadline=None)
@given(
    kind=st.sampled_from(["profile", "preference", "convention", "decision", "state", "fact"]),
    content=st.text(min_size=1, max_size=50),
    label=st.one_of(st.none(), st.text(min_size=1, max_size=64)),
)
def test_presets_always_give_a_valid_placement_or_decline(
    kind: str, content: str, label: str | None
) -> None:
    candidate = record(kind=kind, content=content, label=label)
    for spec in (USER_BACKGROUND, PROJECT):
        placement = evaluate(spec, candidate, preset_context(spec))
        if kind in spec.routes:
            assert placement is not None
            assert placement.section == spec.routes[kind]
            key, source = derive_key(candidate)
            assert placement.key == key
            assert spec.key_source(candidate) == source
            assert source == ("label" if label and slug(label) else "content")
        else:
            assert placement is None
