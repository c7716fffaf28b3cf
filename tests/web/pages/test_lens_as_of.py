"""The lens as it stood at a moment (SPEC §14 "As of"): ``/agents/<slug>/?as_of=T`` shows
the prompt composed from the revision in force then and the memories of that moment,
says so at the top. A time before the agent existed is the not-found page (the API's
404 ``agent_not_found``); one that does not read is the live lens, saying why, as a 400.
"""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import quote

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from lens.actors import SYSTEM
from lens.agents import get_agent
from lens.core.config import AgentConfig
from lens.models import Agent
from memory.configuring import store_agent
from memory.deliveries.ledger import deliver
from tests.factories import memory_config, remember

pytestmark = pytest.mark.django_db


def lens(client: Client, agent: Agent, as_of: str, status: int = 200) -> str:
    response = client.get(f"/agents/{agent.slug}/?as_of={quote(as_of)}")
    assert response.status_code == status
    return response.content.decode()


def test_the_lens_shows_the_prompt_of_a_past_delivery(member_client: Client, wren: Agent) -> None:
    remember(wren, "profile", "The user's name is Doug.", label="name")
    delivery = deliver(get_agent(wren.team, "wren"), SYSTEM).delivery
    remember(wren, "profile", "Doug moved to Lisbon.", label="city")
    store_agent(wren.team, "wren", AgentConfig.model_validate(memory_config(tone="Brisk.")))

    then = lens(member_client, wren, delivery.delivered_at.isoformat())
    assert "data-as-of=" in then
    assert "Doug" in then
    assert "Lisbon" not in then  # saved after that moment
    assert "Brisk." not in then  # declared after that moment
    assert 'href="/agents/wren/revisions/1/"' in then  # the revision in force then
    assert "data-back-to-now" in then
    assert "data-last-delivery" not in then  # that line is about now
    assert "1 memory · 1 in the prompt · 0 not in the prompt" in then  # only what was saved then
    now = member_client.get("/agents/wren/").content.decode()
    assert "Lisbon" in now
    assert "Brisk." in now
    assert "data-as-of=" not in now
    # The memory-only filter keeps the moment.
    assert "&amp;only=memory" in then


def test_a_time_before_the_agent_existed_is_not_found(member_client: Client, wren: Agent) -> None:
    page = lens(member_client, wren, "2000-01-01T00:00:00Z", status=404)
    assert 'data-error-page="404"' in page
    assert "data-prompt" not in page
    # A microsecond before it was created: not found either; at that moment, the lens.
    created = wren.created_at
    lens(member_client, wren, (created - timedelta(microseconds=1)).isoformat(), status=404)
    then = lens(member_client, wren, created.isoformat())
    assert "data-as-of=" in then
    assert 'data-error-page="404"' not in then


def test_a_time_that_does_not_read_is_a_400_with_the_live_lens(
    member_client: Client, wren: Agent
) -> None:
    page = lens(member_client, wren, "yesterday", status=400)
    assert "is not an ISO 8601 date and time" in page
    assert "data-as-of-problem" in page
    assert "data-prompt" in page


def test_strangers_and_visitors_get_no_past_lens(
    stranger_client: Client, client: Client, wren: Agent
) -> None:
    assert stranger_client.get("/agents/wren/?as_of=2030-01-01T00:00:00Z").status_code == 404
    response = client.get("/agents/wren/?as_of=2030-01-01T00:00:00Z")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_a_past_lens_costs_the_same_queries_however_many_memories(
    member_client: Client, wren: Agent
) -> None:
    def count(memories: int) -> int:
        for n in range(memories):
            remember(wren, "profile", f"Fact {n} of {memories}.", label=f"f{n}-{memories}")
        with CaptureQueriesContext(connection) as captured:
            lens(member_client, wren, "2099-01-01T00:00:00Z")
        return len(captured.captured_queries)

    count(0)  # the first page of a session reads what later ones have cached
    assert count(3) == count(40)
