"""The queue's section filter (SPEC §9): it offers each guarded section by its title
and sends its id; titles that differ between agents, or that two sections share, still
read as one distinct option each."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from lens.models import Agent, Team
from memory.queue import SECTION_LABEL_MAX, SectionChoice, section_choices
from tests.factories import create_agent, memory_config, preference
from tests.pages import approval_queue, inside, queue_row_ids


def section_options(page: Any) -> list[tuple[str, str, bool]]:
    (select,) = [e for e in page.elements if e.tag == "select" and e.get("name") == "section"]
    return [(o.get("value") or "", o.text, "selected" in o.attrs) for o in inside(select, "option")]


@pytest.mark.django_db
def test_the_filter_shows_titles_and_filters_by_id(
    viewer_client: Client, wren: Agent, atlas: Agent
) -> None:
    theme = preference(wren, "Prefers a dark theme.", label="theme")
    assert section_options(approval_queue(viewer_client)) == [
        ("", "all", False),
        ("conventions", "Conventions", False),
        ("project_context", "Project Context", False),
        ("user_preferences", "User Preferences", False),
    ]
    page = approval_queue(viewer_client, "?section=user_preferences")
    assert queue_row_ids(page) == [theme]
    assert ("user_preferences", "User Preferences", True) in section_options(page)


@pytest.mark.django_db
def test_one_id_titled_differently_by_two_agents_is_one_option(
    viewer_client: Client, team: Team, wren: Agent
) -> None:
    other = memory_config(name="Otto")
    other["background"]["sections"][1]["title"] = "Likes & dislikes"
    create_agent(team, "otto", other)
    assert section_options(approval_queue(viewer_client))[1:] == [
        ("user_preferences", "Likes & dislikes / User Preferences", False),
    ]


def test_two_ids_with_one_title_name_their_ids() -> None:
    assert section_choices(
        [("prefs", "Preferences"), ("user_preferences", "preferences"), ("notes", "Notes")]
    ) == [
        SectionChoice("notes", "Notes"),
        SectionChoice("prefs", "Preferences (prefs)"),
        SectionChoice("user_preferences", "preferences (user_preferences)"),
    ]
    assert section_choices([("a", "Same"), ("b", "Same"), ("a", "Same")]) == [
        SectionChoice("a", "Same (a)"),
        SectionChoice("b", "Same (b)"),
    ]


def test_labels_are_cut_at_the_limit() -> None:
    at_limit = "t" * SECTION_LABEL_MAX
    (kept,) = section_choices([("s", at_limit)])
    assert kept.label == at_limit
    (cut,) = section_choices([("s", "t" * (SECTION_LABEL_MAX + 1))])
    assert len(cut.label) == SECTION_LABEL_MAX
    assert cut.label.endswith("…")
    # Two hundred agents titling one id differently still make one short option.
    (many,) = section_choices([("s", f"Title {i:03}") for i in range(200)])
    assert len(many.label) == SECTION_LABEL_MAX


def test_odd_unicode_titles_are_kept_and_sorted_without_case() -> None:
    choices = section_choices([("b", "émigré"), ("a", "Zebra"), ("c", "apple 🍎")])
    assert [c.label for c in choices] == ["apple 🍎", "Zebra", "émigré"]
    assert section_choices([]) == []
