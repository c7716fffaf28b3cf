"""The pages saying in words why a memory is or is not in the prompt (SPEC §5.6, §9):
the lens's drops panel, a memory's page and the memories list, in one vocabulary.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lens.actors import Actor
from lens.models import Agent, Team
from memory.core.explain import utc
from memory.decisions import decide, revoke
from tests.factories import (
    Story,
    composed,
    create_agent,
    every_drop,
    grant,
    logged_in,
    make_user,
    memory_config,
    preference,
    promotion_of,
    remember,
)
from tests.pages import Dom, Element, buttons, dom, with_class

pytestmark = pytest.mark.django_db


def lens(client: Client, slug: str = "wren") -> Dom:
    return dom(client.get(f"/agents/{slug}/"))


def drop_of(page: Dom, memory_id: str) -> Element:
    return page.one("data-memory-id", memory_id, tag="li")


def why_of(item: Element) -> str:
    (why,) = with_class(item, "drop-why")
    return why.squashed


def hrefs(element: Element) -> list[str]:
    return [e.get("href") or "" for e in element.descendants() if e.tag == "a"]


# --- the lens's drops panel ----------------------------------------------------------------


def test_each_drop_says_in_words_what_blocks_it(
    member_client: Client, story: Story, member: User
) -> None:
    page = lens(member_client)
    ids = story.ids
    authored = why_of(drop_of(page, ids["authored"]))
    assert "“timezone”" in authored
    assert "“Europe/Warsaw”" in authored

    superseded = drop_of(page, ids["old_name"])
    assert "A newer memory replaced it: “Mira K.”" in why_of(superseded)
    assert f"/memories/{ids['name']}/" in hrefs(superseded)

    rejected = why_of(drop_of(page, ids["rejected"]))
    assert rejected.startswith("Rejected by mira on ")
    assert rejected.endswith("“not useful”.")  # the reason is never cut

    pending = drop_of(page, ids["pending"])
    assert why_of(pending).startswith("Waiting for approval since ")
    assert "User Preferences is a guarded section" in why_of(pending)
    assert "/approvals/?agent=wren" in hrefs(pending)

    assert "user_preferences" in why_of(drop_of(page, ids["undeclared"]))
    assert "is a locked section" in why_of(drop_of(page, ids["locked"]))
    assert "is earned:" in why_of(drop_of(page, ids["earned"]))
    assert "seen in 1 of 3 sessions" in why_of(drop_of(page, ids["earned"]))
    assert "user-background v1" in why_of(drop_of(page, ids["declined"]))
    assert "“fact”" in why_of(drop_of(page, ids["declined"]))


def test_the_drops_panel_groups_in_plain_words_with_counts(
    member_client: Client, story: Story
) -> None:
    page = lens(member_client)
    titles = {
        group.get("data-drop-group"): next(c for c in group.children if c.tag == "summary").squashed
        for group in page.all("data-drop-group")
    }
    assert titles["awaiting-approval"] == "Waiting for approval · 1"
    assert titles["authored-wins"] == "An authored entry wins · 1"
    assert titles["superseded"] == "Replaced by a newer memory · 1"
    assert titles["spec-declined"] == "Recall only · 1"
    # Never an error's look: the waiting group is amber, the settled ones muted.
    tones = {g.get("data-drop-group"): g.get("class") or "" for g in page.all("data-drop-group")}
    assert "tone-wait" in tones["awaiting-approval"]
    assert "tone-quiet" in tones["rejected"]
    assert not any("danger" in c or "error" in c for c in tones.values())


def test_over_budget_drops_say_needed_and_left_and_the_budget_is_shown(
    member_client: Client, wren: Agent, settings: Any
) -> None:
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 3000
    # The newer memory is kept first: the older one no longer fits.
    over = remember(wren, "profile", "o" * 200, label="b")
    kept = remember(wren, "profile", "k" * 2900, label="a")
    page = lens(member_client)
    used = len("- **a**: \n") + 2900
    assert page.one("data-memory-chars").squashed == f"{used:,} of 3,000 chars of memory"
    assert page.one("data-memory-ids", kept)
    needed = len("- **b**: \n") + 200
    assert why_of(drop_of(page, over)) == (
        f"Over the memory budget: its line needs {needed} chars and {3000 - used} of 3,000 "
        "are left."
    )
    (place,) = with_class(drop_of(page, over), "drop-place")
    assert place.squashed == "About the User → b"


def test_what_the_drops_say_is_escaped(member_client: Client, team: Team) -> None:
    config = memory_config()
    config["background"]["sections"][0]["entries"] = [
        {"key": "timezone", "value": '<script>alert(1)</script> & "x"'}
    ]
    agent = create_agent(team, "wren", config)
    old = remember(agent, "profile", "<b>old</b>", label="name")
    remember(agent, "profile", "<i>new</i> & more", label="name", supersedes=old)
    memory_id = remember(agent, "profile", "UTC", label="timezone")
    response = member_client.get("/agents/wren/")
    html = response.content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "<i>new</i>" not in html
    page = dom(response)
    assert '“<script>alert(1)</script> & "x"”' in why_of(drop_of(page, memory_id))
    assert "“<i>new</i> & more”" in why_of(drop_of(page, old))


def test_the_lens_costs_the_same_queries_for_few_and_many_drops(
    member_client: Client,
    wren: Agent,
    member: User,
    settings: Any,
    django_assert_max_num_queries: Any,
) -> None:
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 120  # a few over the budget, then many
    every_drop(wren, member, 1)
    member_client.get("/agents/wren/")  # settle the session
    with django_assert_max_num_queries(25) as few:
        assert member_client.get("/agents/wren/").status_code == 200
    every_drop(wren, member, 25, start=1)
    assert len(composed(wren).report.drops) > 150
    # The lens counts the migration plan again after memories change (one query more
    # on that first view, whatever their number): settled, it costs the same.
    with django_assert_max_num_queries(len(few) + 1):
        lens(member_client)
    with django_assert_max_num_queries(len(few)):
        page = lens(member_client)
    assert len(page.all("data-drop-reason")) == len(composed(wren).report.drops)


# --- a memory's page -----------------------------------------------------------------------


def memory_page(client: Client, memory_id: str) -> Dom:
    return dom(client.get(f"/memories/{memory_id}/"))


def status_of(page: Dom) -> Element:
    return page.one("data-memory-status")


def test_an_over_budget_memory_offers_no_revoke_and_says_needed_and_left(
    reviewer_client: Client, wren: Agent, settings: Any
) -> None:
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 40
    remember(wren, "profile", "Mira", label="name")
    over = remember(wren, "profile", "A very long biography " * 5, label="bio")
    page = memory_page(reviewer_client, over)
    status = status_of(page)
    assert status.get("data-memory-status") == "over-budget"
    needed = len("- **bio**: \n") + len("A very long biography " * 5)
    assert status.squashed == (
        f"Not in the prompt: Over the memory budget: its line needs {needed} chars and "
        f"{40 - len('- **name**: Mira' + chr(10))} of 40 are left."
    )
    assert "Revoke" not in buttons(page)
    assert "Take it out of the prompt" not in page.elements[0].text


def test_an_authored_wins_memory_offers_no_revoke_and_names_the_entry(
    reviewer_client: Client, wren: Agent
) -> None:
    memory_id = remember(wren, "profile", "UTC", label="timezone")
    page = memory_page(reviewer_client, memory_id)
    assert status_of(page).squashed == (
        "Not in the prompt: The authored entry “timezone” in About the User holds the same "
        "key and wins: “Europe/Warsaw”."
    )
    assert "Revoke" not in buttons(page)


def test_a_composed_memory_says_where_and_offers_revoke(
    reviewer_client: Client, wren: Agent
) -> None:
    memory_id = remember(wren, "profile", "Mira", label="name")
    page = memory_page(reviewer_client, memory_id)
    assert status_of(page).get("data-memory-status") == "composed"
    assert status_of(page).squashed == "In the prompt: It fills “name” in About the User."
    assert "Revoke" in buttons(page)


def test_a_revoked_memory_reads_as_revoked_with_who_when_and_why(
    reviewer_client: Client, wren: Agent, rhea: User
) -> None:
    memory_id = preference(wren, "Tea, never coffee.", label="drink")
    decide(memory_id, True, Actor.for_user(rhea))
    revoke(memory_id, Actor.for_user(rhea), "wrong person")
    page = memory_page(reviewer_client, memory_id)
    decided_at = promotion_of(memory_id).decided_at
    assert decided_at is not None
    status = status_of(page)
    assert status.get("data-memory-status") == "revoked"
    assert status.squashed == (
        f"Not in the prompt: Revoked by rhea on {utc(decided_at)}, after it was approved: "
        "“wrong person”."
    )
    assert "reject" not in status.squashed.lower()
    assert "Reopen" in buttons(page)
    assert "Revoke" not in buttons(page)


def test_a_pending_memory_links_to_the_agent_s_queue(member_client: Client, wren: Agent) -> None:
    memory_id = preference(wren, "Dark theme.", label="theme")
    status = status_of(memory_page(member_client, memory_id))
    assert status.squashed.startswith("Not in the prompt: Waiting for approval since ")
    assert "/approvals/?agent=wren" in hrefs(status)


def test_a_superseded_memory_links_to_the_newer_one(member_client: Client, wren: Agent) -> None:
    older = remember(wren, "profile", "Mira", label="name")
    newer = remember(wren, "profile", "Mira K.", label="name", supersedes=older)
    status = status_of(memory_page(member_client, older))
    assert status.squashed == "Not in the prompt: A newer memory replaced it: “Mira K.”"
    assert hrefs(status) == [f"/memories/{newer}/"]


def test_the_memory_page_costs_the_same_queries_for_few_and_many_drops(
    member_client: Client, wren: Agent, member: User, django_assert_max_num_queries: Any
) -> None:
    every_drop(wren, member, 1)
    old = remember(wren, "profile", "Old", label="who")
    remember(wren, "profile", "New", label="who", supersedes=old)
    member_client.get(f"/memories/{old}/")
    with django_assert_max_num_queries(30) as few:
        assert member_client.get(f"/memories/{old}/").status_code == 200
    every_drop(wren, member, 20, start=1)
    with django_assert_max_num_queries(len(few)):
        assert member_client.get(f"/memories/{old}/").status_code == 200


# --- the memories list -----------------------------------------------------------------------


def states(page: Dom) -> dict[str, str]:
    """Each listed memory's status cell, squashed."""
    found = {}
    for row in page.all("data-memory-id", tag="tr"):
        (cell,) = [e for e in row.descendants() if e.get("data-prompt-state")]
        found[row.get("data-memory-id") or ""] = cell.squashed
    return found


