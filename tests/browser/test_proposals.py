"""Proposed changes of protected agents in the real Chromium (SPEC §14): a reviewer
publishes them from the approval queue with the button and with the keyboard, as memory
rows are approved, and the lens then shows the new revision.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from lens.actors import SYSTEM, Actor
from lens.core.config import AgentConfig
from lens.models import Agent, Proposal, Revision, Team
from memory.configuring import store_agent, store_config
from memory.core.records import MemoryInput
from memory.saving import Saved, save_memory
from tests.factories import grant, login, make_user
from tests.samples import SAMPLE_CONFIG

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CONFIG: dict[str, Any] = {
    **SAMPLE_CONFIG,
    "routing_spec": "user-background",
    "protected": True,
    "background": {
        "sections": [
            {"id": "user_profile", "title": "About the User", "promotion": "auto"},
            {"id": "user_preferences", "title": "User Preferences", "promotion": "guarded"},
        ]
    },
}


def protected(team: Team, slug: str, name: str) -> Agent:
    """A protected agent with one composed profile memory."""
    agent, _ = store_agent(team, slug, AgentConfig.model_validate({**CONFIG, "name": name}))
    saved = save_memory(agent, MemoryInput(kind="profile", content="Mira K.", label="name"), SYSTEM)
    assert isinstance(saved, Saved), saved
    return agent


def retitled(name: str, title: str) -> AgentConfig:
    config = copy.deepcopy({**CONFIG, "name": name})
    config["background"]["sections"][0]["title"] = title
    return AgentConfig.model_validate(config)


def set_up() -> tuple[Proposal, Proposal, str]:
    """Wren and Atlas, protected, each with a change mira proposed; rhea reviews. A
    memory of Wren waits in the queue below them."""
    team = Team.objects.create(slug="acme", name="Acme")
    grant(make_user("rhea", team))
    mira = Actor.for_user(make_user("mira", team))
    wren, atlas = protected(team, "wren", "Wren"), protected(team, "atlas", "Atlas")
    proposals = []
    for agent in (wren, atlas):
        stored = store_config(team, agent.slug, retitled(agent.name, "About You"), actor=mira)
        assert stored.proposal is not None
        proposals.append(stored.proposal)
    waiting = save_memory(
        wren, MemoryInput(kind="preference", content="Short answers.", label="answers"), SYSTEM
    )
    assert isinstance(waiting, Saved), waiting
    return proposals[0], proposals[1], waiting.id


def proposal_row(page: Any, proposal: Proposal) -> Any:
    return page.locator(f'li[data-proposal-id="{proposal.pk}"]')


def current_proposal(page: Any) -> str | None:
    found: str | None = page.evaluate(
        "() => document.activeElement.closest('li[data-proposal-id]')?.dataset.proposalId ?? null"
    )
    return found


def status_of(proposal: Proposal) -> str:
    proposal.refresh_from_db()
    return proposal.status


def test_a_reviewer_publishes_with_the_button_then_with_the_keyboard(
    live_server: Any, page: Any
) -> None:
    first, second, waiting = set_up()
    base: str = live_server.url
    login(page, base, "rhea")
    page.goto(f"{base}/approvals/")
    page.evaluate("window.__marker = 1")
    assert page.locator("li[data-proposal-id]").count() == 2
    row = proposal_row(page, first)
    assert "Section User Preferences" not in row.inner_text()
    # The profile memory moves: it is under the section's new title.
    assert row.locator('[data-fate="moved"]').count() == 1

    # The button: the row is swapped in place and says which revision it became.
    row.get_by_role("button", name="Publish", exact=True).click()
    decided = page.locator(f'li[data-proposal-id="{first.pk}"][data-decision="published"]')
    decided.wait_for()
    assert "published as revision 2" in decided.inner_text()
    assert page.evaluate("window.__marker") == 1
    # Focus moved on to the next row, Atlas's proposal: "a" publishes it as it approves a memory.
    page.wait_for_function(
        "id => document.activeElement.closest('li[data-proposal-id]')?.dataset.proposalId === id",
        arg=str(second.pk),
    )
    page.keyboard.press("a")
    page.locator(f'li[data-proposal-id="{second.pk}"][data-decision="published"]').wait_for()
    assert (status_of(first), status_of(second)) == ("published", "published")
    # Then the memory row below them is the current one.
    page.wait_for_function(
        "id => document.activeElement.closest('li[data-promotion-id]')?.dataset.promotionId === id",
        arg=waiting,
    )
    assert page.evaluate("window.__marker") == 1

    for slug in ("wren", "atlas"):
        assert Revision.objects.get(agent__slug=slug, number=2).approved_by == "rhea"
        page.goto(f"{base}/agents/{slug}/")
        line = page.locator("[data-revision]")
        assert line.get_attribute("data-revision") == "2"
        assert "approved by rhea" in line.inner_text()
        assert "About You" in page.locator("[data-prompt]").inner_text()


def test_j_and_k_move_across_proposals_and_memories_and_r_rejects_with_a_reason(
    live_server: Any, page: Any
) -> None:
    first, second, waiting = set_up()
    base: str = live_server.url
    login(page, base, "rhea")
    page.goto(f"{base}/approvals/")
    page.keyboard.press("j")
    assert current_proposal(page) == str(first.pk)
    page.keyboard.press("j")
    page.keyboard.press("j")
    assert (
        page.evaluate(
            "() => document.activeElement.closest('li[data-promotion-id]')?.dataset.promotionId"
        )
        == waiting
    )
    page.keyboard.press("k")
    assert current_proposal(page) == str(second.pk)
    page.keyboard.press("r")
    page.keyboard.type("Not this week.")
    page.keyboard.press("Enter")
    decided = page.locator(f'li[data-proposal-id="{second.pk}"][data-decision="rejected"]')
    decided.wait_for()
    assert "rejected by rhea. Reason: Not this week." in decided.inner_text()
    second.refresh_from_db()
    assert (second.status, second.reason) == ("rejected", "Not this week.")
    assert status_of(first) == "pending"


def test_the_proposer_sees_no_buttons_and_a_second_publish_says_it_was_decided(
    live_server: Any, browser: Any, page: Any
) -> None:
    first, _second, _waiting = set_up()
    base: str = live_server.url
    login(page, base, "mira")
    page.goto(f"{base}/approvals/")
    mine = proposal_row(page, first)
    assert "You proposed this change" in mine.inner_text()
    assert mine.get_by_role("button", name="Publish", exact=True).count() == 0

    # Two reviewers with the queue open: the second one's Publish changes nothing.
    grant(make_user("tess", first.agent.team))
    other = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    try:
        login(page, base, "rhea")
        login(other, base, "tess")
        for tab in (page, other):
            tab.goto(f"{base}/approvals/")
        proposal_row(page, first).get_by_role("button", name="Publish", exact=True).click()
        page.locator(f'li[data-proposal-id="{first.pk}"][data-decision="published"]').wait_for()
        proposal_row(other, first).get_by_role("button", name="Publish", exact=True).click()
        said = proposal_row(other, first).locator("[data-row-error]")
        said.wait_for()
        assert "was already published by rhea: nothing was changed" in said.inner_text()
    finally:
        other.context.close()
    assert Revision.objects.filter(agent=first.agent).count() == 2
