"""Look-alike labels are one address: "name" and Cyrillic "nаme" (and "Name", "ｎａｍｅ",
"na\\u200bme") derive the key ``name``, so the collision gate and the preview see one
holder; a label holding a bidi control is refused; authored keys hold their look-alikes;
committed placements are never recomputed.
"""

from __future__ import annotations

from typing import Any

import pytest

from lens.core.identity import BIDI_CONTROLS
from lens.models import Agent, Team
from memory.core.overlay import apply_memory_overlay
from memory.core.presets import USER_BACKGROUND, derive_key, slug
from memory.core.routing import Placement, RoutableRecord, RoutingContext, placement_key
from memory.models import Promotion
from tests.api_calls import (
    DOUG,
    ApiClient,
    api_composition,
    api_section_entries,
    assert_error,
    memory_body,
    post_memory,
)
from tests.factories import WREN_CONFIG, Unchanged, create_agent, memory_row_counts
from tests.samples import background, placed, reasons, section

CYRILLIC_NAME = "n\u0430me"  # Cyrillic а (U+0430)
# Every spelling that reads as "name": case, trailing space, fullwidth, a zero-width
# space, and two cross-script look-alikes.
SPELLINGS = [
    "Name",
    "name ",
    CYRILLIC_NAME,
    "\uff4e\uff41\uff4d\uff45",
    "na\u200bme",
    "NAM\u0415",  # Cyrillic Е
    "\u200bn\u0430m\u0435\u2060",
]


# --- key derivation (pure) -----------------------------------------------------------


@pytest.mark.parametrize("label", SPELLINGS)
def test_every_spelling_of_name_derives_the_key_name(label: str) -> None:
    assert slug(label) == "name"
    assert derive_key(RoutableRecord(kind="profile", content="x", label=label)) == (
        "name",
        "label",
    )


@pytest.mark.parametrize(
    ("label", "key"),
    [
        ("Time zone", "time-zone"),
        ("\u0455\u0441\u043e\u0440\u0435", "scope"),
        ("v1", "v1"),  # ASCII stays as written: v1 and vl are two addresses
        ("vl", "vl"),
        ("\u540d\u524d", "\u540d\u524d"),
        ("Caf\u00e9 au lait", "cafe-au-lait"),
    ],
)
def test_keys_stay_readable(label: str, key: str) -> None:
    assert slug(label) == key


def test_a_label_of_only_invisible_characters_falls_back_to_the_content_key() -> None:
    record = RoutableRecord(kind="profile", content="x", label="\u200b\u2060")
    assert derive_key(record)[1] == "content"


# --- through the API: save and preview ----------------------------------------------


@pytest.fixture
def wren(team: Team) -> Agent:
    return create_agent(team, "wren", WREN_CONFIG)


def _conflicts(api: ApiClient, body: dict[str, Any], holder: str) -> None:
    before = memory_row_counts()
    response = api.post("/api/agents/wren/memories", body)
    assert response.status_code == 409, response.content
    answer = response.json()
    assert answer["status"] == "conflict"
    assert answer["existing"]["id"] == holder
    assert memory_row_counts() == before


@pytest.mark.django_db
def test_the_probe_pair_collides_through_the_api_save(api: ApiClient, wren: Agent) -> None:
    holder = post_memory(api, memory_body("profile", DOUG, label="name"))
    _conflicts(api, memory_body("profile", "The user's name is Eve.", label=CYRILLIC_NAME), holder)
    (entry,) = api_section_entries(api_composition(api), "user_profile")
    assert entry["key"] == "name"
    assert entry["memory_ids"] == [holder]


@pytest.mark.django_db
@pytest.mark.parametrize("label", SPELLINGS)
def test_every_spelling_collides_with_the_holder(api: ApiClient, wren: Agent, label: str) -> None:
    holder = post_memory(api, memory_body("profile", DOUG, label=CYRILLIC_NAME))
    assert Promotion.objects.get(pk=holder).key == "name"
    _conflicts(api, memory_body("profile", "Another name.", label=label), holder)


@pytest.mark.django_db
def test_the_probe_pair_collides_through_the_preview(api: ApiClient, wren: Agent) -> None:
    holder = post_memory(api, memory_body("profile", DOUG, label="name"))
    unchanged = Unchanged()
    response = api.post(
        "/api/agents/wren/memories/preview", memory_body("profile", "Eve.", label=CYRILLIC_NAME)
    )
    assert response.status_code == 200, response.content
    answer = response.json()
    assert answer["outcome"] == "conflict"
    assert answer["placement"] == {"section": "user_profile", "key": "name"}
    assert answer["existing"]["id"] == holder
    unchanged.check()


@pytest.mark.django_db
def test_superseding_the_holder_with_a_look_alike_label_takes_the_address(
    api: ApiClient, wren: Agent
) -> None:
    holder = post_memory(api, memory_body("profile", DOUG, label="name"))
    newer = post_memory(api, memory_body("profile", "Eve.", label=CYRILLIC_NAME, supersedes=holder))
    (entry,) = api_section_entries(api_composition(api), "user_profile")
    assert (entry["key"], entry["memory_ids"]) == ("name", [newer])


@pytest.mark.django_db
@pytest.mark.parametrize("control", sorted(BIDI_CONTROLS))
@pytest.mark.parametrize("endpoint", ["memories", "memories/preview"])
def test_a_label_with_a_bidi_control_is_refused(
    api: ApiClient, wren: Agent, control: str, endpoint: str
) -> None:
    unchanged = Unchanged()
    response = api.post(f"/api/agents/wren/{endpoint}", memory_body(label=f"na{control}me"))
    error = assert_error(response, 422, "invalid_label")
    assert "bidirectional control" in error["message"]
    assert f"U+{ord(control):04X}" in error["message"]
    unchanged.check()


