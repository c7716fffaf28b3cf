"""The cast: a member, a member of another team, an anonymous client, API clients."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lens.models import Agent, ApiToken, Team
from tests.factories import ApiClient, create_agent, make_user


@pytest.fixture(autouse=True)
def _fast_hashing(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def team(db: None) -> Team:
    return Team.objects.create(slug="acme", name="Acme")


@pytest.fixture
def other_team(db: None) -> Team:
    return Team.objects.create(slug="globex", name="Globex")


@pytest.fixture
def member(team: Team) -> User:
    return make_user("mira", team)


@pytest.fixture
def stranger(other_team: Team) -> User:
    return make_user("sam", other_team)


@pytest.fixture
def member_client(member: User) -> Client:
    client = Client()
    client.force_login(member)
    return client


@pytest.fixture
def stranger_client(stranger: User) -> Client:
    client = Client()
    client.force_login(stranger)
    return client


@pytest.fixture
def agent(team: Team) -> Agent:
    return create_agent(team)


@pytest.fixture
def api(team: Team) -> ApiClient:
    _token, raw = ApiToken.objects.issue(team)
    return ApiClient(raw)


@pytest.fixture
def other_api(other_team: Team) -> ApiClient:
    _token, raw = ApiToken.objects.issue(other_team)
    return ApiClient(raw)


@pytest.fixture
def anon_api() -> ApiClient:
    return ApiClient(None)


# --- browser -----------------------------------------------------------------------

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop; Django's ORM calls made by the test
    # itself (fixtures, assertions) are still plain synchronous code.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()
