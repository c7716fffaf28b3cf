"""When two spellings are one name (lens.core.identity): identity, confusable skeletons,
ASCII look-alikes and bidi controls, and the places that compare names through them:
reserved titles, entry keys, capability and awareness names.
"""

from __future__ import annotations

import time
import unicodedata
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from lens.core.background import (
    KEY_MAX,
    TITLE_MAX,
    Background,
    BackgroundEntry,
    BackgroundSection,
    same_names,
    title_problem,
)
from lens.core.config import NAME_MAX, AgentConfig
from lens.core.identity import (
    BIDI_CONTROLS,
    _slow_key_skeleton,
    ascii_lookalikes,
    bidi_control,
    identity,
    key_skeleton,
    without_format,
)

# Every bidi control the contract refuses, by code point.
BIDI = [
    "\u202a",
    "\u202b",
    "\u202c",
    "\u202d",
    "\u202e",
    "\u2066",
    "\u2067",
    "\u2068",
    "\u2069",
    "\u200e",
    "\u200f",
    "\u061c",
]
# Invisible format characters (Unicode category Cf) that are not bidi controls.
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\U000e0041"]

# Any text, including format characters, fullwidth forms and other scripts.
texts = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=40) | st.lists(
    st.sampled_from(["n", "a", "m", "e", "\u0430", "\u200b", "\uff4e", "N", "\u0131", " ", "0"]),
    max_size=12,
).map("".join)


# --- identity ----------------------------------------------------------------------


def test_the_bidi_controls_are_exactly_the_contract_twelve() -> None:
    assert frozenset(BIDI) == BIDI_CONTROLS
    assert all(unicodedata.category(char) == "Cf" for char in BIDI)


@given(texts)
@settings(max_examples=300, deadline=None)
def test_identity_is_idempotent(text: str) -> None:
    assert identity(identity(text)) == identity(text)


@given(texts)
@settings(max_examples=300, deadline=None)
def test_identity_ignores_case_compatibility_forms_and_format_characters(text: str) -> None:
    once = identity(text)
    assert identity(text.upper()) == identity(once.upper())
    assert identity(unicodedata.normalize("NFKC", text)) == once
    assert identity(text.casefold()) == identity(once.casefold())
    assert identity("\u200b".join(text) + "\u2060") == once
    assert not any(unicodedata.category(char) == "Cf" for char in once)


@pytest.mark.parametrize(
    "spelling",
    ["Name", "NAME", "name", "\uff4e\uff41\uff4d\uff45", "na\u200bme", "\u00adname\ufeff"],
)
def test_identity_of_spellings_of_one_name(spelling: str) -> None:
    assert identity(spelling) == "name"


def test_identity_keeps_other_scripts_apart() -> None:
    # Cyrillic "а" is not Latin "a" to identity: only the skeleton joins them.
    assert identity("n\u0430me") != identity("name")


# --- confusable skeletons ------------------------------------------------------------


@given(texts)
@settings(max_examples=300, deadline=None)
def test_key_skeleton_is_idempotent(text: str) -> None:
    assert key_skeleton(key_skeleton(text)) == key_skeleton(text)


@given(texts)
@settings(max_examples=300, deadline=None)
def test_key_skeleton_ignores_what_identity_ignores(text: str) -> None:
    assert key_skeleton(identity(text)) == key_skeleton(text)
    assert key_skeleton(text.upper()) == key_skeleton(text.upper().casefold())
    assert key_skeleton("\u200b".join(text)) == key_skeleton(text)
    assert key_skeleton(unicodedata.normalize("NFKC", text)) == key_skeleton(text)


