"""Every page form carries the team it was rendered for, and the server acts in that team
only (SPEC §9): two tabs open on two teams never write into each other's. A link from
another site shows the team it names without making it the remembered one."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from kvstore import store
from lens.models import Agent, Team
from memory.models import PromotionStatus
from tests.factories import (
    HTMX,
    approvals_config,
    create_agent,
    grant,
    kv_page_url,
    post_decision,
    post_delete,
    post_write,
    preference,
    promotion_of,
    versions_of,
)
from tests.pages import Dom, alerts, dom, draft
from web.pages.toolkit import SESSION_KEY

SAME_SITE = {"Sec-Fetch-Site": "same-origin"}
KEY = "shared.cfg"
TEAMS = ("acme", "globex")


def form_teams(page: Dom) -> set[str]:
    """The hidden ``team`` of every form on the page."""
    return {str(e.get("value")) for e in page.all("name", "team", tag="input")}


def open_tab(client: Client, path: str, team: str) -> str:
    """Open ``path`` for ``team`` as the switcher would; the team its forms carry."""
    (carried,) = form_teams(dom(client.get(f"{path}?team={team}", headers=SAME_SITE)))
    return carried


@pytest.fixture
def shared(team: Team, other_team: Team) -> None:
    store.write(team, KEY, "acme v1")
    store.write(other_team, KEY, "globex v1")


def payloads(team: Team, other_team: Team) -> dict[str, list[str]]:
    return {
        "acme": [p for _, p in versions_of(team, KEY)],
        "globex": [p for _, p in versions_of(other_team, KEY)],
    }


# --- key/value: two tabs ---------------------------------------------------------------


@pytest.mark.parametrize("first", TEAMS)
def test_saving_an_older_tab_writes_its_own_teams_key(
    duo_client: Client, team: Team, other_team: Team, shared: None, first: str
) -> None:
    second = TEAMS[1 - TEAMS.index(first)]
    stale = open_tab(duo_client, kv_page_url(KEY), first)
    assert open_tab(duo_client, kv_page_url(KEY), second) == second
    assert duo_client.session[SESSION_KEY] == second  # the later tab switched the session

    response = post_write(duo_client, KEY, f"{first} v2", 1, team=stale)

    assert response.status_code == 302
    assert response["Location"] == f"{kv_page_url(KEY)}?team={first}"
    expected = {first: [f"{first} v1", f"{first} v2"], second: [f"{second} v1"]}
    assert payloads(team, other_team) == expected


@pytest.mark.parametrize("first", TEAMS)
def test_deleting_from_an_older_tab_deletes_its_own_teams_key(
    duo_client: Client, team: Team, other_team: Team, shared: None, first: str
) -> None:
    second = TEAMS[1 - TEAMS.index(first)]
    stale = open_tab(duo_client, kv_page_url(KEY), first)
    open_tab(duo_client, kv_page_url(KEY), second)

    response = post_delete(duo_client, KEY, KEY, team=stale)

    assert response.status_code == 302
    assert response["Location"] == f"/kv/?team={first}"
    assert payloads(team, other_team) == {first: [], second: [f"{second} v1"]}


@pytest.mark.parametrize("given", [None, "", "initech"])
def test_a_kv_form_naming_none_of_the_users_teams_writes_nothing(
    duo_client: Client, team: Team, other_team: Team, shared: None, given: str | None
) -> None:
    open_tab(duo_client, kv_page_url(KEY), "globex")
    data = {"action": "write", "payload": "typed text", "if_version": "1"}
    if given is not None:
        data["team"] = given

    page = dom(duo_client.post(kv_page_url(KEY), data), status=400)

    (message,) = [a for a in alerts(page) if "Reload the page" in a]
    assert "you are now working in globex" in message
    assert "Nothing was changed" in message
    assert draft(page) == "typed text"  # the form comes back with the text kept
    assert form_teams(page) == {"globex"}  # for the team the page now shows
    assert post_delete(duo_client, KEY, KEY, team=given).status_code == 400
    assert payloads(team, other_team) == {"acme": ["acme v1"], "globex": ["globex v1"]}


def test_a_kv_form_of_a_team_the_user_left_is_refused(
    duo: User, duo_client: Client, team: Team, other_team: Team, shared: None
) -> None:
    stale = open_tab(duo_client, kv_page_url(KEY), "globex")
    duo.memberships.filter(team=other_team).delete()

    response = post_write(duo_client, KEY, "too late", 1, team=stale)

    assert response.status_code == 400
    assert "opened for team globex, which you do not belong to" in response.content.decode()
    assert payloads(team, other_team) == {"acme": ["acme v1"], "globex": ["globex v1"]}


# --- approvals: two tabs -----------------------------------------------------------------


@pytest.fixture
def two_queues(duo: User, team: Team, other_team: Team) -> dict[str, str]:
    """One pending memory in each team's queue; duo holds the global permission."""
    grant(duo)
    wren = create_agent(team, "wren", approvals_config())
    gizmo = create_agent(other_team, "gizmo", approvals_config())
    return {
        "acme": preference(wren, "Acme: tea.", label="drink"),
        "globex": preference(gizmo, "Globex: coffee.", label="drink"),
    }


