"""A memory's full story at ``/memories/<id>/`` (SPEC §5.6, §9): the record, its
promotion, its history, and who may see it.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lens.actors import Actor
from lens.models import Agent, ApiToken, Team
from memory.decisions import decide
from tests.factories import Story, create_agent, memory_config, remember
from tests.pages import Dom, Element, dom

pytestmark = pytest.mark.django_db


# --- /memories/<id>/ ---------------------------------------------------------------


def detail(client: Client, memory_id: str) -> Dom:
    return dom(client.get(f"/memories/{memory_id}/"))


def facts_in(card: Element) -> dict[str, str]:
    """A card's ``<dt>``/``<dd>`` pairs as ``{term: definition}``, whitespace squashed."""
    facts = {}
    for term in card.descendants():
        if term.tag == "dt" and term.parent is not None:
            definition = next(c for c in term.parent.children if c.tag == "dd")
            facts[term.squashed] = definition.squashed
    return facts


def promotion_facts(page: Dom) -> dict[str, str]:
    return facts_in(page.one("data-promotion"))


def record_facts(page: Dom) -> dict[str, str]:
    content = page.one("data-memory-content")
    card = content.ancestor("section")
    assert card is not None
    return facts_in(card)


def events(page: Dom) -> list[tuple[str, str, str]]:
    """``(kind, actor, details)`` of each history entry, in order; a token's actor is its
    whole label, which the page keeps in the title of the short name it shows."""
    found = []
    for element in page.all("data-event"):
        actor = next(e for e in element.descendants() if e.tag == "strong")
        token = next((e for e in actor.descendants() if e.get("title")), None)
        label = actor.text if token is None else token.get("title") or ""
        found.append((element.get("data-event") or "", label, element.squashed))
    return found


def test_the_detail_page_tells_an_auto_promoted_memory_s_story(
    member_client: Client, wren: Agent, team: Team
) -> None:
    token, _raw = ApiToken.objects.issue(team, name="bot")
    via_token = Actor.for_token(token)
    memory_id = remember(
        wren,
        "profile",
        "Mira <Kowalska> & co",
        label="Name",
        tags=["intro", "ppl"],
        actor=via_token,
    )
    page = detail(member_client, memory_id)

    assert page.one("data-memory-content").text == "Mira <Kowalska> & co"
    facts = record_facts(page)
    assert facts["Id"] == memory_id
    assert facts["Kind"] == "profile"
    assert facts["Label"] == "Name"
    assert facts["Tags"] == "intro ppl"
    assert facts["Supersedes"] == "nothing"

    promotion = promotion_facts(page)
    assert promotion["Decision"] == "approved"
    assert promotion["Placement"] == "About the User user_profile → name"
    assert promotion["Key source"] == "label"
    assert promotion["Tier at promotion"] == "auto"
    assert promotion["Routing spec"] == "user-background v1"
    assert promotion["Decided"].startswith("system, ")

    assert [(kind, actor) for kind, actor, _ in events(page)] == [
        ("saved", via_token.label),
        ("promoted", "system"),
    ]
    status = page.one("data-memory-status")
    assert status.get("data-memory-status") == "composed"
    assert status.squashed == "In the prompt: It fills “name” in About the User."


@pytest.mark.parametrize(
    "content",
    ["\nStarts with a line feed", "CRLF\r\nlines\rand\u2028more\n", "<b>bold</b> &amp; &#13;"],
)
def test_the_detail_page_shows_the_content_exactly(
    member_client: Client, wren: Agent, content: str
) -> None:
    memory_id = remember(wren, "fact", content)
    assert detail(member_client, memory_id).one("data-memory-content").text == content


def test_the_detail_page_shows_who_approved_a_guarded_memory(
    member_client: Client, wren: Agent, member: User
) -> None:
    memory_id = remember(wren, "preference", "Dark theme, always.", label="theme")
    pending = detail(member_client, memory_id)
    assert promotion_facts(pending)["Decision"] == "pending"
    assert promotion_facts(pending)["Decided"] == "not yet"
    assert promotion_facts(pending)["Tier at promotion"] == "guarded"
    assert pending.one("data-memory-status").get("data-memory-status") == "awaiting-approval"
    assert pending.one("data-memory-status").squashed.startswith(
        "Not in the prompt: Waiting for approval since "
    )
    assert [e[:2] for e in events(pending)] == [("saved", "system"), ("queued", "system")]

    decide(memory_id, True, Actor.for_user(member))
    page = detail(member_client, memory_id)
    promotion = promotion_facts(page)
    assert promotion["Decision"] == "approved"
    assert promotion["Placement"] == "User Preferences user_preferences → theme"
    assert promotion["Decided"].startswith("mira, ")
    assert [e[:2] for e in events(page)] == [
        ("saved", "system"),
        ("queued", "system"),
        ("approved", "mira"),
    ]
    assert page.one("data-memory-status").squashed.startswith("In the prompt: ")


def test_the_detail_page_shows_a_rejection_and_its_reason(
    member_client: Client, wren: Agent, member: User
) -> None:
    memory_id = remember(wren, "preference", "Wants daily jokes.", label="jokes")
    decide(memory_id, False, Actor.for_user(member), "not useful")
    page = detail(member_client, memory_id)
    promotion = promotion_facts(page)
    assert promotion["Decision"] == "rejected"
    assert promotion["Decided"].startswith("mira, ")
    assert promotion["Note"] == "not useful"
    history = events(page)
    assert [e[:2] for e in history] == [
        ("saved", "system"),
        ("queued", "system"),
        ("rejected", "mira"),
    ]
    assert "reason: not useful" in history[-1][2]
    status = page.one("data-memory-status")
    assert status.get("data-memory-status") == "rejected"
    assert status.squashed.startswith("Not in the prompt: Rejected by mira on ")
    assert status.squashed.endswith(": “not useful”.")


