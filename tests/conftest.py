"""The cast: a member, a member of another team, an anonymous client, API clients."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lens.core.config import AgentConfig
from lens.models import Agent, ApiToken, Membership, Team
from memory.agents import store_agent
from tests.samples import SAMPLE_CONFIG

PASSWORD = "correct horse battery staple"


@pytest.fixture(autouse=True)
def _fast_hashing(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def make_user(username: str, *teams: Team, **extra: Any) -> User:
    user = User.objects.create_user(username=username, password=PASSWORD, **extra)
    for team in teams:
        Membership.objects.create(team=team, user=user)
    return user


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


def create_agent(team: Team, slug: str = "wren", config: dict[str, Any] | None = None) -> Agent:
    agent, _ = store_agent(team, slug, AgentConfig.model_validate(config or SAMPLE_CONFIG))
    return agent


@pytest.fixture
def agent(team: Team) -> Agent:
    return create_agent(team)


class ApiClient:
    """A JSON client that sends a bearer token."""

    def __init__(self, token: str | None) -> None:
        self.client = Client()
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}

    def _call(self, method: str, path: str, body: Any = None, raw: str | None = None) -> Any:
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        kwargs: dict[str, Any] = {"headers": self.headers}
        if data is not None:
            kwargs.update(data=data, content_type="application/json")
        return getattr(self.client, method)(path, **kwargs)

    def get(self, path: str) -> Any:
        return self._call("get", path)

    def put(self, path: str, body: Any = None, raw: str | None = None) -> Any:
        return self._call("put", path, body, raw)

    def post(self, path: str, body: Any = None, raw: str | None = None) -> Any:
        return self._call("post", path, body, raw)

    def delete(self, path: str) -> Any:
        return self._call("delete", path)


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


def login(page: Any, base_url: str, username: str, password: str = PASSWORD) -> None:
    page.goto(f"{base_url}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{base_url}/")
