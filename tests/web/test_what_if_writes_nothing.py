"""What-if writes nothing at all (SPEC §18.2: "no row, event, audit line or webhook"),
proven by counting each kind apart, with an active webhook endpoint that wants every
event: the API's four kinds of change (and each decision), every page that shows a
what-if line, and the admin's "Preview the effect" step."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.test import Client
from django_tasks_db.models import DBTaskResult

from lens.actors import Actor
from lens.agents import get_agent
from lens.core.config import AgentConfig
from lens.models import AuditEvent, Proposal, Team
from memory.configuring import store_config
from memory.decisions import decide
from memory.deliveries.ledger import deliver
from memory.models import MemoryEvent
from tests.api_calls import ApiClient
from tests.factories import (
    create_agent,
    logged_in,
    make_user,
    memory_config,
    propose,
    remember,
)
from tests.pages import admin_agent_url, form_data, put
from tests.webhooks.hooks import hook
from webhooks.models import Attempt, Dispatch, Endpoint

pytestmark = pytest.mark.django_db

RUNTIME = Actor(label="runtime")
HTMX = {"HX-Request": "true"}


def counts() -> dict[str, dict[str, int]]:
    """What a write would leave, each kind apart: every table's rows; the audit log's
    lines; the memory events; the webhook messages, their tries and the tasks that send
    them."""
    tables = {
        model._meta.label: model._default_manager.count()
        for model in apps.get_models()
        # A logged-in client's session row may be touched by the request itself.
        if model._meta.label != "sessions.Session"
    }
    return {
        "rows": tables,
        "audit": {"lines": AuditEvent.objects.count()},
        "events": {"memory": MemoryEvent.objects.count()},
        "webhooks": {
            "messages": Dispatch.objects.count(),
            "tries": Attempt.objects.count(),
            "tasks": DBTaskResult.objects.count(),
        },
    }


def assert_unchanged(before: dict[str, dict[str, int]], what: str) -> None:
    after = counts()
    for kind in ("rows", "audit", "events", "webhooks"):
        assert after[kind] == before[kind], f"{what} wrote {kind}"


@pytest.fixture
def story(team: Team, member: User, settings: Any) -> dict[str, Any]:
    """An active endpoint for every event; Wren delivered at several states (a pending,
    an approved and a rejected memory, a second revision); Kit with a migration plan;
    Ada protected, with a proposal waiting."""
    # A receiver on this machine (nothing is sent: no worker runs).
    settings.WEBHOOKS_ALLOW_HTTP = settings.WEBHOOKS_ALLOW_PRIVATE = True
    endpoint = hook(team, "http://127.0.0.1:9/lens")
    assert Endpoint.objects.get(pk=endpoint.endpoint.pk).events == ["*"]
    decider = Actor.for_user(member)
    wren = create_agent(team, "wren", memory_config())
    ids = {"name": remember(wren, "profile", "Mira", label="name")}
    deliver(get_agent(team, "wren"), RUNTIME)
    ids["pending"] = remember(wren, "preference", "Prefers a dark theme.", label="theme")
    ids["drink"] = remember(wren, "preference", "Tea, never coffee.", label="drink")
    decide(ids["drink"], True, decider)
    ids["jokes"] = remember(wren, "preference", "Wants daily jokes.", label="jokes")
    decide(ids["jokes"], False, decider)
    deliver(get_agent(team, "wren"), RUNTIME)
    store_config(team, "wren", AgentConfig.model_validate(memory_config(persona="Terse.")))
    deliver(get_agent(team, "wren"), RUNTIME)
    # Kit: its preferences section no longer declared, so the plan moves its memory out.
    kit = create_agent(team, "kit", memory_config(name="Kit"))
    decide(remember(kit, "preference", "Tea.", label="drink"), True, decider)
    deliver(get_agent(team, "kit"), RUNTIME)
    store_config(team, "kit", AgentConfig.model_validate(memory_config(None, name="Kit")))
    create_agent(team, "ada", memory_config(protected=True, name="Ada"))
    remember(get_agent(team, "ada"), "profile", "Mira", label="name")
    deliver(get_agent(team, "ada"), RUNTIME)
    changed = copy.deepcopy(memory_config(protected=True, name="Ada"))
    changed["persona"] = "You are terse."
    proposal = propose(team, "ada", changed, make_user("pia", team))
    # The setup's own messages are queued already; none may follow.
    assert Dispatch.objects.exists()
    return {"ids": ids, "proposal": proposal}


def api_changes(ids: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("a config", {"config": memory_config(persona="Another persona.")}),
        ("approving", {"decide": {"memory_id": ids["pending"], "decision": "approve"}}),
        ("rejecting", {"decide": {"memory_id": ids["pending"], "decision": "reject"}}),
        ("revoking", {"decide": {"memory_id": ids["drink"], "decision": "revoke"}}),
        ("reopening", {"decide": {"memory_id": ids["jokes"], "decision": "reopen"}}),
        ("an order", {"order": ["user_preferences", "user_profile"]}),
        ("a spec", {"spec": "project"}),
        ("no spec", {"spec": None}),
        # Refused ones: the error making them would get, and still nothing written.
        ("a refused decision", {"decide": {"memory_id": ids["drink"], "decision": "approve"}}),
        ("an unknown spec", {"spec": "nope"}),
    ]


def test_the_api_writes_nothing_for_any_change(api: ApiClient, story: dict[str, Any]) -> None:
    for what, change in api_changes(story["ids"]):
        before = counts()
        response = api.post("/api/agents/wren/what-if?last=50", change)
        assert response.status_code in (200, 404, 409, 422), (what, response.content)
        assert_unchanged(before, f"the API's what-if of {what}")


def test_every_page_line_writes_nothing(member: User, story: dict[str, Any]) -> None:
    client = logged_in(member)
    client.get("/approvals/")  # the session exists before counting
    proposal: Proposal = story["proposal"]
    paths = [
        ("approving a queue row", f"/approvals/{story['ids']['pending']}/what-if/"),
        ("publishing a proposal", f"/proposals/{proposal.pk}/what-if/"),
        ("restoring a revision", "/agents/wren/revisions/1/what-if/"),
        ("the restore confirmation", "/agents/wren/revisions/1/restore/"),
        (
            "the stability card's order",
            "/agents/wren/stability/what-if/?order=user_preferences,user_profile",
        ),
        ("applying a migration plan", "/agents/kit/migration/what-if/"),
    ]
    for what, path in paths:
        for headers in (HTMX, {}):  # the line swapped in, and the page without JavaScript
            before = counts()
            response = client.get(path, headers=headers)
            assert response.status_code == 200, (what, response.status_code)
            assert_unchanged(before, f"the page's what-if of {what}")


def test_the_admin_preview_writes_nothing(
    admin_client: Client, team: Team, story: dict[str, Any]
) -> None:
    wren = get_agent(team, "wren")
    url = admin_agent_url(wren)
    data = form_data(admin_client, url, "agent_form")
    put(data, "persona", "You are Wren, and you keep it brief.")
    before = counts()
    response = admin_client.post(url, {**data, "_preview": "Preview the effect"})
    assert response.status_code == 200
    assert "data-effect-preview" in response.content.decode()
    assert_unchanged(before, "the admin's preview")


def test_the_counts_would_see_a_real_change(member: User, story: dict[str, Any]) -> None:
    """The same counts move when the change is made: the endpoint gets its message."""
    before = counts()
    decide(story["ids"]["pending"], True, Actor.for_user(member))
    after = counts()
    changed: Callable[[str], bool] = lambda kind: after[kind] != before[kind]  # noqa: E731
    assert all(changed(kind) for kind in ("rows", "audit", "events", "webhooks"))
    assert after["webhooks"]["messages"] > before["webhooks"]["messages"]
