"""The memory side of the dashboard: memory fragments and drops on the lens, a record's
full story at ``/memories/<id>/``, the memories list, and the counts on the agents list
(SPEC §4.3, §4.4, §5.6, §9).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lens.actors import SYSTEM, Actor
from lens.agents import with_config
from lens.core.composition import Composition
from lens.core.report import DROP_REASONS
from lens.models import Agent, ApiToken, Team
from memory.composition import compose
from memory.core.records import MemoryInput
from memory.decisions import decide
from memory.saving import Saved, save_memory
from tests.factories import SAMPLE_CONFIG, create_agent, make_user
from tests.pages import Dom, Element, count_queries, dom

pytestmark = pytest.mark.django_db

MIDDLE_DOT = "\u00b7"


def memory_config(
    preferences: str | None = "guarded", name: str = "Wren", **extra: Any
) -> dict[str, Any]:
    """SAMPLE_CONFIG routed by ``user-background``: an auto profile section holding one
    authored entry (``timezone``), and the preferences section at the tier given (or not
    declared at all when ``preferences`` is None).
    """
    sections: list[dict[str, Any]] = [
        {
            "id": "user_profile",
            "title": "About the User",
            "promotion": "auto",
            "entries": [{"key": "timezone", "value": "Europe/Warsaw"}],
        }
    ]
    if preferences is not None:
        sections.append(
            {"id": "user_preferences", "title": "User Preferences", "promotion": preferences}
        )
    return {
        **SAMPLE_CONFIG,
        "name": name,
        "routing_spec": "user-background",
        "background": {"sections": sections},
        **extra,
    }


def remember(
    agent: Agent,
    kind: str,
    content: str,
    label: str | None = None,
    tags: list[str] | None = None,
    supersedes: str | None = None,
    actor: Actor = SYSTEM,
) -> str:
    result = save_memory(
        agent,
        MemoryInput(
            kind=kind, content=content, label=label, tags=tags or [], supersedes=supersedes
        ),
        actor,
    )
    assert isinstance(result, Saved), result
    return result.id


def composed(agent: Agent) -> Composition:
    return compose(with_config(Agent.objects.filter(pk=agent.pk)).get())


# --- fixtures --------------------------------------------------------------------------


@pytest.fixture
def wren(team: Team) -> Agent:
    return create_agent(team, "wren", memory_config())


@pytest.fixture
def duo(team: Team, other_team: Team) -> User:
    """A user in both teams: acme (first by slug, so the default) and globex."""
    return make_user("duo", other_team, team)


@pytest.fixture
def duo_client(duo: User) -> Client:
    client = Client()
    client.force_login(duo)
    return client


@dataclass
class Story:
    """One agent with a memory for every reason a memory can miss the prompt."""

    agent: Agent
    ids: dict[str, str]
    expected_drops: dict[str, str]
    composed_ids: set[str]


@pytest.fixture
def story(team: Team, member: User) -> Story:
    reviewer = Actor.for_user(member)
    ids: dict[str, str] = {}

    # Save-time outcomes that depend on the declarations at that moment.
    agent = create_agent(team, "wren", memory_config(preferences="locked"))
    ids["locked"] = remember(agent, "preference", "Prefers vim.", label="editor")
    agent = create_agent(team, "wren", memory_config(preferences="earned"))
    ids["earned"] = remember(agent, "preference", "Likes jazz.", label="music")
    agent = create_agent(team, "wren", memory_config(preferences=None))
    ids["undeclared"] = remember(agent, "preference", "Plays chess.", label="game")
    agent = create_agent(team, "wren", memory_config())

    ids["declined"] = remember(agent, "fact", "The user once visited Kraków.")
    ids["pending"] = remember(agent, "preference", "Prefers a dark theme.", label="theme")
    ids["rejected"] = remember(agent, "preference", "Wants daily jokes.", label="jokes")
    decide(ids["rejected"], False, reviewer, "not useful")
    ids["approved_pref"] = remember(agent, "preference", "Tea, never coffee.", label="drink")
    decide(ids["approved_pref"], True, reviewer)
    ids["old_name"] = remember(agent, "profile", "Mira", label="name")
    ids["name"] = remember(agent, "profile", "Mira K.", label="Name", supersedes=ids["old_name"])
    ids["authored"] = remember(agent, "profile", "UTC", label="timezone")
    ids["city"] = remember(agent, "profile", 'Lives in <Gdańsk> & "likes" the sea')
    return Story(
        agent=agent,
        ids=ids,
        expected_drops={
            ids["locked"]: "locked-section",
            ids["earned"]: "earned-inert",
            ids["undeclared"]: "undeclared-section",
            ids["declined"]: "spec-declined",
            ids["pending"]: "awaiting-approval",
            ids["rejected"]: "rejected",
            ids["old_name"]: "superseded",
            ids["authored"]: "authored-wins",
        },
        composed_ids={ids["approved_pref"], ids["name"], ids["city"]},
    )


# --- the lens: memory fragments --------------------------------------------------------


def test_each_fragment_element_matches_the_composition(member_client: Client, story: Story) -> None:
    composition = composed(story.agent)
    page = dom(member_client.get("/agents/wren/"))
    shown = page.all("data-source")
    expected = [f for s in composition.prompt.sections for f in s.fragments]
    assert [e.get("data-source") for e in shown] == [f.source for f in expected]
    for element, fragment in zip(shown, expected, strict=True):
        assert element.text == fragment.text
        if fragment.source == "memory":
            assert element.get("data-memory-ids") == " ".join(fragment.memory_ids)
        else:
            assert "data-memory-ids" not in element.attrs
            assert "data-tip" not in element.attrs
    assert sum(f.source == "memory" for f in expected) == len(story.composed_ids)


def test_memory_fragments_link_to_their_memory_and_explain_it_on_hover(
    member_client: Client, story: Story
) -> None:
    page = dom(member_client.get("/agents/wren/"))
    fragments = page.all("data-source", "memory")
    assert {e.get("data-memory-ids") for e in fragments} == story.composed_ids
    for element in fragments:
        memory_id = element.get("data-memory-ids") or ""
        assert element.tag == "a"
        assert element.get("href") == f"/memories/{memory_id}/"
        assert memory_id in (element.get("data-tip") or "")
    city = page.one("data-memory-ids", story.ids["city"])
    # No label: the key is derived from the content.
    assert re.fullmatch(
        r'- \*\*c-[0-9a-f]{16}\*\*: Lives in <Gdańsk> & "likes" the sea\n', city.text
    )
    assert "Lives in <Gdańsk>" in (city.get("data-tip") or "")


def test_the_memory_fragments_are_the_composed_entries(member_client: Client, story: Story) -> None:
    page = dom(member_client.get("/agents/wren/"))
    name = page.one("data-memory-ids", story.ids["name"])
    assert name.text == "- **name**: Mira K.\n"
    drink = page.one("data-memory-ids", story.ids["approved_pref"])
    assert drink.text == "- **drink**: Tea, never coffee.\n"
    # The authored entry keeps its key; the memory that wanted it is a drop.
    context = page.one("data-section", "Context")
    authored = [e for e in context.descendants() if e.get("data-source") == "authored"]
    assert any("- **timezone**: Europe/Warsaw\n" in e.text for e in authored)
    assert "UTC" not in context.text


def test_an_agent_without_memories_has_only_authored_fragments(
    member_client: Client, wren: Agent
) -> None:
    page = dom(member_client.get("/agents/wren/"))
    assert {e.get("data-source") for e in page.all("data-source")} == {"authored"}
    assert page.all("data-memory-ids") == []
    assert page.all("data-drop-reason") == []


# --- the lens: the drops panel ---------------------------------------------------------


def test_every_drop_is_shown_with_its_reason(member_client: Client, story: Story) -> None:
    report = composed(story.agent).report
    assert {d.memory_id: d.reason for d in report.drops} == story.expected_drops
    page = dom(member_client.get("/agents/wren/"))
    shown = page.all("data-drop-reason")
    assert sorted((e.get("data-memory-id"), e.get("data-drop-reason")) for e in shown) == sorted(
        (d.memory_id, d.reason) for d in report.drops
    )
    for element in shown:
        links = [e for e in element.descendants() if e.tag == "a"]
        assert [a.get("href") for a in links] == [f"/memories/{element.get('data-memory-id')}/"]


def test_no_memory_is_silent_or_shown_twice(member_client: Client, story: Story) -> None:
    page = dom(member_client.get("/agents/wren/"))
    in_fragments = [
        i for e in page.all("data-memory-ids") for i in (e.get("data-memory-ids") or "").split()
    ]
    dropped = [e.get("data-memory-id") for e in page.all("data-drop-reason")]
    assert len(in_fragments) == len(set(in_fragments))
    assert len(dropped) == len(set(dropped))
    assert not set(in_fragments) & set(dropped)
    assert set(in_fragments) | set(dropped) == set(story.ids.values())


def test_drops_are_grouped_by_reason(member_client: Client, story: Story) -> None:
    page = dom(member_client.get("/agents/wren/"))
    groups: dict[int, set[str]] = {}
    group_of_reason: dict[str, set[int]] = {}
    for element in page.all("data-drop-reason"):
        group = element.ancestor("details")
        assert group is not None
        reason = element.get("data-drop-reason") or ""
        groups.setdefault(id(group), set()).add(reason)
        group_of_reason.setdefault(reason, set()).add(id(group))
        summary = next(c for c in group.children if c.tag == "summary")
        assert reason in summary.text
    assert all(len(reasons) == 1 for reasons in groups.values())
    assert all(len(found) == 1 for found in group_of_reason.values())
    assert set(group_of_reason) == set(story.expected_drops.values())
    # Groups follow the report's order of reasons.
    order = [e.get("data-drop-reason") for e in page.all("data-drop-reason")]
    assert order == sorted(order, key=DROP_REASONS.index)


def test_a_superseded_memory_that_was_pending_is_reported_superseded(
    member_client: Client, wren: Agent
) -> None:
    first = remember(wren, "preference", "Light theme.", label="theme")
    second = remember(wren, "preference", "Dark theme.", label="theme", supersedes=first)
    page = dom(member_client.get("/agents/wren/"))
    reasons = {
        e.get("data-memory-id"): e.get("data-drop-reason") for e in page.all("data-drop-reason")
    }
    assert reasons == {first: "superseded", second: "awaiting-approval"}


def test_over_budget_memories_are_dropped_whole(
    member_client: Client, wren: Agent, settings: Any
) -> None:
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 40
    short = remember(wren, "profile", "Mira", label="name")
    long = remember(wren, "profile", "A very long biography " * 5, label="bio")
    composition = composed(wren)
    assert {d.memory_id: d.reason for d in composition.report.drops} == {long: "over-budget"}
    page = dom(member_client.get("/agents/wren/"))
    assert page.one("data-drop-reason", "over-budget").get("data-memory-id") == long
    assert page.one("data-memory-ids", short).text == "- **name**: Mira\n"


# --- /memories/<id>/ -------------------------------------------------------------------


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
    """``(kind, actor, details)`` of each history entry, in order."""
    found = []
    for element in page.all("data-event"):
        actor = next(e for e in element.descendants() if e.tag == "strong")
        found.append((element.get("data-event") or "", actor.text, element.squashed))
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
    assert promotion["Status"] == "approved"
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
    assert status.squashed == "In the prompt"


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
    assert promotion_facts(pending)["Status"] == "pending"
    assert promotion_facts(pending)["Decided"] == "not yet"
    assert promotion_facts(pending)["Tier at promotion"] == "guarded"
    assert pending.one("data-memory-status").squashed == "Not in the prompt: awaiting-approval"
    assert [e[:2] for e in events(pending)] == [("saved", "system"), ("queued", "system")]

    decide(memory_id, True, Actor.for_user(member))
    page = detail(member_client, memory_id)
    promotion = promotion_facts(page)
    assert promotion["Status"] == "approved"
    assert promotion["Placement"] == "User Preferences user_preferences → theme"
    assert promotion["Decided"].startswith("mira, ")
    assert [e[:2] for e in events(page)] == [
        ("saved", "system"),
        ("queued", "system"),
        ("approved", "mira"),
    ]
    assert page.one("data-memory-status").squashed == "In the prompt"


def test_the_detail_page_shows_a_rejection_and_its_reason(
    member_client: Client, wren: Agent, member: User
) -> None:
    memory_id = remember(wren, "preference", "Wants daily jokes.", label="jokes")
    decide(memory_id, False, Actor.for_user(member), "not useful")
    page = detail(member_client, memory_id)
    promotion = promotion_facts(page)
    assert promotion["Status"] == "rejected"
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
    assert status.squashed == "Not in the prompt: rejected"


def test_the_detail_page_of_a_spec_declined_memory(member_client: Client, wren: Agent) -> None:
    memory_id = remember(wren, "fact", "Visited Kraków once.")
    page = detail(member_client, memory_id)
    promotion = promotion_facts(page)
    assert promotion["Status"] == "declined spec-declined"
    assert promotion["Placement"] == "none — the spec declined it"
    assert promotion["Decided"] == "not yet"
    history = events(page)
    assert [e[:2] for e in history] == [("saved", "system"), ("declined", "system")]
    assert "reason: spec-declined" in history[-1][2]
    assert page.one("data-memory-status").squashed == "Not in the prompt: spec-declined"


def test_supersedes_and_superseded_by_link_both_ways(
    member_client: Client, wren: Agent, member: User
) -> None:
    older = remember(wren, "profile", "Mira", label="name")
    newer = remember(
        wren, "profile", "Mira K.", label="name", supersedes=older, actor=Actor.for_user(member)
    )

    old_page = detail(member_client, older)
    assert old_page.one("data-memory-status").squashed == "Not in the prompt: superseded"
    assert promotion_facts(old_page)["Status"] == "superseded"
    assert [e[:2] for e in events(old_page)] == [
        ("saved", "system"),
        ("promoted", "system"),
        ("superseded", "mira"),
    ]
    assert f"by: {newer}" in events(old_page)[-1][2]
    links = [e.get("href") for e in old_page.elements if e.tag == "a"]
    assert f"/memories/{newer}/" in links

    new_page = detail(member_client, newer)
    assert new_page.one("data-memory-status").squashed == "In the prompt"
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
            assert status.squashed == "In the prompt", memory_id
        else:
            assert status.squashed == f"Not in the prompt: {expected}", memory_id


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


def test_a_memory_of_the_user_s_other_team_is_404_until_they_switch(
    duo_client: Client, wren: Agent, other_team: Team
) -> None:
    gizmo = create_agent(other_team, "gizmo", memory_config(name="Gizmo"))
    theirs = remember(gizmo, "profile", "Globex user", label="name")
    ours = remember(wren, "profile", "Acme user", label="name")
    # The current team is acme, the first by slug.
    assert duo_client.get(f"/memories/{ours}/").status_code == 200
    assert duo_client.get(f"/memories/{theirs}/").status_code == 404
    assert duo_client.get(f"/memories/{theirs}/?team=globex").status_code == 200
    # The switch sticks: now acme's memory is the one out of reach.
    assert duo_client.get(f"/memories/{ours}/").status_code == 404


def test_the_detail_page_refuses_post(member_client: Client, wren: Agent) -> None:
    memory_id = remember(wren, "profile", "Mira", label="name")
    assert member_client.post(f"/memories/{memory_id}/").status_code == 405


# --- /memories/ ------------------------------------------------------------------------


def listed(client: Client, path: str = "/memories/") -> list[str]:
    return [e.get("data-memory-id") or "" for e in dom(client.get(path)).all("data-memory-id")]


def test_the_list_shows_the_team_s_memories_newest_first(
    member_client: Client, wren: Agent
) -> None:
    ids = [
        remember(wren, "profile", "Mira", label="name"),
        remember(wren, "fact", "Visited Kraków."),
        remember(wren, "preference", "Dark theme.", label="theme"),
    ]
    assert listed(member_client) == list(reversed(ids))
    page = dom(member_client.get("/memories/"))
    for element in page.all("data-memory-id"):
        hrefs = [e.get("href") for e in element.descendants() if e.tag == "a"]
        assert f"/memories/{element.get('data-memory-id')}/" in hrefs
        assert "/agents/wren/" in hrefs


def test_the_list_filters_by_agent_and_kind(member_client: Client, team: Team, wren: Agent) -> None:
    gizmo = create_agent(team, "gizmo", memory_config(name="Gizmo"))
    wren_profile = remember(wren, "profile", "Mira", label="name")
    wren_fact = remember(wren, "fact", "Visited Kraków.")
    gizmo_profile = remember(gizmo, "profile", "Gil", label="name")
    gizmo_fact = remember(gizmo, "fact", "Likes boats.")

    assert set(listed(member_client)) == {wren_profile, wren_fact, gizmo_profile, gizmo_fact}
    assert listed(member_client, "/memories/?agent=wren") == [wren_fact, wren_profile]
    assert listed(member_client, "/memories/?agent=gizmo") == [gizmo_fact, gizmo_profile]
    assert listed(member_client, "/memories/?kind=profile") == [gizmo_profile, wren_profile]
    assert listed(member_client, "/memories/?agent=gizmo&kind=fact") == [gizmo_fact]
    assert listed(member_client, "/memories/?kind=episode") == []
    assert listed(member_client, "/memories/?agent=nobody") == []


def test_the_list_is_paginated_by_fifty(member_client: Client, wren: Agent) -> None:
    ids = [remember(wren, "fact", f"Fact number {n}.") for n in range(51)]
    newest_first = list(reversed(ids))
    first = dom(member_client.get("/memories/"))
    assert [e.get("data-memory-id") for e in first.all("data-memory-id")] == newest_first[:50]
    assert "Page 1 of 2" in first.one("aria-label", "Pages").squashed
    assert listed(member_client, "/memories/?page=2") == newest_first[50:]
    # The filters survive paging.
    assert listed(member_client, "/memories/?agent=wren&kind=fact&page=2") == [ids[0]]
    next_links = [
        e.get("href") for e in first.one("aria-label", "Pages").descendants() if e.tag == "a"
    ]
    assert next_links == ["?page=2"]
    filtered = dom(member_client.get("/memories/?agent=wren&kind=fact"))
    filtered_links = [
        e.get("href") for e in filtered.one("aria-label", "Pages").descendants() if e.tag == "a"
    ]
    assert filtered_links == ["?agent=wren&kind=fact&page=2"]


def test_a_non_member_sees_none_of_the_team_s_memories(
    stranger_client: Client, wren: Agent
) -> None:
    mine = remember(wren, "profile", "Mira", label="name")
    for path in ("/memories/", "/memories/?agent=wren", "/memories/?kind=profile"):
        response = stranger_client.get(path)
        assert response.status_code == 200
        assert mine not in response.content.decode()
        assert listed(stranger_client, path) == []
    assert stranger_client.get("/memories/?team=acme").status_code == 404


def test_the_list_redirects_anonymous_visitors() -> None:
    response = Client().get("/memories/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/memories/"


# --- / : the agents list ---------------------------------------------------------------


def test_the_agents_list_shows_pending_and_dropped_counts(
    member_client: Client, story: Story
) -> None:
    composition = composed(story.agent)
    page = dom(member_client.get("/"))
    card = page.one("data-agent", "wren")
    inside = card.descendants()
    pending = next(e for e in inside if "data-pending-count" in e.attrs)
    dropped = next(e for e in inside if "data-dropped-count" in e.attrs)
    assert pending.squashed == "1 pending"
    assert dropped.squashed == f"{len(story.expected_drops)} dropped"
    assert len(composition.report.drops) == len(story.expected_drops)
    composed_count = next(e for e in inside if "data-composed-count" in e.attrs)
    assert composed_count.text == str(len(story.composed_ids))
    # The authored timezone plus the three composed memory entries.
    counts = next(e for e in inside if "data-counts" in e.attrs)
    assert counts.text == f"2 sections {MIDDLE_DOT} 4 entries"
    assert counts.text == composition.counts.label()


def test_memory_entries_count_on_the_list_and_the_lens(member_client: Client, wren: Agent) -> None:
    assert dom(member_client.get("/")).one("data-counts").text == (
        f"2 sections {MIDDLE_DOT} 1 entry"
    )
    remember(wren, "profile", "Mira", label="name")
    remember(wren, "profile", "Gdańsk", label="city")
    remember(wren, "preference", "Dark theme.", label="theme")  # pending: not an entry
    label = f"2 sections {MIDDLE_DOT} 3 entries"
    card = dom(member_client.get("/")).one("data-agent", "wren")
    assert next(e for e in card.descendants() if "data-counts" in e.attrs).text == label
    assert next(e for e in card.descendants() if "data-pending-count" in e.attrs).squashed == (
        "1 pending"
    )
    assert dom(member_client.get("/agents/wren/")).one("data-counts").text.startswith(label)


def test_an_agent_with_nothing_dropped_shows_no_drop_counts(
    member_client: Client, wren: Agent
) -> None:
    remember(wren, "profile", "Mira", label="name")
    page = dom(member_client.get("/"))
    assert page.all("data-pending-count") == []
    assert page.all("data-dropped-count") == []
    assert page.one("data-composed-count").text == "1"


# --- query counts ----------------------------------------------------------------------


def fill(agent: Agent, member: User, n: int, start: int = 0) -> None:
    """``n`` memories of every outcome: composed, pending, rejected, approved, declined."""
    reviewer = Actor.for_user(member)
    for i in range(start, start + n):
        match i % 5:
            case 0:
                remember(agent, "profile", f"Profile fact {i}", label=f"p{i}")
            case 1:
                remember(agent, "preference", f"Pending preference {i}", label=f"q{i}")
            case 2:
                decide(
                    remember(agent, "preference", f"Rejected {i}", label=f"r{i}"), False, reviewer
                )
            case 3:
                decide(
                    remember(agent, "preference", f"Approved {i}", label=f"a{i}"), True, reviewer
                )
            case _:
                remember(agent, "fact", f"Declined fact {i}", tags=["x", f"t{i}"])


@pytest.mark.parametrize("path", ["/", "/agents/wren/", "/memories/", "/memories/?agent=wren"])
def test_page_query_counts_do_not_grow_with_memories(
    member_client: Client, member: User, wren: Agent, path: str
) -> None:
    fill(wren, member, 1)
    member_client.get(path)  # settle the session (it stores the current team once)
    one = count_queries(member_client, path)

    fill(wren, member, 59, start=1)
    assert Agent.objects.get(pk=wren.pk).memories.count() == 60
    sixty = count_queries(member_client, path)
    assert sixty == one