# --- committed placements are never recomputed (SPEC §5.4) --------------------------


@pytest.mark.django_db
def test_a_placement_committed_under_the_old_derivation_keeps_its_key(
    api: ApiClient, wren: Agent
) -> None:
    # Before look-alikes were folded, Cyrillic "nаme" was its own address: such a row
    # stays where it was committed, and composing never rewrites it.
    old = post_memory(api, memory_body("profile", DOUG, label=CYRILLIC_NAME))
    legacy = Promotion.objects.get(pk=old)
    legacy.key = CYRILLIC_NAME
    legacy.placement_key = placement_key_of("user_profile", CYRILLIC_NAME)
    legacy.save(update_fields=["key", "placement_key"])

    (entry,) = api_section_entries(api_composition(api), "user_profile")
    assert entry["key"] == CYRILLIC_NAME
    legacy.refresh_from_db()
    assert (legacy.key, legacy.placement_key) == (
        CYRILLIC_NAME,
        placement_key_of("user_profile", CYRILLIC_NAME),
    )


def placement_key_of(section_id: str, key: str) -> str:
    return placement_key(Placement(section=section_id, key=key))


# --- authored keys hold their look-alikes in the fold -------------------------------


@pytest.mark.parametrize("authored", ["name", "Name", CYRILLIC_NAME, "\uff4e\uff41\uff4d\uff45"])
def test_an_authored_look_alike_key_wins_over_the_memory(authored: str) -> None:
    declared = background(section("notes", "auto", (authored, "Authored")))
    composed, report = apply_memory_overlay(declared, [placed("m1", key="name")])
    assert reasons(report) == {"m1": "authored-wins"}
    (notes,) = composed.sections
    assert [entry.key for entry in notes.entries] == [authored]


def test_a_different_authored_key_leaves_the_memory_composed() -> None:
    declared = background(section("notes", "auto", ("names", "Authored")))
    composed, report = apply_memory_overlay(declared, [placed("m1", key="name")])
    assert reasons(report) == {}
    (notes,) = composed.sections
    assert [entry.key for entry in notes.entries] == ["names", "name"]


def test_the_preset_routes_look_alikes_to_one_placement() -> None:
    ctx = RoutingContext(sections=USER_BACKGROUND.sections)
    placements = {
        USER_BACKGROUND.route(RoutableRecord(kind="profile", content="x", label=label), ctx)
        for label in SPELLINGS
    }
    assert placements == {Placement(section="user_profile", key="name")}


# --- the agents API refuses look-alike and bidi names with the standard 422 ----------

RESERVED_VARIANTS = [
    "Current\u200bState",
    "\u0421urrent State",
    "\uff23\uff55\uff52\uff52\uff45\uff4e\uff54 \uff33\uff54\uff41\uff54\uff45",
]


def _with_section(**section_fields: Any) -> dict[str, Any]:
    config = dict(WREN_CONFIG)
    config["background"] = {"sections": [{"id": "notes", "title": "Notes", **section_fields}]}
    return config


@pytest.mark.django_db
@pytest.mark.parametrize("title", RESERVED_VARIANTS)
def test_the_api_refuses_titles_that_read_as_current_state(api: ApiClient, title: str) -> None:
    unchanged = Unchanged()
    error = assert_error(api.put("/api/agents/probe", _with_section(title=title)), 422)
    assert error["code"] == "invalid_background"
    assert "reserved for continuation turns" in error["message"]
    assert error["errors"][0]["loc"] == "background.sections.0.title"
    unchanged.check()


@pytest.mark.django_db
def test_the_api_refuses_look_alike_entry_keys_in_one_section(api: ApiClient) -> None:
    entries = [{"key": "name", "value": "Doug"}, {"key": CYRILLIC_NAME, "value": "Eve"}]
    error = assert_error(api.put("/api/agents/probe", _with_section(entries=entries)), 422)
    assert error["code"] == "invalid_background"
    assert "duplicate entry key" in error["message"]
    assert "the same name as 'name'" in error["message"]


def _bidi_bodies() -> list[tuple[str, dict[str, Any], str]]:
    """(case id, config, the loc the error names) for every control in every name field."""
    cases = []
    for control in sorted(BIDI_CONTROLS):
        bad = f"na{control}me"
        tag = f"U+{ord(control):04X}"
        with_key = _with_section(entries=[{"key": bad, "value": 1}])
        cases += [
            (f"key-{tag}", with_key, "background.sections.0.entries.0.key"),
            (f"title-{tag}", _with_section(title=bad), "background.sections.0.title"),
            (
                f"capability-{tag}",
                {**WREN_CONFIG, "capabilities": [{"name": bad}]},
                "capabilities.0.name",
            ),
            (
                f"awareness-{tag}",
                {**WREN_CONFIG, "awareness": [{"name": bad}]},
                "awareness.0.name",
            ),
        ]
    return cases


BIDI_BODIES = _bidi_bodies()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("config", "loc"), [case[1:] for case in BIDI_BODIES], ids=[case[0] for case in BIDI_BODIES]
)
def test_the_api_refuses_bidi_controls_in_every_name_field(
    api: ApiClient, config: dict[str, Any], loc: str
) -> None:
    error = assert_error(api.put("/api/agents/probe", config), 422)
    assert error["message"].startswith(f"{loc}: ")
    assert "bidirectional control characters" in error["message"]
    assert [problem["loc"] for problem in error["errors"]] == [loc]
    assert not Agent.objects.filter(slug="probe").exists()