def test_the_detail_page_of_a_spec_declined_memory(member_client: Client, wren: Agent) -> None:
    memory_id = remember(wren, "fact", "Visited Kraków once.")
    page = detail(member_client, memory_id)
    promotion = promotion_facts(page)
    assert promotion["Decision"] == "declined spec-declined"
    assert promotion["Placement"] == "none — the spec declined it"
    assert promotion["Decided"] == "not yet"
    history = events(page)
    assert [e[:2] for e in history] == [("saved", "system"), ("declined", "system")]
    assert "reason: spec-declined" in history[-1][2]
    status = page.one("data-memory-status")
    assert status.get("data-memory-status") == "spec-declined"
    assert status.squashed == (
        "Not in the prompt: The routing spec user-background v1 does not place memories of "
        "kind “fact”, so it stays recall-only (search and recall still find it)."
    )


def test_supersedes_and_superseded_by_link_both_ways(
    member_client: Client, wren: Agent, member: User
) -> None:
    older = remember(wren, "profile", "Mira", label="name")
    newer = remember(
        wren, "profile", "Mira K.", label="name", supersedes=older, actor=Actor.for_user(member)
    )

    old_page = detail(member_client, older)
    status = old_page.one("data-memory-status")
    assert status.get("data-memory-status") == "superseded"
    assert status.squashed == "Not in the prompt: A newer memory replaced it: “Mira K.”"
    assert promotion_facts(old_page)["Decision"] == "superseded"
    assert [e[:2] for e in events(old_page)] == [
        ("saved", "system"),
        ("promoted", "system"),
        ("superseded", "mira"),
    ]
    assert f"by: {newer}" in events(old_page)[-1][2]
    links = [e.get("href") for e in old_page.elements if e.tag == "a"]
    assert f"/memories/{newer}/" in links

    new_page = detail(member_client, newer)
    assert new_page.one("data-memory-status").get("data-memory-status") == "composed"
    links = [e.get("href") for e in new_page.elements if e.tag == "a"]
    assert f"/memories/{older}/" in links
    assert [e[:2] for e in events(new_page)] == [("saved", "mira"), ("promoted", "system")]


def test_the_detail_page_status_matches_the_report_for_every_memory(
    member_client: Client, story: Story
) -> None:
    for memory_id in story.ids.values():
        status = detail(member_client, memory_id).one("data-memory-status")
        expected = story.expected_drops.get(memory_id)
        if expected is None:
            assert status.get("data-memory-status") == "composed", memory_id
            assert status.squashed.startswith("In the prompt: "), memory_id
        else:
            assert status.get("data-memory-status") == expected, memory_id
            assert status.squashed.startswith("Not in the prompt: "), memory_id


def test_a_non_member_gets_404_for_a_memory(
    member_client: Client, stranger_client: Client, wren: Agent
) -> None:
    memory_id = remember(wren, "profile", "Mira", label="name")
    assert member_client.get(f"/memories/{memory_id}/").status_code == 200
    assert stranger_client.get(f"/memories/{memory_id}/").status_code == 404
    assert stranger_client.get(f"/memories/{memory_id}/?team=acme").status_code == 404


def test_an_anonymous_visitor_is_sent_to_log_in(wren: Agent) -> None:
    memory_id = remember(wren, "profile", "Mira", label="name")
    response = Client().get(f"/memories/{memory_id}/")
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next=/memories/{memory_id}/"


@pytest.mark.parametrize(
    "record_id", ["zzzzzzzzzzzzzzzzzz", "ABC", "..", "a.b", "a-b", "x" * 33, "%2E%2E%2Fx"]
)
def test_an_unknown_or_malformed_id_is_404(
    member_client: Client, wren: Agent, record_id: str
) -> None:
    remember(wren, "profile", "Mira", label="name")
    assert member_client.get(f"/memories/{record_id}/").status_code == 404


def test_a_memory_of_the_user_s_other_team_opens_in_that_team(
    duo_client: Client, wren: Agent, other_team: Team
) -> None:
    gizmo = create_agent(other_team, "gizmo", memory_config(name="Gizmo"))
    theirs = remember(gizmo, "profile", "Globex user", label="name")
    ours = remember(wren, "profile", "Acme user", label="name")
    # The current team is acme, the first by slug; ?team= names the team to look in.
    assert duo_client.get(f"/memories/{ours}/").status_code == 200
    assert duo_client.get(f"/memories/{theirs}/?team=acme").status_code == 404
    # A plain link opens it in its own team, which becomes the current one.
    assert duo_client.get(f"/memories/{theirs}/").status_code == 200
    assert duo_client.get(f"/memories/{ours}/?team=globex").status_code == 404
    assert duo_client.get(f"/memories/{ours}/").status_code == 200


def test_the_detail_page_refuses_post(member_client: Client, wren: Agent) -> None:
    memory_id = remember(wren, "profile", "Mira", label="name")
    assert member_client.post(f"/memories/{memory_id}/").status_code == 405
