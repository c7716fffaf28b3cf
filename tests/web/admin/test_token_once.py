"""The admin's "Issue an API token" shows each new token once, on its own page: the raw
value never travels in a message, a cookie or the session, and the page is not cached."""

from __future__ import annotations

from typing import Any

from django.contrib.sessions.models import Session
from django.test import Client

from lens.models import ApiToken, Team, hash_token
from tests.pages import dom


def issue(client: Client, *teams: Team) -> Any:
    return client.post(
        "/admin/lens/team/",
        {"action": "issue_token", "_selected_action": [str(t.pk) for t in teams]},
    )


def test_the_new_token_is_shown_once_on_a_page_and_never_in_a_cookie(
    admin_client: Client, team: Team
) -> None:
    response = issue(admin_client, team)

    page = dom(response)
    (shown,) = [e.squashed for e in page.all("data-token")]
    assert ApiToken.objects.get(team=team).digest == hash_token(shown)
    assert "shown once" in page.one("role", "alert").squashed
    assert "no-store" in response["Cache-Control"]
    assert response.content.decode().count(shown) == 1
    assert shown not in str(response.cookies), "the token went into a cookie"
    for later in (admin_client.get("/admin/lens/team/"), admin_client.get("/")):
        assert shown not in str(later.cookies)
        assert shown not in later.content.decode()
    assert shown not in str(admin_client.cookies)
    assert all(shown not in str(s.get_decoded()) for s in Session.objects.all())


def test_several_teams_get_a_token_each(admin_client: Client, team: Team, other_team: Team) -> None:
    page = dom(issue(admin_client, team, other_team))
    shown = [e.squashed for e in page.all("data-token")]
    assert len(shown) == 2
    assert {hash_token(raw) for raw in shown} == set(
        ApiToken.objects.values_list("digest", flat=True)
    )


def test_a_member_without_the_admin_cannot_issue(member_client: Client, team: Team) -> None:
    response = issue(member_client, team)
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")
    assert not ApiToken.objects.exists()
