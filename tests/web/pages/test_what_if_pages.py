"""What-if where people decide (SPEC §18.2): a queue row's line for approving it and a
proposal's for publishing it, each its own request (an htmx partial, or a page when
followed as a link), for members only, writing nothing; the queue stays query-flat."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from lens.actors import Actor
from lens.agents import get_agent
from lens.core.config import AgentConfig
from lens.models import Agent, Proposal, Team
from memory.configuring import store_config
from memory.decisions import decide
from memory.deliveries.ledger import deliver
from tests.api_calls import db_snapshot
from tests.factories import (
    VAULT_CONFIG,
    approvals_config,
    create_agent,
    grant,
    logged_in,
    make_user,
    many_pending,
    memory_config,
    migration_story,
    propose,
    remember,
)
from tests.pages import dom

pytestmark = pytest.mark.django_db
HTMX = {"HX-Request": "true"}


@pytest.fixture
def wren(team: Team) -> Agent:
    agent = create_agent(team, "wren", memory_config())
    remember(agent, "profile", "Mira", label="name")
    for _ in range(3):
        deliver(get_agent(team, "wren"), Actor(label="runtime"))
    return agent


@pytest.fixture
def pending(wren: Agent) -> str:
    return remember(wren, "preference", "Prefers a dark theme.", label="theme")


def url(record_id: str) -> str:
    return f"/approvals/{record_id}/what-if/"


def test_a_member_sees_what_approving_would_do_as_a_line(
    member_client: Client, pending: str
) -> None:
    response = member_client.get(url(pending), headers=HTMX)
    assert response.status_code == 200
    page = dom(response)
    line = page.one("data-what-if")
    assert line is not None
    assert int(str(line.attrs["data-tokens-delta"])) > 0
    assert line.attrs["data-changed"] == "0"  # saved after the three deliveries
    text = line.squashed
    assert "If approving:" in text
    assert "tokens" in text
    assert "0 of the last 3 prompts would change" in text
    assert "<html" not in response.content.decode()


def test_without_javascript_the_link_is_a_page(member_client: Client, pending: str) -> None:
    response = member_client.get(url(pending))
    assert response.status_code == 200
    body = response.content.decode()
    assert "<html" in body
    assert f"What approving memory {pending} would do" in body
    assert "0 of the last 3 prompts would change" in body


def test_a_decided_memory_says_why_there_is_nothing_to_measure(
    member_client: Client, member: User, pending: str
) -> None:
    decide(pending, True, Actor.for_user(member))
    page = dom(member_client.get(url(pending), headers=HTMX))
    refused = page.one("data-what-if-refused")
    assert refused is not None
    assert "already decided by mira" in refused.squashed


def test_strangers_get_404_and_anonymous_visitors_the_login(
    stranger_client: Client, pending: str
) -> None:
    assert stranger_client.get(url(pending)).status_code == 404
    assert stranger_client.get(url("nonsense")).status_code == 404
    response = Client().get(url(pending))
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_it_writes_nothing(member_client: Client, pending: str) -> None:
    member_client.get(url(pending), headers=HTMX)  # the session exists
    before = db_snapshot()
    member_client.get(url(pending), headers=HTMX)
    member_client.get(url(pending))
    after = db_snapshot()
    before.pop("sessions.Session"), after.pop("sessions.Session")
    assert after == before


def test_every_queue_row_loads_its_line_lazily_with_a_link_to_it(
    member_client: Client, wren: Agent
) -> None:
    ids = many_pending(wren, 3)
    page = dom(member_client.get("/approvals/"))
    lazy = page.all("data-what-if-pending")
    assert [element.attrs["hx-get"] for element in lazy] == [url(i) for i in ids]
    assert all(element.attrs["hx-trigger"] == "revealed" for element in lazy)
    links = [a.attrs["href"] for e in lazy for a in e.descendants() if a.tag == "a"]
    assert links == [url(i) for i in ids]


def test_the_queue_costs_the_same_queries_with_more_rows(
    member_client: Client, wren: Agent, django_assert_num_queries: Any
) -> None:
    many_pending(wren, 2, "a")
    member_client.get("/approvals/")
    with CaptureQueriesContext(connection) as few:
        member_client.get("/approvals/")
    many_pending(wren, 20, "b")
    with django_assert_num_queries(len(few.captured_queries)):
        member_client.get("/approvals/")


# --- a proposal ----------------------------------------------------------------------


@pytest.fixture
def proposal(team: Team, member: User) -> Proposal:
    create_agent(team, "ada", memory_config(protected=True, name="Ada"))
    ada = get_agent(team, "ada")
    remember(ada, "profile", "Mira", label="name")
    deliver(ada, Actor(label="runtime"))
    deliver(get_agent(team, "ada"), Actor(label="runtime"))
    changed = copy.deepcopy(memory_config(protected=True, name="Ada"))
    changed["persona"] = "You are terse."
    return propose(team, "ada", changed, make_user("pia", team))


def test_a_pending_proposal_page_loads_what_publishing_would_do(
    member_client: Client, proposal: Proposal
) -> None:
    page = dom(member_client.get(f"/proposals/{proposal.pk}/"))
    lazy = page.one("data-what-if-pending")
    assert lazy is not None
    assert lazy.attrs["hx-get"] == f"/proposals/{proposal.pk}/what-if/"
    line = dom(member_client.get(str(lazy.attrs["hx-get"]), headers=HTMX)).one("data-what-if")
    assert line is not None
    assert line.attrs["data-changed"] == "2"
    assert "If publishing:" in line.squashed
    assert "2 of the last 2 prompts would change" in line.squashed
    full = member_client.get(str(lazy.attrs["hx-get"]))
    assert f"What publishing proposal {proposal.pk} would do" in full.content.decode()


def test_a_proposal_what_if_is_for_members_only(
    stranger_client: Client, proposal: Proposal
) -> None:
    assert stranger_client.get(f"/proposals/{proposal.pk}/what-if/").status_code == 404
    response = Client().get(f"/proposals/{proposal.pk}/what-if/")
    assert response.status_code == 302


def test_a_viewer_without_the_reviewer_role_sees_it_too(
    team: Team, pending: str, proposal: Proposal
) -> None:
    client = logged_in(make_user("vic", team))
    assert client.get(url(pending), headers=HTMX).status_code == 200
    assert client.get(f"/proposals/{proposal.pk}/what-if/", headers=HTMX).status_code == 200


# --- a revision's restore, the Cache stability card's order --------------------------


@pytest.fixture
def revised(team: Team, wren: Agent) -> Agent:
    """Wren revised once after three deliveries (revision 2: a terser persona)."""
    store_config(team, "wren", AgentConfig.model_validate(memory_config(persona="Terse.")))
    deliver(get_agent(team, "wren"), Actor(label="runtime"))
    return get_agent(team, "wren")


def test_an_older_revision_says_what_restoring_it_would_do(
    member_client: Client, revised: Agent
) -> None:
    page = dom(member_client.get("/agents/wren/revisions/1/"))
    lazy = page.one("data-what-if-pending")
    assert lazy.attrs["hx-get"] == "/agents/wren/revisions/1/what-if/"
    line = dom(member_client.get("/agents/wren/revisions/1/what-if/", headers=HTMX)).one(
        "data-what-if"
    )
    assert "If restoring:" in line.squashed
    # Replayed with revision 1's declarations: the one delivery made under revision 2.
    assert "1 of the last 4 prompts would change" in line.squashed
    assert member_client.get("/agents/wren/revisions/9/what-if/").status_code == 404
    assert member_client.get("/agents/wren/revisions/0/what-if/").status_code == 404


def test_the_stability_order_line_measures_the_order_it_is_given(
    member_client: Client, wren: Agent
) -> None:
    good = "/agents/wren/stability/what-if/?order=user_preferences,user_profile"
    answer = dom(member_client.get(good, headers=HTMX))
    # In the card's words (SPEC §18.2): "would have changed 12 of the last 50 prompts;
    # cached prefix 3,210 → 1,004 tokens".
    said = answer.one("data-what-if-sentence").squashed
    assert re.fullmatch(
        r"This order would have changed \d+ of the last 3 prompts; "
        r"cached prefix [\d,]+ → [\d,]+ tokens",
        said,
    ), said
    assert answer.all("data-what-if-prefix") == []
    bad = "/agents/wren/stability/what-if/?order=user_profile"
    refused = dom(member_client.get(bad, headers=HTMX)).one("data-what-if-refused")
    assert "leaves out user_preferences" in refused.squashed


def test_revision_and_order_lines_are_for_members_only(
    stranger_client: Client, revised: Agent
) -> None:
    for path in (
        "/agents/wren/revisions/1/what-if/",
        "/agents/wren/stability/what-if/?order=user_profile,user_preferences",
    ):
        assert stranger_client.get(path).status_code == 404
        assert Client().get(path).status_code == 302


def test_the_migration_page_loads_what_applying_the_plan_would_do(
    team: Team, settings: Any, member: User, stranger_client: Client
) -> None:
    """The plan's what-if: lazily from the migration page, for members only, writing
    nothing; a reviewer's act approves the guarded moves, so its figures include them."""
    agent, _ids = migration_story(team, settings)
    deliver(get_agent(team, "wren"), Actor(label="runtime"))
    path = f"/agents/{agent.slug}/migration/what-if/"
    member_client = logged_in(member)
    page = member_client.get(f"/agents/{agent.slug}/migration/").content.decode()
    assert f'hx-get="{path}"' in page
    before = db_snapshot()
    line = member_client.get(path, headers=HTMX)
    assert line.status_code == 200
    text = line.content.decode()
    assert "If applying:" in text
    assert "of the last 1 prompt would change" in text
    after = db_snapshot()
    before.pop("sessions.Session"), after.pop("sessions.Session")
    assert after == before
    as_member = line.content
    grant(member)
    as_reviewer = logged_in(User.objects.get(pk=member.pk)).get(path, headers=HTMX).content
    assert as_reviewer != as_member  # the preference's move is approved by that act
    assert stranger_client.get(path).status_code == 404
    anonymous = Client().get(path)
    assert anonymous.status_code == 302
    assert anonymous["Location"].startswith("/accounts/login/")


