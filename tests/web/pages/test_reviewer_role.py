"""Reviewing is a role per team (SPEC §5.4, §10): a reviewer in acme decides acme's
promotions and none of globex's, where they are a plain member; the global permission
``memory.approve_promotion`` still means a reviewer in every team of its holder."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from lens.models import Agent, Membership, Role, Team
from memory.models import PromotionStatus
from tests.factories import (
    approvals_config,
    create_agent,
    grant,
    logged_in,
    make_user,
    post_bulk,
    post_decision,
    preference,
    promotion_of,
)
from tests.pages import FormData, dom, form_data, put, row_of
from web.pages.toolkit import can_review

SAME_SITE = {"Sec-Fetch-Site": "same-origin"}


@pytest.fixture
def queues(team: Team, other_team: Team) -> dict[str, Agent]:
    return {
        "acme": create_agent(team, "wren", approvals_config()),
        "globex": create_agent(other_team, "gizmo", approvals_config()),
    }


@pytest.fixture
def ria(team: Team, other_team: Team) -> User:
    """A reviewer in acme, a plain member of globex, without the global permission."""
    user = make_user("ria", team, other_team)
    Membership.objects.filter(user=user, team=team).update(role=Role.REVIEWER)
    return user


def test_a_reviewer_decides_in_their_team_and_gets_403_in_another(
    ria: User, queues: dict[str, Agent]
) -> None:
    client = logged_in(ria)
    ours = [preference(queues["acme"], f"Acme {i}.", label=f"a{i}") for i in range(3)]
    theirs = [preference(queues["globex"], f"Globex {i}.", label=f"g{i}") for i in range(3)]

    assert post_decision(client, ours[0], "approve", team="acme").status_code == 200
    assert post_bulk(client, "reject", ours[1:], team="acme").status_code == 200
    reopen = client.post(f"/memories/{ours[1]}/reopen/", {"team": "acme"})
    assert reopen.status_code == 302
    assert promotion_of(ours[0]).status == PromotionStatus.APPROVED
    assert promotion_of(ours[1]).status == PromotionStatus.PENDING
    assert promotion_of(ours[2]).status == PromotionStatus.REJECTED

    assert post_decision(client, theirs[0], "approve", team="globex").status_code == 403
    assert post_decision(client, theirs[0], "reject", team="globex", htmx=False).status_code == 403
    assert post_bulk(client, "approve", theirs, team="globex").status_code == 403
    assert client.post(f"/memories/{theirs[0]}/revoke/", {"team": "globex"}).status_code == 403
    assert {promotion_of(r).status for r in theirs} == {PromotionStatus.PENDING}


def test_the_pages_offer_deciding_only_where_the_user_reviews(
    ria: User, queues: dict[str, Agent]
) -> None:
    client = logged_in(ria)
    preference(queues["acme"], "Acme.", label="a")
    theirs = preference(queues["globex"], "Globex.", label="g")

    acme = dom(client.get("/approvals/?team=acme", headers=SAME_SITE))
    assert acme.all("data-action", "approve")
    assert not acme.all("data-read-only")
    globex = dom(client.get("/approvals/?team=globex", headers=SAME_SITE))
    assert globex.all("data-action", "approve") == []
    assert "reviewer role" in globex.one("data-read-only").squashed
    # A rejected memory of globex: no Reopen button for a plain member there.
    call_command("create_team", "globex", "--reviewer", "ria", stdout=StringIO())
    assert post_decision(client, theirs, "reject", team="globex").status_code == 200
    Membership.objects.filter(user=ria, team__slug="globex").update(role=Role.MEMBER)
    page = client.get(f"/memories/{theirs}/?team=globex").content.decode()
    assert "Reopen" not in page


def test_the_global_permission_still_decides_in_every_team_of_its_holder(
    queues: dict[str, Agent], team: Team, other_team: Team
) -> None:
    holder = grant(make_user("gus", team, other_team))
    client = logged_in(holder)
    for slug, agent in queues.items():
        record_id = preference(agent, f"{slug} pending.", label="p")
        assert post_decision(client, record_id, "approve", team=slug).status_code == 200
        assert promotion_of(record_id).status == PromotionStatus.APPROVED
        assert can_review(holder, agent.team)


def test_can_review_is_the_one_rule(ria: User, team: Team, other_team: Team) -> None:
    assert can_review(ria, team)
    assert not can_review(ria, other_team)
    outsider = make_user("otto", other_team)
    assert not can_review(outsider, team)


# --- create_team --reviewer ------------------------------------------------------------


def roles(slug: str) -> dict[str, str]:
    return dict(Membership.objects.filter(team__slug=slug).values_list("user__username", "role"))


def test_create_team_grants_the_reviewer_role_and_is_idempotent(db: None) -> None:
    for name in ("ann", "bob", "cy"):
        make_user(name)
    args = ("create_team", "ops", "--member", "ann", "--reviewer", "bob", "--reviewer", "cy")
    out = StringIO()
    call_command(*args, stdout=out)
    assert roles("ops") == {"ann": "member", "bob": "reviewer", "cy": "reviewer"}
    assert "reviewers: bob, cy" in out.getvalue()

    call_command(*args, stdout=StringIO())
    assert roles("ops") == {"ann": "member", "bob": "reviewer", "cy": "reviewer"}
    assert Membership.objects.filter(team__slug="ops").count() == 3

    # --reviewer promotes a member; --member never demotes a reviewer.
    call_command("create_team", "ops", "--reviewer", "ann", "--member", "bob", stdout=StringIO())
    assert roles("ops") == {"ann": "reviewer", "bob": "reviewer", "cy": "reviewer"}


def test_create_team_refuses_an_unknown_reviewer(db: None) -> None:
    with pytest.raises(CommandError, match="No user 'nobody'"):
        call_command("create_team", "ops", "--reviewer", "nobody", stdout=StringIO())
    assert not Team.objects.filter(slug="ops").exists()


# --- the admin -------------------------------------------------------------------------


def test_the_team_page_edits_a_members_role(admin_client: Client, team: Team, member: User) -> None:
    url = f"/admin/lens/team/{team.pk}/change/"
    data: FormData = form_data(admin_client, url, "team_form")
    row = row_of(data, "memberships", "user", str(member.pk))
    assert data[f"memberships-{row}-role"] == ["member"]

    put(data, f"memberships-{row}-role", "reviewer")
    response = admin_client.post(url, data)

    assert response.status_code == 302
    assert Membership.objects.get(team=team, user=member).role == Role.REVIEWER
    assert can_review(member, team)


def test_a_pending_memory_s_page_lets_a_reviewer_decide_it_there(
    ria: User, member: User, queues: dict[str, Agent], stranger_client: Client
) -> None:
    waiting = [preference(queues["acme"], f"Acme {i}.", label=f"a{i}") for i in range(2)]
    page_of = f"/memories/{waiting[0]}/"
    # A plain member sees the way to the queue, not the buttons.
    plain = dom(logged_in(member).get(page_of))
    assert plain.all("data-decide-here") == []
    client = logged_in(ria)
    page = dom(client.get(page_of))
    form = page.one("data-decide-here")
    assert form.get("action") == f"/approvals/{waiting[0]}/decide/"
    buttons = {e.squashed for e in form.descendants() if e.tag == "button"}
    assert buttons == {"Approve", "Reject"}

    hidden = {
        e.get("name") or "": e.get("value") or ""
        for e in form.descendants()
        if e.tag == "input" and e.get("type") == "hidden" and e.get("name") != "csrfmiddlewaretoken"
    }
    assert hidden == {"team": "acme", "back": "memory"}
    approved = client.post(form.get("action") or "", {**hidden, "decision": "approve"})
    # Back on the memory's page, which says so.
    assert approved.status_code == 302
    assert approved["Location"] == f"{page_of}?team=acme"
    assert promotion_of(waiting[0]).status == PromotionStatus.APPROVED
    after = dom(client.get(approved["Location"]))
    assert after.all("data-decide-here") == []
    assert "Approved by ria" in after.one("role", "status").squashed

    rejected = client.post(
        f"/approvals/{waiting[1]}/decide/",
        {**hidden, "decision": "reject", "reason": "Not a preference."},
    )
    assert rejected.status_code == 302
    assert promotion_of(waiting[1]).status == PromotionStatus.REJECTED
    assert promotion_of(waiting[1]).decision_note == "Not a preference."
    # Someone of another team can neither see the page nor decide.
    assert stranger_client.get(page_of).status_code == 404
