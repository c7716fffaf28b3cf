"""``issue_token TEAM --user NAME`` (SPEC §14 "Whose token"): a token that belongs to a
member of the team, whose changes with it are theirs; without ``--user``, a service
token as before. A user who does not exist, or is not a member, is a clear error, and
nothing is written."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError

from lens.actors import Actor
from lens.models import ApiToken, AuditEvent, Team
from lens.token_issuing import TOKENS_PER_PERSON
from tests.api_calls import ApiClient
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_with_user_the_token_is_the_member_s(team: Team, member: User) -> None:
    out, err = run("issue_token", "acme", "--user", "mira", "--name", "laptop")
    raw = out.strip().splitlines()[-1]
    token = ApiToken.objects.get()
    assert (token.user, token.name) == (member, "laptop")
    assert "belonging to mira" in err
    assert Actor.for_token(token).label == "mira"
    assert ApiClient(raw).put("/api/kv/notes.a", {"payload": "x"}).status_code == 201
    assert AuditEvent.objects.get(action="kv.written").actor == "mira"
    issued = AuditEvent.objects.get(action="token.issued")
    assert issued.details == {"token_id": token.pk, "owner": "mira"}


def test_without_user_it_is_a_service_token_named_by_its_label(team: Team) -> None:
    run("issue_token", "acme", "--name", "ci")
    token = ApiToken.objects.get()
    assert token.user is None
    assert Actor.for_token(token).label == f"token {token.prefix}… (ci)"


@pytest.mark.parametrize(
    ("username", "said"),
    [
        ("nobody", "No user 'nobody': nothing was issued."),
        ("sam", "sam is not an active member of team acme"),
    ],
)
def test_an_unknown_user_or_a_stranger_is_a_clear_error_and_nothing_is_written(
    team: Team, stranger: User, username: str, said: str
) -> None:
    events = AuditEvent.objects.count()
    with pytest.raises(CommandError, match=said):
        run("issue_token", "acme", "--user", username)
    assert not ApiToken.objects.exists()
    assert AuditEvent.objects.count() == events


def test_a_deactivated_member_gets_no_token(team: Team) -> None:
    make_user("gone", team, is_active=False)
    with pytest.raises(CommandError, match="not an active member"):
        run("issue_token", "acme", "--user", "gone")
    assert not ApiToken.objects.exists()


def test_a_person_holds_a_bounded_number_of_tokens(team: Team, member: User) -> None:
    for _ in range(TOKENS_PER_PERSON):
        run("issue_token", "acme", "--user", "mira")
    with pytest.raises(CommandError, match="revoke one first"):
        run("issue_token", "acme", "--user", "mira")
    assert ApiToken.objects.count() == TOKENS_PER_PERSON
    # A service token is not the person's: still issued.
    run("issue_token", "acme")
    assert ApiToken.objects.filter(user=None).count() == 1