@pytest.mark.parametrize("htmx", [True, False])
@pytest.mark.parametrize("first", TEAMS)
def test_deciding_from_an_older_tab_decides_in_its_own_team(
    duo_client: Client, two_queues: dict[str, str], first: str, htmx: bool
) -> None:
    second = TEAMS[1 - TEAMS.index(first)]
    stale = open_tab(duo_client, "/approvals/", first)
    open_tab(duo_client, "/approvals/", second)

    response = post_decision(duo_client, two_queues[first], "approve", team=stale, htmx=htmx)

    assert response.status_code == 200 if htmx else 302
    if not htmx:
        assert response["Location"] == f"/approvals/?team={first}"
    assert promotion_of(two_queues[first]).status == PromotionStatus.APPROVED
    assert promotion_of(two_queues[second]).status == PromotionStatus.PENDING


@pytest.mark.parametrize("first", TEAMS)
def test_a_form_cannot_decide_another_teams_row(
    duo_client: Client, two_queues: dict[str, str], first: str
) -> None:
    second = TEAMS[1 - TEAMS.index(first)]
    stale = open_tab(duo_client, "/approvals/", first)
    open_tab(duo_client, "/approvals/", second)

    # The other team's row, posted with this tab's team: not found in it.
    assert post_decision(duo_client, two_queues[second], "approve", team=stale).status_code == 404
    revoke = duo_client.post(f"/memories/{two_queues[second]}/revoke/", {"team": stale})
    assert revoke.status_code == 404
    assert promotion_of(two_queues["acme"]).status == PromotionStatus.PENDING
    assert promotion_of(two_queues["globex"]).status == PromotionStatus.PENDING


@pytest.mark.parametrize("given", [None, "initech"])
def test_a_decision_naming_none_of_the_users_teams_decides_nothing(
    duo_client: Client, two_queues: dict[str, str], given: str | None
) -> None:
    open_tab(duo_client, "/approvals/", "globex")
    record_id = two_queues["globex"]

    answer = post_decision(duo_client, record_id, "approve", team=given)
    assert answer.status_code == 400
    assert "Reload the page" in answer.content.decode()
    page = dom(post_decision(duo_client, record_id, "approve", team=given, htmx=False), 400)
    assert any("you are now working in globex" in a for a in alerts(page))
    assert record_id in {str(e.get("data-promotion-id")) for e in page.all("data-promotion-id")}
    bulk = {"decision": "approve", "selected": [record_id]}
    if given is not None:
        bulk["team"] = given
    assert duo_client.post("/approvals/bulk/", bulk, headers=HTMX).status_code == 400
    assert duo_client.post(f"/memories/{record_id}/revoke/", {}).status_code == 400
    assert promotion_of(record_id).status == PromotionStatus.PENDING


def test_every_form_of_the_pages_carries_the_team_it_shows(
    duo_client: Client, two_queues: dict[str, str], team: Team, other_team: Team, shared: None
) -> None:
    approve = {"decision": "approve", "team": "globex"}
    assert duo_client.post(f"/approvals/{two_queues['globex']}/decide/", approve).status_code == 302
    for slug in TEAMS:
        queue = dom(duo_client.get(f"/approvals/?team={slug}"))
        # Every posting form but signing out, which belongs to no team.
        posting = [
            e
            for e in queue.all("method", "post", tag="form")
            if "logout" not in str(e.get("action"))
        ]
        assert posting, slug
        assert form_teams(queue) == {slug}
        assert len(queue.all("name", "team", tag="input")) == len(posting)
        key = dom(duo_client.get(f"{kv_page_url(KEY)}?team={slug}"))
        assert form_teams(key) == {slug}
        assert len(key.all("name", "team", tag="input")) == 2  # write and delete
    approved = dom(duo_client.get(f"/memories/{two_queues['globex']}/?team=globex"))
    assert form_teams(approved) == {"globex"}


# --- the remembered team -------------------------------------------------------------------


def test_a_link_from_another_site_shows_its_team_without_remembering_it(
    duo_client: Client, agent: Agent, other_team: Team
) -> None:
    create_agent(other_team, "gizmo")
    duo_client.get("/", headers=SAME_SITE)
    assert duo_client.session[SESSION_KEY] == "acme"

    for foreign in (
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
        {"Referer": "https://evil.example/page"},
        {},  # neither header: not known to be ours
    ):
        html = duo_client.get("/?team=globex", headers=foreign).content.decode()
        assert 'href="/agents/gizmo/"' in html, foreign  # the page shows what was asked
        assert duo_client.session[SESSION_KEY] == "acme", foreign
        assert duo_client.get("/agents/wren/").status_code == 200

    duo_client.get("/?team=globex", headers={"Sec-Fetch-Site": "none"})  # typed by the user
    assert duo_client.session[SESSION_KEY] == "globex"
    duo_client.get("/?team=acme", headers={"Referer": "http://testserver/kv/"})
    assert duo_client.session[SESSION_KEY] == "acme"
    duo_client.get("/?team=globex", headers=SAME_SITE)
    assert duo_client.session[SESSION_KEY] == "globex"
