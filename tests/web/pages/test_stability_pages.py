"""The "Cache stability" card (SPEC §17): its page and the partial the lens loads after
its first paint; who may see it (members; strangers 404; anonymous visitors log in);
``Apply this order`` for those who may change agents, refused otherwise."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from lens.actors import Actor
from lens.agents import config_of
from lens.core.config import AgentConfig
from lens.models import Agent, Revision, Team
from lens.revisions import current_number
from memory.configuring import store_config
from memory.deliveries.ledger import deliver
from tests.api_calls import db_snapshot
from tests.factories import HTMX, create_agent, logged_in, make_user
from tests.pages import alert_text, assert_refusal_logged, dom

pytestmark = pytest.mark.django_db
PAGE = "/agents/wren/stability/"
APPLY = "/agents/wren/stability/apply/"
IDS = ["now", "prefs", "about"]


def config(tick: int) -> dict[str, Any]:
    return {
        "name": "Wren",
        "persona": "You help. " * 30,
        "background": {
            "sections": [
                {
                    "id": section_id,
                    "title": section_id.title(),
                    "entries": [
                        {
                            "key": "k",
                            "value": f"tick {tick}" if section_id == "now" else "same " * 30,
                        }
                    ],
                }
                for section_id in IDS
            ]
        },
    }


@pytest.fixture
def wren(team: Team) -> Agent:
    """Wren delivered four times, its first Background section new each time."""
    agent = create_agent(team, "wren", config(0))
    for tick in range(4):
        store_config(team, "wren", AgentConfig.model_validate(config(tick)))
        deliver(Agent.objects.get(pk=agent.pk), Actor(label="runtime"))
    return Agent.objects.get(pk=agent.pk)


def editor(team: Team) -> User:
    user = make_user("eda", team)
    user.user_permissions.add(Permission.objects.get(codename="change_agent"))
    return user


def test_a_member_sees_the_card_with_the_measured_suggestion(
    member_client: Client, wren: Agent
) -> None:
    page = dom(member_client.get(PAGE))
    card = page.one("data-stability")
    assert "last 4 deliveries" in card.squashed
    now, prefs = (page.one("data-stability-section", f"Context/{s}") for s in ("now", "prefs"))
    assert [cell.squashed for cell in now.children[:2]] == ["Background › Now", "3 of 3"]
    assert [cell.squashed for cell in prefs.children[:2]] == ["Background › Prefs", "0 of 3"]
    assert page.one("data-suggested-order").squashed == "Prefs · About · Now"
    # Both providers' rules; this prompt is under their minimum, and the card says so.
    assert page.one("data-openai-mean").squashed == "0 → 0 tokens"
    assert page.one("data-anthropic-mean").squashed == "0 → 0 tokens"
    assert (
        "under the 1,024 that OpenAI and Anthropic need" in page.one("data-under-minimum").squashed
    )
    # A plain member may not change agents: no button, and the page says why.
    assert page.all("data-apply-order") == []
    assert "lens.change_agent" in card.squashed


def test_a_prompt_past_the_minimum_shows_what_each_provider_would_serve(
    member_client: Client, team: Team
) -> None:
    agent = create_agent(team, "wren", config(0))
    for tick in range(3):
        long = config(tick) | {"persona": "You help with care and patience. " * 200}
        store_config(team, "wren", AgentConfig.model_validate(long))
        deliver(Agent.objects.get(pk=agent.pk), Actor(label="runtime"))
    page = dom(member_client.get(PAGE))
    assert page.all("data-under-minimum") == []
    openai = page.one("data-openai-mean").squashed
    anthropic = page.one("data-anthropic-mean").squashed
    # The authored sections (past 1,024 tokens) stay cached under both rules.
    assert int(openai.split()[0].replace(",", "")) >= 1024
    assert int(anthropic.split()[0].replace(",", "")) >= 1024


def test_the_lens_loads_the_card_after_its_first_paint(member_client: Client, wren: Agent) -> None:
    lens = dom(member_client.get("/agents/wren/"))
    slot = lens.one("id", "stability")
    assert slot.get("hx-get") == PAGE
    assert slot.get("hx-trigger") == "load"
    partial = member_client.get(PAGE, headers=HTMX)
    assert partial.status_code == 200
    assert b"<html" not in partial.content
    assert b"data-stability" in partial.content


def test_strangers_get_404_and_anonymous_visitors_log_in(
    stranger_client: Client, client: Client, wren: Agent
) -> None:
    assert stranger_client.get(PAGE).status_code == 404
    assert stranger_client.post(
        APPLY, {"team": "acme", "order": "prefs,about,now"}
    ).status_code in (400, 404)
    response = client.get(PAGE)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_an_editor_applies_the_order_as_one_revision_of_moves(team: Team, wren: Agent) -> None:
    client = logged_in(editor(team))
    form = dom(client.get(PAGE)).one("data-apply-order")
    assert form.get("action") == APPLY
    response = client.post(
        APPLY, {"team": "acme", "order": "prefs,about,now", "revision": current_number(wren)}
    )
    assert response.status_code == 302
    assert response["Location"] == PAGE
    newest = Revision.objects.filter(agent=wren).order_by("-number").first()
    assert newest is not None
    assert {change["change"] for change in newest.summary} == {"section_moved"}
    assert [s.id for s in config_of(Agent.objects.get(pk=wren.pk)).background.sections] == [
        "prefs",
        "about",
        "now",
    ]
    page = dom(client.get(response["Location"]))
    assert f"Applied the order as revision {newest.number}." in alert_text(page)
    assert page.one("data-order-kept")


def test_a_refused_apply_is_logged_in_one_line_without_a_traceback(
    member_client: Client, wren: Agent, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO):
        refused = member_client.post(
            APPLY, {"team": "acme", "order": "prefs,about,now", "revision": current_number(wren)}
        )
    assert refused.status_code == 403
    assert_refusal_logged(caplog, APPLY)


def test_a_forged_or_stale_apply_changes_nothing(
    team: Team, member_client: Client, wren: Agent
) -> None:
    client = logged_in(editor(team))
    before = db_snapshot()
    refused = member_client.post(
        APPLY, {"team": "acme", "order": "prefs,about,now", "revision": current_number(wren)}
    )
    assert refused.status_code == 403
    stale = client.post(
        APPLY, {"team": "acme", "order": "prefs,about,now", "revision": current_number(wren) - 1}
    )
    assert stale.status_code == 302
    bad = client.post(
        APPLY, {"team": "acme", "order": "prefs,now", "revision": current_number(wren)}
    )
    assert bad.status_code == 302
    assert "not applied" in alert_text(dom(client.get(PAGE)))
    after = db_snapshot()
    # Only the editor's session and login were written.
    for table in ("lens.Revision", "lens.Agent", "lens.SectionDeclaration", "lens.AuditEvent"):
        assert after[table] == before[table], table
