"""Who may decide in the approval queue (SPEC §5.4, §9): the permission, the team, anonymous
visitors, API tokens and CSRF.
"""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lens.actors import Actor
from lens.models import Agent, ApiToken, Team
from memory.decisions import decide
from memory.models import PromotionStatus
from tests.factories import (
    HTMX,
    create_agent,
    decisions,
    grant,
    logged_in,
    make_user,
    many_pending,
    memory_config,
    post_bulk,
    post_decision,
    preference,
    promotion_of,
)
from tests.pages import (
    approval_queue,
    buttons,
    dom,
    fragment,
    queue_row_ids,
    queue_rows,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def outsider_client(stranger: User) -> Client:
    """A member of globex only, holding the permission (which is not team-scoped)."""
    return logged_in(grant(stranger))


# --- who may do what ---------------------------------------------------------------


def test_a_member_without_the_permission_sees_the_queue_read_only(
    viewer_client: Client, wren: Agent
) -> None:
    ids = many_pending(wren, 2)
    page = approval_queue(viewer_client)
    assert queue_row_ids(page) == ids
    note = page.one("data-read-only")
    assert "memory.approve_promotion" in note.squashed
    assert not {"Approve", "Reject", "Approve selected", "Reject selected"} & set(buttons(page))
    posting = [
        e.get("action") for e in page.elements if e.tag == "form" and e.get("method") == "post"
    ]
    assert posting == ["/accounts/logout/"]
    assert [e for e in page.elements if e.get("name") in ("selected", "reason")] == []

    detail = dom(viewer_client.get(f"/memories/{ids[0]}/"))
    assert [e for e in detail.elements if "revoke" in (e.get("action") or "")] == []


def test_a_member_without_the_permission_gets_403_and_nothing_changes(
    viewer_client: Client, wren: Agent, reviewer: User
) -> None:
    pending = preference(wren, "Tea, never coffee.", label="drink")
    approved = preference(wren, "Short answers.", label="answers")
    decide(approved, True, Actor.for_user(reviewer))

    assert post_decision(viewer_client, pending, "approve").status_code == 403
    assert post_decision(viewer_client, pending, "reject", htmx=False).status_code == 403
    assert post_bulk(viewer_client, "approve", [pending]).status_code == 403
    assert viewer_client.post(f"/memories/{approved}/revoke/", {"team": "acme"}).status_code == 403
    assert promotion_of(pending).status == PromotionStatus.PENDING
    assert promotion_of(approved).status == PromotionStatus.APPROVED
    assert decisions(pending, approved) == [(approved, "approved", "mira")]


def test_the_permission_alone_is_not_enough_without_membership(
    outsider_client: Client, wren: Agent, reviewer: User, other_team: Team
) -> None:
    gizmo = create_agent(other_team, "gizmo", memory_config(name="Gizmo"))
    theirs = preference(gizmo, "Globex preference.", label="theirs")
    ours = preference(wren, "Tea, never coffee.", label="drink")
    approved = preference(wren, "Short answers.", label="answers")
    decide(approved, True, Actor.for_user(reviewer))

    # The outsider's queue is their own team's: none of acme's rows.
    assert queue_row_ids(approval_queue(outsider_client)) == [theirs]
    assert approval_queue(outsider_client, "?agent=wren").all("data-promotion-id") == []
    assert outsider_client.get("/approvals/?team=acme").status_code == 404

    # Their forms carry their own team: acme's rows are not found in it.
    own = {"team": "globex"}
    assert post_decision(outsider_client, ours, "approve", team="globex").status_code == 404
    assert (
        post_decision(outsider_client, ours, "reject", htmx=False, team="globex").status_code == 404
    )
    assert (
        post_decision(
            outsider_client, ours, "approve", query="?team=acme", team="globex"
        ).status_code
        == 404
    )
    assert outsider_client.post(f"/memories/{approved}/revoke/", own).status_code == 404
    # A form naming acme, which they do not belong to, is refused outright.
    assert post_decision(outsider_client, ours, "approve").status_code == 400
    page = fragment(post_bulk(outsider_client, "approve", [ours], team="globex"))
    assert "Nothing was changed" in page.one("role", "alert").squashed

    assert promotion_of(ours).status == PromotionStatus.PENDING
    assert promotion_of(approved).status == PromotionStatus.APPROVED
    assert decisions(ours, approved) == [(approved, "approved", "mira")]


def test_a_non_member_without_the_permission_gets_404_not_403(
    stranger_client: Client, wren: Agent
) -> None:
    ours = preference(wren, "Tea, never coffee.", label="drink")
    assert post_decision(stranger_client, ours, "approve", team="globex").status_code == 404
    assert stranger_client.post(f"/memories/{ours}/revoke/", {"team": "globex"}).status_code == 404
    assert promotion_of(ours).status == PromotionStatus.PENDING


def test_a_user_of_two_teams_decides_in_the_team_of_the_form(wren: Agent, other_team: Team) -> None:
    duo = grant(make_user("duo", other_team, wren.team))
    client = logged_in(duo)
    gizmo = create_agent(other_team, "gizmo", memory_config(name="Gizmo"))
    theirs = preference(gizmo, "Globex preference.", label="theirs")
    ours = preference(wren, "Acme preference.", label="ours")

    assert queue_row_ids(approval_queue(client)) == [ours]  # acme comes first by slug
    # A row is found only in the team its form was rendered for.
    assert post_decision(client, theirs, "approve", team="acme").status_code == 404
    assert queue_row_ids(approval_queue(client, "?team=globex")) == [theirs]
    assert post_decision(client, ours, "approve", team="globex").status_code == 404
    decided = fragment(post_decision(client, theirs, "approve", team="globex")).one("data-decision")
    assert decided.get("data-decision") == "approved"
    assert promotion_of(ours).status == PromotionStatus.PENDING
    assert promotion_of(theirs).status == PromotionStatus.APPROVED


def test_an_anonymous_visitor_is_sent_to_log_in(wren: Agent, reviewer: User) -> None:
    pending = preference(wren, "Tea, never coffee.", label="drink")
    approved = preference(wren, "Short answers.", label="answers")
    decide(approved, True, Actor.for_user(reviewer))
    anonymous = Client()

    response = anonymous.get("/approvals/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/approvals/"
    for path, data in [
        (f"/approvals/{pending}/decide/", {"decision": "approve"}),
        ("/approvals/bulk/", {"decision": "approve", "selected": [pending]}),
        (f"/memories/{approved}/revoke/", {}),
    ]:
        for headers in ({}, HTMX):
            response = anonymous.post(path, data, headers=headers)
            assert response.status_code == 302, path
            assert response["Location"] == f"/accounts/login/?next={path}"
    assert promotion_of(pending).status == PromotionStatus.PENDING
    assert promotion_of(approved).status == PromotionStatus.APPROVED
    assert decisions(pending, approved) == [(approved, "approved", "mira")]


def test_an_api_token_can_never_decide(wren: Agent, reviewer: User) -> None:
    pending = preference(wren, "Tea, never coffee.", label="drink")
    approved = preference(wren, "Short answers.", label="answers")
    decide(approved, True, Actor.for_user(reviewer))
    _token, raw = ApiToken.objects.issue(wren.team)
    bearer = {"Authorization": f"Bearer {raw}"}
    client = Client()

    for path, data in [
        (f"/approvals/{pending}/decide/", {"decision": "approve"}),
        ("/approvals/bulk/", {"decision": "approve", "selected": [pending]}),
        (f"/memories/{approved}/revoke/", {}),
    ]:
        response = client.post(path, data, headers={**bearer, **HTMX})
        assert response.status_code == 302, path
        assert response["Location"].startswith("/accounts/login/")
    assert client.get("/approvals/", headers=bearer).status_code == 302

    # Nor is there any deciding route in the JSON API.
    for path in (
        f"/api/agents/wren/memories/{pending}/approve",
        f"/api/agents/wren/memories/{pending}",
        f"/api/memories/{pending}/approve",
        f"/api/approvals/{pending}",
    ):
        assert client.post(path, {}, headers=bearer).status_code in (404, 405), path
    assert promotion_of(pending).status == PromotionStatus.PENDING
    assert promotion_of(approved).status == PromotionStatus.APPROVED
    assert decisions(pending, approved) == [(approved, "approved", "mira")]


# --- CSRF --------------------------------------------------------------------------


def test_a_post_without_the_csrf_token_is_refused(wren: Agent, reviewer: User) -> None:
    client = logged_in(reviewer, enforce_csrf_checks=True)
    pending = preference(wren, "Tea, never coffee.", label="drink")
    approved = preference(wren, "Short answers.", label="answers")
    decide(approved, True, Actor.for_user(reviewer))
    approval_queue(client)  # the page sets the cookie; a forged post still lacks the token

    assert post_decision(client, pending, "approve").status_code == 403
    assert post_decision(client, pending, "reject", htmx=False).status_code == 403
    assert post_bulk(client, "approve", [pending]).status_code == 403
    assert client.post(f"/memories/{approved}/revoke/", {"team": "acme"}).status_code == 403
    assert post_decision(client, pending, "approve", X_CSRFToken="forged" * 6).status_code == 403
    assert promotion_of(pending).status == PromotionStatus.PENDING
    assert promotion_of(approved).status == PromotionStatus.APPROVED
    assert decisions(pending, approved) == [(approved, "approved", "mira")]


def test_a_post_with_the_csrf_token_htmx_sends_works(wren: Agent, reviewer: User) -> None:
    client = logged_in(reviewer, enforce_csrf_checks=True)
    first, second = many_pending(wren, 2)
    page = approval_queue(client)
    # htmx sends the token from <body hx-headers> on every request.
    (body,) = [e for e in page.elements if e.tag == "body"]
    token = json.loads(body.get("hx-headers") or "{}")["X-CSRFToken"]
    assert "csrftoken" in client.cookies

    response = post_decision(client, first, "approve", X_CSRFToken=token)
    assert fragment(response).one("data-promotion-id").get("data-decision") == "approved"
    assert promotion_of(first).status == PromotionStatus.APPROVED

    # The forms carry it too, for the no-JavaScript path.
    (field,) = {
        e.get("value")
        for e in queue_rows(page)[second].descendants()
        if e.get("name") == "csrfmiddlewaretoken"
    }
    response = client.post(
        f"/approvals/{second}/decide/",
        {"decision": "reject", "csrfmiddlewaretoken": field, "team": "acme"},
    )
    assert response.status_code == 302
    assert promotion_of(second).status == PromotionStatus.REJECTED