def test_the_list_says_in_the_prompt_only_for_composed_memories(
    member_client: Client, story: Story, settings: Any
) -> None:
    shown = states(dom(member_client.get("/memories/")))
    ids = story.ids
    for memory_id in story.composed_ids:
        assert shown[memory_id] == "in the prompt", memory_id
    assert shown[ids["pending"]] == "not in the prompt waiting for approval"
    assert shown[ids["authored"]] == "not in the prompt authored entry wins"
    assert shown[ids["old_name"]] == "not in the prompt superseded"
    assert shown[ids["rejected"]] == "not in the prompt rejected"
    assert shown[ids["declined"]] == "not in the prompt recall only"
    assert shown[ids["locked"]] == "not in the prompt locked section"


def test_an_approved_memory_over_the_budget_is_not_green_on_the_list(
    member_client: Client, wren: Agent, settings: Any
) -> None:
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 40
    kept = remember(wren, "profile", "Mira", label="name")
    over = remember(wren, "profile", "A very long biography " * 5, label="bio")
    page = dom(member_client.get("/memories/"))
    assert states(page) == {kept: "in the prompt", over: "not in the prompt over budget"}
    row = page.one("data-memory-id", over, tag="tr")
    badges = with_class(row, "state-badge")
    assert [b.get("class") for b in badges] == ["state-badge state-note"]
    assert with_class(page.one("data-memory-id", kept, tag="tr"), "state-in")


