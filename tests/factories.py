"""What tests build: users, agents, memories, API clients, a browser login, races.

Test modules import from here (and ``tests.samples``, ``tests.pages``), never from
``conftest`` or from each other; ``conftest`` holds only fixtures.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.models import User
from django.test import Client

from lens.core.config import AgentConfig
from lens.models import Agent, Membership, Team
from memory.agents import store_agent
from tests.samples import SAMPLE_CONFIG

PASSWORD = "correct horse battery staple"


def make_user(username: str, *teams: Team, **extra: Any) -> User:
    user = User.objects.create_user(username=username, password=PASSWORD, **extra)
    for team in teams:
        Membership.objects.create(team=team, user=user)
    return user


def create_agent(team: Team, slug: str = "wren", config: dict[str, Any] | None = None) -> Agent:
    agent, _ = store_agent(team, slug, AgentConfig.model_validate(config or SAMPLE_CONFIG))
    return agent


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


def login(page: Any, base_url: str, username: str, password: str = PASSWORD) -> None:
    page.goto(f"{base_url}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{base_url}/")