@given(st.text(alphabet=st.characters(max_codepoint=127, exclude_categories=["Cs"])))
@settings(max_examples=300, deadline=None)
def test_the_ascii_fast_path_equals_the_icu_path(text: str) -> None:
    assert key_skeleton(text) == _slow_key_skeleton.__wrapped__(text)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("name", "n\u0430me"),  # Cyrillic а
        ("Current State", "\u0421urrent State"),  # Cyrillic С
        ("scope", "\u0455\u0441\u043e\u0440\u0435"),  # Cyrillic ѕсоре
        ("pay", "\u0440\u0430\u0443"),  # Cyrillic рау
        ("name", "\uff4e\uff41\uff4d\uff45"),
        ("name", "na\u200bme"),
    ],
)
def test_look_alikes_share_a_skeleton(one: str, other: str) -> None:
    assert key_skeleton(one) == key_skeleton(other)


@pytest.mark.parametrize(("one", "other"), [("name", "names"), ("Name", "Nome"), ("a", "b")])
def test_different_names_keep_different_skeletons(one: str, other: str) -> None:
    assert key_skeleton(one) != key_skeleton(other)


# --- ASCII look-alikes (the readable spelling of derived keys) -----------------------


@pytest.mark.parametrize(
    ("text", "spelt"),
    [
        ("n\u0430me", "name"),
        ("\u0455\u0441\u043e\u0440\u0435", "scope"),
        ("\u0440\u0430\u0443", "pay"),
        ("\u540d\u524d", "\u540d\u524d"),  # nothing ASCII looks like it: kept
        ("v1", "v1"),  # ASCII is kept as written: "1" does not become "l"
        ("burn", "burn"),
        ("time-zone", "time-zone"),
    ],
)
def test_ascii_lookalikes_spells_cross_script_look_alikes_in_ascii(text: str, spelt: str) -> None:
    assert ascii_lookalikes(text) == spelt


@given(texts)
@settings(max_examples=300, deadline=None)
def test_ascii_lookalikes_keeps_the_skeleton_and_is_idempotent(text: str) -> None:
    folded = ascii_lookalikes(identity(text))
    assert ascii_lookalikes(folded) == folded
    assert key_skeleton(folded) == key_skeleton(text)


# --- bidi controls ----------------------------------------------------------------


@pytest.mark.parametrize("control", BIDI)
def test_bidi_control_finds_each_control(control: str) -> None:
    assert bidi_control(f"name{control}x") == control
    assert bidi_control("name\u200bx") is None


def test_without_format_removes_every_format_character() -> None:
    assert without_format("".join(INVISIBLE + BIDI) + "ok") == "ok"


# --- where names are compared --------------------------------------------------------


@pytest.mark.parametrize(
    "title",
    [
        "Current\u200bState",  # a zero-width space for the space
        "\u0421urrent State",  # Cyrillic С
        "\uff23\uff55\uff52\uff52\uff45\uff4e\uff54 \uff33\uff54\uff41\uff54\uff45",  # fullwidth
        "\uff23urrent\u3000State",
        "CurrentState",
        "Curr\u0435nt St\u0430te",  # Cyrillic е and а
        "\u200bCurrent State\u2060",
    ],
)
def test_titles_that_read_as_the_reserved_one_are_refused(title: str) -> None:
    problem = title_problem(title)
    assert problem is not None
    assert "Current State" in problem
    with pytest.raises(ValidationError, match="reserved"):
        BackgroundSection.model_validate({"id": "a", "title": title})


@pytest.mark.parametrize("title", ["Current States", "Currant State", "State", "The Current"])
def test_titles_that_only_resemble_the_reserved_one_stay_allowed(title: str) -> None:
    assert title_problem(title) is None


def _config(**fields: Any) -> dict[str, Any]:
    return {"name": "Wren", **fields}


def _bidi_cases() -> list[tuple[str, dict[str, Any], str]]:
    """(case id, config, the field the error must name) for each control and field."""
    cases = []
    for control in BIDI:
        bad = f"na{control}me"
        tag = f"U+{ord(control):04X}"
        cases += [
            (
                f"key-{tag}",
                _config(
                    background={
                        "sections": [
                            {"id": "a", "title": "A", "entries": [{"key": bad, "value": 1}]}
                        ]
                    }
                ),
                "entry key",
            ),
            (
                f"title-{tag}",
                _config(background={"sections": [{"id": "a", "title": bad}]}),
                "section title",
            ),
            (
                f"capability-{tag}",
                _config(capabilities=[{"name": bad, "description": "d"}]),
                "capability name",
            ),
            (f"awareness-{tag}", _config(awareness=[{"name": bad}]), "awareness source name"),
        ]
    return cases