def test_a_revoked_memory_reads_as_revoked_on_the_list(
    member_client: Client, wren: Agent, rhea: User
) -> None:
    memory_id = preference(wren, "Tea.", label="drink")
    decide(memory_id, True, Actor.for_user(rhea))
    revoke(memory_id, Actor.for_user(rhea))
    assert states(dom(member_client.get("/memories/"))) == {memory_id: "not in the prompt revoked"}


def test_search_results_use_the_same_words(member_client: Client, wren: Agent) -> None:
    composed_id = remember(wren, "profile", "Likes green tea", label="drink")
    pending = preference(wren, "Tea before noon", label="tea")
    shown = states(dom(member_client.get("/memories/?q=tea")))
    assert shown == {
        composed_id: "in the prompt",
        pending: "not in the prompt waiting for approval",
    }


def test_the_list_is_for_members_only(stranger_client: Client, wren: Agent) -> None:
    remember(wren, "profile", "Mira", label="name")
    assert states(dom(stranger_client.get("/memories/"))) == {}
    anonymous = Client().get("/memories/")
    assert anonymous.status_code == 302
    assert anonymous["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize(("path", "rows"), [("/memories/", 50), ("/memories/?q=pending", 9)])
def test_the_list_costs_the_same_queries_for_few_and_many_rows_and_agents(
    team: Team,
    wren: Agent,
    member: User,
    path: str,
    rows: int,
    django_assert_max_num_queries: Any,
) -> None:
    client = logged_in(grant(make_user("lister", team)))
    every_drop(wren, member, 1)
    client.get(path)  # settle the session
    with django_assert_max_num_queries(20) as few:
        assert client.get(path).status_code == 200
    for i in range(4):
        extra = create_agent(team, f"extra-{i}", memory_config(name=f"Extra {i}"))
        every_drop(extra, member, 2)
    with django_assert_max_num_queries(len(few)):
        page = dom(client.get(path))
    assert len(states(page)) == rows
