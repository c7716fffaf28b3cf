"""Settings › My tokens (SPEC §14 "Whose token"): a person issues tokens that act as
them (the raw token shown once, on the answer of the post that issued it) and revokes
their own; nobody sees or revokes anyone else's. Issuing and revoking are audited in
the same transaction; a refused form changes nothing."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lens.models import ApiToken, AuditEvent, Team
from lens.token_issuing import NAME_MAX, TOKENS_PER_PERSON, issue_token
from tests.api_calls import ApiClient
from tests.factories import make_user
from tests.pages import Dom, alert_text, dom, fragment

pytestmark = pytest.mark.django_db

PAGE = "/settings/tokens/"


def issue(client: Client, name: str = "laptop", **extra: str) -> Any:
    return client.post(PAGE, {"team": "acme", "name": name, "once": extra.pop("once", ""), **extra})


def main_text(page: Dom) -> str:
    return page.one("id", "content", tag="main").squashed


def audit_actions(team: Team) -> list[tuple[str, str, str]]:
    return list(
        AuditEvent.objects.filter(team=team, action__startswith="token.")
        .order_by("seq")
        .values_list("action", "actor", "object_id")
    )


# --- who may look -------------------------------------------------------------------


def test_anonymous_visitors_are_sent_to_log_in(client: Client, member: User) -> None:
    token = issue_token(member.teams.get(), "laptop", user=member).token
    for response in (
        client.get(PAGE),
        client.post(PAGE, {"team": "acme", "name": "x"}),
        client.post(f"{PAGE}{token.pk}/revoke/", {"team": "acme"}),
    ):
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/")
    assert ApiToken.objects.get().revoked_at is None
    assert ApiToken.objects.count() == 1


def test_a_member_sees_only_their_own_tokens(
    team: Team, member: User, member_client: Client, api: ApiClient
) -> None:
    mine = issue_token(team, "laptop", user=member).token
    theirs = issue_token(team, "desk", user=make_user("rhea", team)).token
    page = dom(member_client.get(PAGE))
    rows = [row.get("data-token-id") for row in page.all("data-token-id")]
    assert rows == [str(mine.pk)]
    text = main_text(page)
    assert mine.prefix in text
    assert theirs.prefix not in text
    service = ApiToken.objects.get(team=team, user=None)
    assert service.prefix not in text  # a service token is nobody's


def test_the_navigation_links_the_page(member_client: Client) -> None:
    page = dom(member_client.get("/"))
    assert PAGE in page.links("My tokens")


def test_a_member_of_another_team_sees_none_and_revokes_none(
    team: Team, member: User, stranger_client: Client
) -> None:
    mine = issue_token(team, "laptop", user=member).token
    page = dom(stranger_client.get(PAGE))
    assert page.all("data-token-id") == []
    assert mine.prefix not in main_text(page)
    # Posted by hand, for their own team or for mine: not found / not their team.
    assert stranger_client.post(f"{PAGE}{mine.pk}/revoke/", {"team": "globex"}).status_code == 404
    assert stranger_client.post(f"{PAGE}{mine.pk}/revoke/", {"team": "acme"}).status_code == 400
    mine.refresh_from_db()
    assert mine.revoked_at is None
    assert stranger_client.get(f"{PAGE}?team=acme").status_code == 404


def test_a_person_in_no_team_gets_the_friendly_empty_page(client: Client) -> None:
    client.force_login(make_user("lonely"))
    response = client.get(PAGE)
    assert response.status_code == 200
    assert issue(client).status_code == 400  # no team to issue for
    assert not ApiToken.objects.exists()


# --- issuing ------------------------------------------------------------------------


def test_issuing_shows_the_token_once_and_it_acts_as_the_person(
    team: Team, member: User, member_client: Client
) -> None:
    response = issue(member_client, "laptop", once="form-1")
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    page = dom(response)
    raw = page.one("data-token").squashed
    token = ApiToken.objects.get()
    assert (token.user, token.name, token.team) == (member, "laptop", team)
    assert raw.startswith(token.prefix)
    # The token is the person's: what they write with it is theirs.
    assert ApiClient(raw).put("/api/kv/notes.a", {"payload": "x"}).status_code == 201
    assert AuditEvent.objects.filter(action="kv.written").get().actor == "mira"
    # Never again: the list shows its prefix, not the token.
    again = member_client.get(PAGE)
    assert raw not in again.content.decode()
    assert token.prefix in again.content.decode()
    # Issued by the person, logged with the change's transaction.
    assert audit_actions(team) == [("token.issued", "mira", token.prefix)]
    assert AuditEvent.objects.get(action="token.issued").details == {
        "token_id": token.pk,
        "owner": "mira",
    }


def test_reloading_the_answer_issues_no_second_token(member_client: Client) -> None:
    assert issue(member_client, once="form-1").status_code == 200
    again = issue(member_client, once="form-1")
    assert again.status_code == 302
    assert ApiToken.objects.count() == 1
    assert "sent already" in alert_text(dom(member_client.get(again["Location"])))


def test_a_label_too_long_is_refused_on_the_form_and_nothing_is_written(
    team: Team, member_client: Client
) -> None:
    response = issue(member_client, "n" * (NAME_MAX + 1))
    page = dom(response, 400)
    assert f"at most {NAME_MAX} characters" in page.one("data-field-error", "name").squashed
    assert not ApiToken.objects.exists()
    assert audit_actions(team) == []


def test_a_label_with_a_control_character_is_refused(member_client: Client) -> None:
    dom(issue(member_client, "lap\x1btop"), 400)
    assert not ApiToken.objects.exists()


def test_a_person_holds_a_bounded_number_of_tokens(
    team: Team, member: User, member_client: Client
) -> None:
    for n in range(TOKENS_PER_PERSON):
        issue_token(team, f"t{n}", user=member)
    page = dom(issue(member_client, "one more"), 400)
    assert "revoke one first" in page.one("data-field-error", "name").squashed
    assert ApiToken.objects.count() == TOKENS_PER_PERSON
    assert len(dom(member_client.get(PAGE)).all("data-token-id")) == TOKENS_PER_PERSON


def test_a_form_for_a_team_the_person_is_not_in_is_refused(
    other_team: Team, member_client: Client
) -> None:
    response = member_client.post(PAGE, {"team": "globex", "name": "x"})
    assert response.status_code == 400
    assert not ApiToken.objects.exists()


def test_a_long_label_is_cut_by_the_page_and_whole_in_its_title(
    team: Team, member: User, member_client: Client
) -> None:
    name = "a-very-long-label-" * 11  # 198 characters, no space to break at
    issue_token(team, name, user=member)
    row = dom(member_client.get(PAGE)).one("data-token-id")
    (label,) = [e for e in row.descendants() if "token-label" in (e.get("class") or "")]
    assert label.get("title") == name
    assert label.squashed == name  # whole in the page too: the style cuts it on screen


# --- revoking -----------------------------------------------------------------------


def test_revoking_stops_the_token_from_the_next_request(
    team: Team, member: User, member_client: Client
) -> None:
    issued = issue_token(team, "laptop", user=member)
    api = ApiClient(issued.raw)
    assert api.get("/api/agents").status_code == 200
    response = member_client.post(f"{PAGE}{issued.token.pk}/revoke/", {"team": "acme"})
    assert response.status_code == 302
    assert "revoked" in alert_text(dom(member_client.get(response["Location"])))
    assert api.get("/api/agents").status_code == 401
    assert audit_actions(team)[-1] == ("token.revoked", "mira", issued.token.prefix)
    # Listed among the revoked ones, without a button.
    page = dom(member_client.get(PAGE))
    row = page.one("data-token-id", str(issued.token.pk))
    assert "data-token-revoked" in row.attrs
    assert "Revoke" not in row.squashed
    # Again: nothing changes, nothing more is logged.
    member_client.post(f"{PAGE}{issued.token.pk}/revoke/", {"team": "acme"})
    assert [a for a, _, _ in audit_actions(team)].count("token.revoked") == 1


def test_revoking_with_htmx_swaps_the_row(team: Team, member: User, member_client: Client) -> None:
    issued = issue_token(team, "laptop", user=member)
    response = member_client.post(
        f"{PAGE}{issued.token.pk}/revoke/", {"team": "acme"}, headers={"HX-Request": "true"}
    )
    assert response.status_code == 200
    row = fragment(response).one("data-token-id", str(issued.token.pk), tag="li")
    assert "data-token-revoked" in row.attrs
    assert "revoked" in row.squashed


def test_revoke_is_a_post_with_csrf(team: Team, member: User) -> None:
    token = issue_token(team, "laptop", user=member).token
    client = Client(enforce_csrf_checks=True)
    client.force_login(member)
    assert client.get(f"{PAGE}{token.pk}/revoke/").status_code == 405
    assert client.post(f"{PAGE}{token.pk}/revoke/", {"team": "acme"}).status_code == 403
    token.refresh_from_db()
    assert token.revoked_at is None


def test_nobody_revokes_anyone_else_s_token_or_a_service_token(
    team: Team, member: User, member_client: Client, api: ApiClient
) -> None:
    rhea = make_user("rhea", team)
    theirs = issue_token(team, "desk", user=rhea).token
    service = ApiToken.objects.get(user=None)
    for token in (theirs, service):
        assert member_client.post(f"{PAGE}{token.pk}/revoke/", {"team": "acme"}).status_code == 404
        token.refresh_from_db()
        assert token.revoked_at is None
    assert member_client.post(f"{PAGE}99999999999/revoke/", {"team": "acme"}).status_code == 404