BIDI_CASES = _bidi_cases()


@pytest.mark.parametrize(
    ("config", "field"), [case[1:] for case in BIDI_CASES], ids=[case[0] for case in BIDI_CASES]
)
def test_bidi_controls_are_refused_in_every_name_field(config: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        AgentConfig.model_validate(config)
    message = str(info.value)
    assert f"{field} must not contain bidirectional control characters" in message
    assert "U+" in message


@pytest.mark.parametrize(
    "look_alike", ["Name", "n\u0430me", "\uff4e\uff41\uff4d\uff45", "na\u200bme"]
)
def test_look_alike_entry_keys_in_one_section_are_duplicates(look_alike: str) -> None:
    entries = [{"key": "name", "value": 1}, {"key": look_alike, "value": 2}]
    with pytest.raises(ValidationError, match="duplicate entry key") as info:
        BackgroundSection.model_validate({"id": "a", "title": "A", "entries": entries})
    assert repr(look_alike) in str(info.value)


def test_look_alike_keys_in_different_sections_are_fine() -> None:
    sections = [
        {"id": "a", "title": "A", "entries": [{"key": "name", "value": 1}]},
        {"id": "b", "title": "B", "entries": [{"key": "n\u0430me", "value": 2}]},
    ]
    assert len(Background.model_validate({"sections": sections}).sections) == 2


@pytest.mark.parametrize("field", ["capabilities", "awareness"])
def test_look_alike_capability_and_awareness_names_are_duplicates(field: str) -> None:
    rows = [{"name": "Calendar"}, {"name": "\u0421alendar"}]
    with pytest.raises(ValidationError, match="duplicate") as info:
        AgentConfig.model_validate(_config(**{field: rows}))
    assert "the same name as 'Calendar'" in str(info.value)


def test_section_ids_still_compare_exactly() -> None:
    # Ids are ASCII by pattern and compared as written: "l1" and "ll" are two ids.
    sections = [{"id": "l1", "title": "A"}, {"id": "ll", "title": "B"}]
    assert len(Background.model_validate({"sections": sections}).sections) == 2


def test_same_names_pairs_each_later_spelling_with_the_first() -> None:
    assert same_names(["name", "x", "Name", "n\u0430me", "y"]) == [
        ("name", "Name"),
        ("name", "n\u0430me"),
    ]


def test_merge_replaces_a_look_alike_key_instead_of_adding_it() -> None:
    mine = Background.model_validate(
        {"sections": [{"id": "a", "title": "A", "entries": [{"key": "name", "value": 1}]}]}
    )
    theirs = Background.model_validate(
        {"sections": [{"id": "a", "title": "A", "entries": [{"key": "N\u0430me", "value": 2}]}]}
    )
    (section,) = mine.merge(theirs).sections
    assert section.entries == (BackgroundEntry(key="N\u0430me", value=2),)


# --- bounded work ------------------------------------------------------------------


def test_the_longest_names_of_repetitive_content_validate_quickly() -> None:
    worst = ["\u0430", "\u200b", "\uff4e", "m", "\u0131", "#", " "]
    started = time.perf_counter()
    for char in worst:
        title = (char * TITLE_MAX)[:TITLE_MAX]
        title_problem(title if title.strip() else "x" + title[1:])
        keys = [(char * KEY_MAX)[: KEY_MAX - 1] + str(i % 10) for i in range(10)]
        keys = list(dict.fromkeys(keys))
        same_names(keys)
        AgentConfig.model_validate(_config(capabilities=[{"name": "x" + char * (NAME_MAX - 1)}]))
    assert time.perf_counter() - started < 0.5