# --- a queue row's phrases, in words -------------------------------------------------


def row_line(client: Client, record_id: str) -> str:
    return dom(client.get(url(record_id), headers=HTMX)).one("data-what-if").squashed


def test_a_row_says_the_memories_its_approval_pushes_out(
    member_client: Client, team: Team, settings: Any
) -> None:
    """Room for one line: approving the newer memory pushes the older one out."""
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 20
    agent = create_agent(team, "wren", memory_config())
    remember(agent, "profile", "Mira", label="name")
    deliver(get_agent(team, "wren"), Actor(label="runtime"))
    theme = remember(agent, "preference", "Dark.", label="theme")
    said = row_line(member_client, theme)
    assert "pushes out 1 memory" in said, said
    assert "1 of the last 1 prompt would change" not in said  # saved after it


def test_a_row_says_when_its_memory_stays_out_and_why(member_client: Client, team: Team) -> None:
    """An authored entry holds the address: approving it changes its status only."""
    agent = create_agent(team, "wren", approvals_config())
    theme = remember(agent, "preference", "Dark theme.", label="theme")
    said = row_line(member_client, theme)
    assert "stays out (authored-wins)" in said, said
    assert "same tokens" in said


def test_a_row_says_the_memories_its_approval_brings_in(
    member_client: Client, team: Team, settings: Any
) -> None:
    """An earning memory seen twice since: approved by a reviewer, its sightings compose
    with it."""
    settings.EARNED_SIGHTINGS = 4
    vault = create_agent(team, "vault", VAULT_CONFIG)
    holder = remember(vault, "preference", "Likes jazz.", label="music", session="a")
    remember(vault, "preference", "Likes jazz.", label="music", session="b")
    remember(vault, "preference", "likes  JAZZ.", label="music", session="c")
    said = row_line(member_client, holder)
    assert "brings in 2 memories" in said, said
