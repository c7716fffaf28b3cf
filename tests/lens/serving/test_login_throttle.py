"""The login throttle (SPEC §13): five failed sign-ins for one username within fifteen
minutes, and further attempts for it are refused for a while, even with the right
password; other usernames are unaffected; a success starts afresh. Both login pages."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.hashers import MD5PasswordHasher
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from lens.models import LoginFailure, Team
from lens.serving import throttle
from tests.factories import PASSWORD, make_user, race

REFUSED = "Too many failed sign-ins for this username; try again in"
PAGES = ("/accounts/login/", "/admin/login/")


@pytest.fixture
def users(team: Team) -> tuple[User, User]:
    return (
        make_user("mira", team, is_staff=True),
        make_user("otto", team, is_staff=True),
    )


def sign_in(client: Client, page: str, username: str, password: str) -> tuple[bool, str]:
    """Whether the sign-in worked, and the page's text."""
    response = client.post(page, {"username": username, "password": password})
    return response.status_code == 302, response.content.decode()


def fail(page: str, username: str, times: int) -> None:
    for _ in range(times):
        worked, _html = sign_in(Client(), page, username, "wrong")
        assert not worked


@pytest.mark.parametrize("page", PAGES)
def test_five_failures_refuse_even_the_right_password(users: tuple[User, User], page: str) -> None:
    fail(page, "mira", 5)

    worked, html = sign_in(Client(), page, "mira", PASSWORD)

    assert not worked
    assert REFUSED in html
    assert "15 minutes." in html
    # The refusal is not a failure of its own: the lock does not grow with every try.
    assert LoginFailure.objects.filter(username="mira").count() == 5


@pytest.mark.parametrize("page", PAGES)
def test_four_failures_still_let_the_right_password_in(users: tuple[User, User], page: str) -> None:
    fail(page, "mira", 4)
    assert sign_in(Client(), page, "mira", PASSWORD)[0]
    # And the success starts the count afresh.
    assert not LoginFailure.objects.filter(username="mira").exists()
    fail(page, "mira", 4)
    assert sign_in(Client(), page, "mira", PASSWORD)[0]


def test_other_usernames_are_unaffected(users: tuple[User, User]) -> None:
    fail("/accounts/login/", "mira", 6)
    for page in PAGES:
        assert sign_in(Client(), page, "otto", PASSWORD)[0]
        assert not sign_in(Client(), page, "mira", PASSWORD)[0]


def test_both_pages_share_one_count(users: tuple[User, User]) -> None:
    fail("/accounts/login/", "mira", 3)
    fail("/admin/login/", "Mira", 2)  # the count ignores case
    for page in PAGES:
        worked, html = sign_in(Client(), page, "mira", PASSWORD)
        assert not worked
        assert REFUSED in html


def test_the_lock_ends_fifteen_minutes_after_the_last_failure(users: tuple[User, User]) -> None:
    fail("/accounts/login/", "mira", 5)
    rows = LoginFailure.objects.filter(username="mira")

    rows.update(at=timezone.now() - timedelta(minutes=14))
    worked, html = sign_in(Client(), "/accounts/login/", "mira", PASSWORD)
    assert not worked
    assert "try again in 1 minute." in html

    rows.update(at=timezone.now() - timedelta(minutes=15, seconds=1))
    assert sign_in(Client(), "/accounts/login/", "mira", PASSWORD)[0]


def test_failures_spread_over_more_than_the_window_do_not_lock(
    users: tuple[User, User],
) -> None:
    now = timezone.now()
    for minutes in (20, 12, 8, 4, 0):
        LoginFailure.objects.create(username="mira", at=now - timedelta(minutes=minutes))
    assert throttle.refused_until("mira") is None
    assert sign_in(Client(), "/accounts/login/", "mira", PASSWORD)[0]


def test_old_failures_are_pruned(users: tuple[User, User]) -> None:
    old = timezone.now() - timedelta(hours=2)
    LoginFailure.objects.bulk_create([LoginFailure(username=f"u{i}", at=old) for i in range(50)])
    fail("/accounts/login/", "nobody-at-all", 1)
    assert list(LoginFailure.objects.values_list("username", flat=True)) == ["nobody-at-all"]


# --- parallel attempts ---------------------------------------------------------------------

PARALLEL = 20


class CountingHasher(MD5PasswordHasher):
    """The tests' hasher, counting the passwords it checks (from any thread)."""

    checks = 0
    lock = threading.Lock()

    def verify(self, password: str, encoded: str) -> bool:
        with CountingHasher.lock:
            CountingHasher.checks += 1
        return super().verify(password, encoded)


@pytest.fixture
def counted(settings: Any) -> type[CountingHasher]:
    settings.PASSWORD_HASHERS = [f"{__name__}.CountingHasher"]
    CountingHasher.checks = 0
    return CountingHasher


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("page", PAGES)
def test_parallel_wrong_passwords_check_at_most_five(
    counted: type[CountingHasher], page: str
) -> None:
    team = Team.objects.create(slug="acme", name="Acme")
    make_user("mira", team, is_staff=True)
    counted.checks = 0  # creating the user checked nothing, but start from a clean count

    outcomes = race(PARALLEL, lambda _i: sign_in(Client(), page, "mira", "wrong"))

    assert not any(worked for worked, _html in outcomes)
    assert counted.checks <= throttle.MAX_FAILURES
    assert sum(REFUSED in html for _worked, html in outcomes) >= PARALLEL - throttle.MAX_FAILURES
    assert LoginFailure.objects.filter(username="mira").count() == counted.checks
    # Locked: even the right password is refused now, and checked by nobody.
    checked = counted.checks
    worked, html = sign_in(Client(), page, "mira", PASSWORD)
    assert not worked
    assert REFUSED in html
    assert counted.checks == checked


@pytest.mark.django_db(transaction=True)
def test_parallel_right_passwords_get_in_and_leave_no_count(
    counted: type[CountingHasher],
) -> None:
    team = Team.objects.create(slug="acme", name="Acme")
    make_user("mira", team)

    # An attempt counts until its password is checked, so up to five at once get in.
    outcomes = race(
        throttle.MAX_FAILURES, lambda _i: sign_in(Client(), "/accounts/login/", "mira", PASSWORD)
    )

    assert [worked for worked, _html in outcomes] == [True] * throttle.MAX_FAILURES
    assert not LoginFailure.objects.filter(username="mira").exists()


@pytest.mark.parametrize("page", PAGES)
def test_a_missing_password_neither_counts_nor_clears(users: tuple[User, User], page: str) -> None:
    fail(page, "mira", 4)
    for _ in range(3):
        assert not sign_in(Client(), page, "mira", "")[0]
    assert LoginFailure.objects.filter(username="mira").count() == 4
    fail(page, "mira", 1)
    assert not sign_in(Client(), page, "mira", PASSWORD)[0]


def test_the_right_password_of_a_non_staff_user_at_the_admin_is_not_a_failure(
    team: Team,
) -> None:
    make_user("nina", team)  # not staff
    for _ in range(throttle.MAX_FAILURES + 1):
        worked, html = sign_in(Client(), "/admin/login/", "nina", PASSWORD)
        assert not worked
        assert REFUSED not in html
    assert not LoginFailure.objects.filter(username="nina").exists()
    assert sign_in(Client(), "/accounts/login/", "nina", PASSWORD)[0]
