"""A revision's summary in words (lens/core/change_words.py). Pure; no database."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from lens.core.change_words import Words, in_words, phrases, titled, token_delta
from lens.core.config import AgentConfig
from lens.core.revisions import summarise

TITLES = {"prefs": "Preferences", "facts": "Facts"}


def said(*changes: dict[str, Any], titles: dict[str, str] | None = None) -> list[str]:
    return phrases(list(changes), TITLES if titles is None else titles)


def test_each_kind_of_change_in_words() -> None:
    assert said({"change": "field_changed", "field": "persona"}) == ["Persona changed"]
    assert said({"change": "field_changed", "field": "model"}) == ["Model changed"]
    assert said({"change": "routing_spec_changed", "from": "user-background", "to": "project"}) == [
        "Routing spec user-background → project"
    ]
    assert said({"change": "routing_spec_changed", "from": None, "to": "project"}) == [
        "Routing spec none → project"
    ]
    assert said({"change": "section_added", "section": "prefs"}) == [
        "Section Preferences (prefs) added"
    ]
    assert said({"change": "section_removed", "section": "old"}) == ["Section old removed"]
    assert said({"change": "section_moved", "section": "prefs"}) == [
        "Section Preferences (prefs) moved"
    ]
    assert said({"change": "section_retitled", "section": "prefs"}) == [
        "Section Preferences (prefs) retitled"
    ]
    assert said({"change": "section_retiered", "section": "prefs"}) == [
        "Section Preferences (prefs) given another tier"
    ]
    assert said({"change": "entry_changed", "section": "facts", "key": "city"}) == [
        "Entry city in facts changed"
    ]
    assert said({"change": "entry_added", "section": "facts", "key": "city"}) == [
        "Entry city in facts added"
    ]
    assert said({"change": "entry_removed", "section": "facts", "key": "city"}) == [
        "Entry city in facts removed"
    ]


def test_a_title_equal_to_its_id_is_not_said_twice() -> None:
    assert said({"change": "section_added", "section": "facts"}, titles={"facts": "facts"}) == [
        "Section facts added"
    ]


def test_changes_of_one_kind_in_a_row_are_one_phrase_naming_the_first_few() -> None:
    entries = [{"change": "entry_added", "section": "facts", "key": k} for k in "abcdefg"]
    assert said(*entries[:2]) == ["Entries a and b in facts added"]
    assert said(*entries[:3]) == ["Entries a, b and c in facts added"]
    assert said(*entries) == ["Entries a, b, c and 4 more in facts added"]
    fields = [{"change": "field_changed", "field": f} for f in ("persona", "tone", "awareness")]
    assert said(*fields) == ["Persona, tone and information sources changed"]
    sections = [{"change": "section_added", "section": s} for s in ("prefs", "facts")]
    assert said(*sections) == ["Sections Preferences (prefs) and Facts (facts) added"]


def test_runs_break_at_another_kind_or_another_section() -> None:
    assert said(
        {"change": "entry_added", "section": "facts", "key": "a"},
        {"change": "entry_added", "section": "prefs", "key": "b"},
        {"change": "entry_changed", "section": "prefs", "key": "c"},
        {"change": "entry_changed", "section": "prefs", "key": "d"},
    ) == [
        "Entry a in facts added",
        "Entry b in prefs added",
        "Entries c and d in prefs changed",
    ]


def test_an_unknown_kind_of_change_is_said_by_its_name() -> None:
    assert said({"change": "entry_moved", "section": "facts", "key": "a"}) == ["Entry moved"]
    assert said({}) == ["Changed"]


def test_in_words_says_a_creation_and_cuts_at_the_limit() -> None:
    summary = [{"change": "section_added", "section": s} for s in ("prefs", "facts")]
    assert in_words(summary, TITLES, created=True) == Words(
        ("Agent created", "Sections Preferences (prefs) and Facts (facts) added")
    )
    assert in_words([], created=True) == Words(("Agent created, with no Background section",))
    assert in_words([], created=False) == Words(())
    many = [{"change": "field_changed", "field": "persona"}] + [
        {"change": "entry_added", "section": s, "key": "k"} for s in "abcdef"
    ]
    assert in_words(many, limit=3) == Words(
        ("Persona changed", "Entry k in a added", "Entry k in b added"), more=4
    )
    assert in_words(many[:3], limit=3).more == 0


names = st.sampled_from(["facts", "prefs", "goals", "people"])


@given(
    st.lists(
        st.fixed_dictionaries(
            {
                "change": st.sampled_from(["entry_added", "entry_changed", "section_added"]),
                "section": names,
                "key": st.sampled_from(["a", "b", "c"]),
            }
        ),
        max_size=40,
    )
)
def test_no_summary_gives_more_phrases_than_changes_and_none_is_empty(
    summary: list[dict[str, Any]],
) -> None:
    found = phrases(summary, TITLES)
    assert len(found) <= len(summary)
    assert all(phrase.strip() for phrase in found)
    assert bool(found) == bool(summary)


def test_a_real_summary_reads_in_words() -> None:
    old = AgentConfig.model_validate(
        {
            "name": "Wren",
            "persona": "Kind.",
            "routing_spec": "user-background",
            "background": {
                "sections": [
                    {"id": "facts", "title": "Facts", "entries": [{"key": "city", "value": "Oslo"}]}
                ]
            },
        }
    )
    new = old.model_copy(
        update={
            "persona": "Kinder.",
            "routing_spec": "project",
            "background": old.background.model_validate(
                {
                    "sections": [
                        {
                            "id": "facts",
                            "title": "Facts",
                            "entries": [{"key": "city", "value": "Bergen"}],
                        },
                        {"id": "prefs", "title": "Preferences"},
                    ]
                }
            ),
        }
    )
    summary = [change.as_json() for change in summarise(old, new)]
    assert phrases(summary, {"prefs": "Preferences"}) == [
        "Persona changed",
        "Routing spec user-background → project",
        "Entry city in facts changed",
        "Section Preferences (prefs) added",
    ]


# --- the words of a revision's own time ------------------------------------------------


def retitle(section: str, before: str, after: str) -> dict[str, Any]:
    return {"change": "section_retitled", "section": section, "from": before, "to": after}


def test_a_retitle_says_which_way_it_went() -> None:
    assert said(retitle("rules", "Rules", "House Rules")) == [
        "Section “Rules” (rules) retitled “House Rules”"
    ]
    assert said(retitle("rules", "House Rules", "Rules")) == [
        "Section “House Rules” (rules) retitled “Rules”"
    ]
    # Its own titles win over any given for the page (today's, say).
    assert said(retitle("prefs", "Likes", "Loves")) == ["Section “Likes” (prefs) retitled “Loves”"]


def test_many_retitles_name_the_first_few_and_count_the_rest() -> None:
    many = [retitle(f"s{n}", f"Old {n}", f"New {n}") for n in range(2000)]
    found = said(*many)
    assert found == [
        "Section “Old 0” (s0) retitled “New 0”",
        "Section “Old 1” (s1) retitled “New 1”",
        "Section “Old 2” (s2) retitled “New 2”",
        "1997 more sections retitled",
    ]
    assert said(*many[:4])[-1] == "1 more section retitled"


def test_a_section_change_names_the_title_it_holds() -> None:
    assert said({"change": "section_added", "section": "prefs", "title": "Likes"}) == [
        "Section Likes (prefs) added"
    ]


def test_titled_fills_in_the_titles_of_the_revision_and_the_one_before() -> None:
    before = {"rules": "Rules", "old": "Old Things"}
    after = {"rules": "House Rules", "prefs": "Likes"}
    summary: list[dict[str, Any]] = [
        {"change": "section_retitled", "section": "rules"},  # stored without its titles
        {"change": "section_added", "section": "prefs"},
        {"change": "entry_added", "section": "prefs", "key": "tea"},
        {"change": "section_removed", "section": "old"},
        retitle("kept", "A", "B"),  # stored with them: kept as it is
    ]
    assert titled(summary, before, after) == [
        {
            "change": "section_retitled",
            "section": "rules",
            "title": "House Rules",
            "from": "Rules",
            "to": "House Rules",
        },
        {"change": "section_added", "section": "prefs", "title": "Likes"},
        {"change": "entry_added", "section": "prefs", "key": "tea"},
        {"change": "section_removed", "section": "old", "title": "Old Things"},
        retitle("kept", "A", "B"),
    ]
    assert phrases(titled(summary, before, after), {}) == [
        "Section “Rules” (rules) retitled “House Rules”",
        "Section Likes (prefs) added",
        "Entry tea in prefs added",
        "Section Old Things (old) removed",
        "Section “A” (kept) retitled “B”",
    ]
    # Without the configs (none found), the words are what the summary holds.
    assert phrases(titled(summary[:1], {}, {}), {}) == ["Section rules retitled"]


def test_the_token_delta_in_words() -> None:
    assert token_delta(14_002, 14_250) == "14,002 → 14,250 tokens (+248)"
    assert token_delta(14_250, 14_002) == "14,250 → 14,002 tokens (−248)"
    assert token_delta(7, 7) == "7 → 7 tokens (±0)"
    assert token_delta(None, 1) == "1 token"
    assert token_delta(None, 2_500) == "2,500 tokens"
