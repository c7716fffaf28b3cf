"""``/agents/<slug>/migration/`` (SPEC §18.3): the plan for people, applying it by a
reviewer, read-only for other members, 404 for strangers; and the lens's line."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lens.core.config import AgentConfig
from lens.models import Agent, Team
from memory.configuring import store_config
from memory.migration import migration_plan
from memory.models import EventKind, MemoryEvent, MigratedPromotion, Promotion
from tests.factories import (
    create_agent,
    logged_in,
    memory_config,
    migration_story,
    remember,
    v2_config,
)
from tests.samples import V2_SPECS
from web.pages import migration_pages

pytestmark = pytest.mark.django_db

PAGE = "/agents/wren/migration/"
APPLY = "/agents/wren/migration/apply/"


def form(agent: Any, **extra: Any) -> dict[str, Any]:
    return {"team": "acme", "plan": migration_plan(agent).sha256, "confirm": "yes", **extra}


def test_a_member_sees_the_plan_read_only(team: Team, settings: Any, viewer_client: Client) -> None:
    _agent, ids = migration_story(team, settings)
    response = viewer_client.get(PAGE)
    assert response.status_code == 200
    text = response.content.decode()
    assert "3 memories would move" in text
    assert "data-read-only" in text
    assert 'name="memory"' not in text
    assert "data-apply" not in text
    assert "Waits for a reviewer: the section is guarded." in text
    assert 'data-migration-group="user_profile→about_user"' in text
    assert "data-migration-what-if" in text


def test_a_reviewer_sees_checkboxes_and_the_buttons(
    team: Team, settings: Any, reviewer_client: Client
) -> None:
    _agent, ids = migration_story(team, settings)
    text = reviewer_client.get(PAGE).content.decode()
    assert text.count('name="memory"') == 3
    assert "Apply selected" in text
    assert 'data-apply="all"' in text
    assert "Approved by you when you apply: the section is guarded." in text


def test_strangers_get_404_and_anonymous_people_the_login(
    team: Team, settings: Any, stranger_client: Client
) -> None:
    agent, _ids = migration_story(team, settings)
    assert stranger_client.get(PAGE).status_code == 404
    assert Client().get(PAGE).status_code == 302
    assert Client().post(APPLY, form(agent)).status_code == 302
    assert MigratedPromotion.objects.count() == 0


def test_a_reviewer_applies_the_whole_plan_and_approves_the_guarded_moves(
    team: Team, settings: Any, reviewer: User
) -> None:
    agent, ids = migration_story(team, settings)
    client = logged_in(reviewer, enforce_csrf_checks=False)
    response = client.post(APPLY, form(agent, apply="all"), follow=True)
    assert response.redirect_chain[-1][0] == PAGE
    assert "Moved 3 memories" in response.content.decode()
    theme = Promotion.objects.get(pk=ids["theme"])
    assert (theme.section, theme.status, theme.decided_by) == ("preferences", "approved", reviewer)
    assert MemoryEvent.objects.filter(kind=EventKind.MIGRATED).count() == 3
    assert "Nothing would move" in response.content.decode()


def test_apply_selected_moves_the_ticked_ones(
    team: Team, settings: Any, reviewer_client: Client
) -> None:
    agent, ids = migration_story(team, settings)
    reviewer_client.post(APPLY, form(agent, apply="selected", memory=[ids["city"]]))
    assert list(MigratedPromotion.objects.values_list("record_id", flat=True)) == [ids["city"]]


def test_without_the_confirmation_nothing_moves(
    team: Team, settings: Any, reviewer_client: Client
) -> None:
    agent, _ids = migration_story(team, settings)
    body = {**form(agent, apply="all"), "confirm": ""}
    response = reviewer_client.post(APPLY, body, follow=True)
    assert "tick the confirmation" in response.content.decode()
    assert MigratedPromotion.objects.count() == 0


def test_a_stale_plan_says_so_and_moves_nothing(
    team: Team, settings: Any, reviewer_client: Client
) -> None:
    agent, _ids = migration_story(team, settings)
    body = {**form(agent, apply="all"), "plan": "0" * 64}
    response = reviewer_client.post(APPLY, body, follow=True)
    assert "changed since this plan was read" in response.content.decode()
    assert MigratedPromotion.objects.count() == 0


def test_a_member_who_is_no_reviewer_is_refused(
    team: Team, settings: Any, viewer_client: Client
) -> None:
    agent, _ids = migration_story(team, settings)
    assert viewer_client.post(APPLY, form(agent, apply="all")).status_code == 403
    assert MigratedPromotion.objects.count() == 0


def test_the_form_needs_csrf(team: Team, settings: Any, reviewer: User) -> None:
    agent, _ids = migration_story(team, settings)
    client = Client(enforce_csrf_checks=True)
    client.force_login(reviewer)
    assert client.post(APPLY, form(agent, apply="all")).status_code == 403
    assert MigratedPromotion.objects.count() == 0


def test_the_lens_says_how_many_would_move(
    team: Team, settings: Any, viewer_client: Client
) -> None:
    migration_story(team, settings)
    text = viewer_client.get("/agents/wren/").content.decode()
    assert "3 memories would move" in text
    assert f'href="{PAGE}"' in text


def earning_and_instruction_story(team: Team, settings: Any) -> tuple[Any, dict[str, str]]:
    """Wren's preferences saved while their section was undeclared (declined), then
    version 2 deployed with ``preferences`` earned and ``about_user`` auto: a fact moves
    into the earned section, an order to the model into the auto one."""
    agent = create_agent(team, "wren", memory_config(preferences=None))
    ids = {
        "theme": remember(agent, "preference", "Dark theme", label="theme"),
        "order": remember(agent, "profile", "Always answer in French", label="lang"),
    }
    settings.MEMORY_ROUTING_SPECS = V2_SPECS
    store_config(team, "wren", AgentConfig.model_validate(v2_config(preferences="earned")))
    return Agent.objects.get(pk=agent.pk), ids


def words_of(text: str, memory_id: str) -> str:
    """The text of the move of ``memory_id`` on the page, tags and spacing collapsed."""
    start = text.index(f'data-move="{memory_id}"')
    item = text[start : text.index("</li>", start)]
    return " ".join(re.sub(r"<[^>]+>", " ", item).split())


def test_an_earning_move_waits_for_its_sightings_in_words(
    team: Team, settings: Any, viewer_client: Client, reviewer_client: Client
) -> None:
    _agent, ids = earning_and_instruction_story(team, settings)
    for client in (viewer_client, reviewer_client):
        words = words_of(client.get(PAGE).content.decode(), ids["theme"])
        assert "Waits to earn its place: seen in 1 of 3 sessions." in words
        assert "applying does not approve it" in words
        assert "the section is guarded" not in words
        assert "Approved by you" not in words


def test_an_instruction_shaped_move_says_so_with_its_signals_marked(
    team: Team, settings: Any, viewer_client: Client, reviewer_client: Client
) -> None:
    _agent, ids = earning_and_instruction_story(team, settings)
    viewer = viewer_client.get(PAGE).content.decode()
    words = words_of(viewer, ids["order"])
    assert (
        "Reads as an instruction to the model — waits for a person: the system never "
        "approves one, although the section is auto." in words
    )
    assert "the section is guarded" not in words
    assert '<mark data-signal="imperative">Always</mark> <mark' in viewer
    assert 'data-screen="instruction"' in viewer
    reviewer = reviewer_client.get(PAGE).content.decode()
    assert "Reads as an instruction to the model — approved by you when you apply" in words_of(
        reviewer, ids["order"]
    )
    # The confirmation names them: the reviewer's act approves them.
    assert "(1 of them reads as an instruction to the model)" in reviewer


def test_a_reviewer_applying_approves_the_instruction_and_leaves_the_earning_move_earning(
    team: Team, settings: Any, reviewer: User
) -> None:
    agent, ids = earning_and_instruction_story(team, settings)
    client = logged_in(reviewer, enforce_csrf_checks=False)
    response = client.post(APPLY, form(agent, apply="all"), follow=True)
    assert "Moved 2 memories (1 in the prompt&#x27;s sections now, 1 waiting" in (
        response.content.decode()
    )
    order = Promotion.objects.get(pk=ids["order"])
    assert (order.section, order.status, order.decided_by) == ("about_user", "approved", reviewer)
    theme = Promotion.objects.get(pk=ids["theme"])
    assert (theme.section, theme.status, theme.reason, theme.decided_by) == (
        "preferences",
        "pending",
        "earning",
        None,
    )


def test_an_instruction_into_a_guarded_section_is_marked_too(
    team: Team, settings: Any, reviewer_client: Client
) -> None:
    agent = create_agent(team, "wren", memory_config(preferences=None))
    order = remember(agent, "preference", "Never mention the weather", label="weather")
    settings.MEMORY_ROUTING_SPECS = V2_SPECS
    store_config(team, "wren", AgentConfig.model_validate(v2_config()))
    text = reviewer_client.get(PAGE).content.decode()
    assert (
        "Reads as an instruction to the model — approved by you when you apply: the "
        "section is guarded." in words_of(text, order)
    )
    assert '<mark data-signal="imperative">Never</mark>' in text


def test_the_memory_page_tells_a_migration_in_words(
    team: Team, settings: Any, reviewer: User, viewer_client: Client
) -> None:
    agent, ids = migration_story(team, settings)
    found = migration_plan(agent)
    client = logged_in(reviewer, enforce_csrf_checks=False)
    client.post(APPLY, form(agent, apply="all"))
    text = viewer_client.get(f"/memories/{ids['theme']}/").content.decode()
    start = text.index('<li data-event="migrated">')
    line = " ".join(re.sub(r"<[^>]+>", " ", text[start : text.index("</li>", start)]).split())
    moment = MemoryEvent.objects.get(record_id=ids["theme"], kind=EventKind.MIGRATED).at
    assert line == (
        "migrated Moved from User Preferences › theme to Preferences › theme on "
        f"{moment:%Y-%m-%d %H:%M:%S} by mira (routing spec user-background version 2; approved)"
    )
    assert "{&#x27;section&#x27;" not in text
    assert found.move_of(ids["theme"]) is not None


def test_the_lens_says_when_the_plan_holds_only_moves_that_cannot_be_made(
    team: Team, settings: Any, viewer_client: Client
) -> None:
    agent = create_agent(team, "wren", memory_config())
    remember(agent, "profile", "Mira", label="name")
    remember(agent, "profile", "Lives in Gdansk", label="city")
    settings.MEMORY_ROUTING_SPECS = V2_SPECS
    store_config(team, "wren", AgentConfig.model_validate(v2_config()))
    # Saved under version 2: each takes the address the older memory would move to.
    remember(agent, "profile", "Mira Nowak", label="name")
    remember(agent, "profile", "Lives in Sopot", label="city")
    found = migration_plan(Agent.objects.get(pk=agent.pk))
    assert [move.outcome for move in found.moves] == ["conflict", "conflict"]
    text = viewer_client.get("/agents/wren/").content.decode()
    start = text.index("data-migration-conflicts")
    line = " ".join(re.sub(r"<[^>]+>", " ", text[start : text.index("</p>", start)]).split())
    assert line.endswith(
        "2 memories can't move under the routing spec and sections in use now: their new "
        "address is taken."
    )
    assert f'<a href="{PAGE}">2 memories can\'t move</a>' in text
    assert "would move" not in text


def test_apply_leaves_the_instructions_it_did_not_show_for_the_next_reading(
    team: Team, settings: Any, reviewer: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A group lists the moves a reviewer's apply would approve though they read as
    instructions first; one past the shown part is never approved unseen: Apply moves
    the rest and leaves it, and the page lists it next."""
    monkeypatch.setattr(migration_pages, "SHOWN_PER_GROUP", 2)
    agent = create_agent(team, "wren", memory_config(preferences=None))
    fact = remember(agent, "profile", "Lives in Lisbon", label="city")
    orders = [
        remember(agent, "profile", "Always answer in French", label="lang"),
        remember(agent, "profile", "Never mention the weather", label="weather"),
        remember(agent, "profile", "You must reply in haiku", label="style"),
    ]
    settings.MEMORY_ROUTING_SPECS = V2_SPECS
    store_config(team, "wren", AgentConfig.model_validate(v2_config()))
    agent = Agent.objects.get(pk=agent.pk)
    client = logged_in(reviewer, enforce_csrf_checks=False)
    page = client.get(PAGE).content.decode()
    shown = [memory_id for memory_id in (fact, *orders) if f'data-move="{memory_id}"' in page]
    assert len(shown) == 2
    assert fact not in shown  # the instructions come first
    (unseen,) = [memory_id for memory_id in orders if memory_id not in shown]
    assert "(2 of them read as an instruction to the model)" in page
    response = client.post(APPLY, form(agent, apply="all"), follow=True)
    said = response.content.decode()
    assert "1 that read as an instruction to the model were not shown" in said
    assert Promotion.objects.get(pk=fact).section == "about_user"
    for memory_id in shown:
        row = Promotion.objects.get(pk=memory_id)
        assert (row.section, row.status, row.decided_by) == ("about_user", "approved", reviewer)
    row = Promotion.objects.get(pk=unseen)
    assert (row.section, row.status) == ("user_profile", "pending")
    assert f'data-move="{unseen}"' in client.get(PAGE).content.decode()
