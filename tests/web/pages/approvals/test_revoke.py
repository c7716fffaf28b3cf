"""Revoking goes through a confirmation page (it works without JavaScript) that shows
what leaves the prompt and what, if anything, takes its place; afterwards the memory's
page says what happened (SPEC §5.4)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lens.actors import Actor
from lens.models import Agent
from memory.decisions import decide
from memory.models import PromotionStatus
from tests.factories import composed, in_prompt, preference, promotion_of, remember
from tests.pages import Dom, alerts, buttons, dom, inside, with_class

pytestmark = pytest.mark.django_db


def lisbon_over_denver(wren: Agent) -> tuple[str, str]:
    """The user moved: "city: Lisbon" superseded "city: Denver" (About the User, auto)."""
    denver = remember(wren, "profile", "Denver", label="city")
    lisbon = remember(wren, "profile", "Lisbon", label="city", supersedes=denver)
    assert in_prompt(wren, lisbon)
    return denver, lisbon


def confirm_page(client: Client, record_id: str) -> Dom:
    """The page the memory page's Revoke button leads to (a GET form)."""
    detail = dom(client.get(f"/memories/{record_id}/"))
    (form,) = [e for e in detail.elements if e.tag == "form" and "revoke" in str(e.get("action"))]
    assert form.get("method") == "get"
    assert buttons(form) == ["Revoke"]
    query = {str(e.get("name")): str(e.get("value")) for e in inside(form, "input")}
    return dom(client.get(str(form.get("action")), query))


def lines(page: Dom, state: str) -> list[str]:
    """The text of the preview's lines in ``state`` (``leaves``, ``new``)."""
    return [with_class(e, "line-text")[0].squashed for e in page.all("data-line", state)]


def says(page: Dom) -> list[str]:
    return [e.squashed for e in page.all("data-revoke-says")]


def test_revoke_asks_first_and_shows_what_leaves_and_that_nothing_comes_back(
    reviewer_client: Client, wren: Agent
) -> None:
    denver, lisbon = lisbon_over_denver(wren)
    before = composed(wren).prompt.text

    page = confirm_page(reviewer_client, lisbon)

    assert promotion_of(lisbon).status == PromotionStatus.APPROVED  # asking changed nothing
    assert composed(wren).prompt.text == before
    assert says(page) == [
        "Its line leaves About the User: “- **city**: Lisbon”",
        "Nothing takes its place at “city”.",
        "“city: Denver”, which it replaced, does not come back: a replaced memory stays "
        "out of the prompt.",
    ]
    assert lines(page, "leaves") == ["- **city**: Lisbon"]
    (form,) = [e for e in page.elements if e.tag == "form" and "revoke" in str(e.get("action"))]
    assert buttons(form) == ["Revoke it"]

    response = reviewer_client.post(
        f"/memories/{lisbon}/revoke/", {"team": "acme", "confirm": "on", "reason": "moved on"}
    )
    assert response.status_code == 302
    told = alerts(dom(reviewer_client.get(response["Location"])))
    assert any(
        m.startswith("Revoked by mira: “city: Lisbon” left the prompt. Its line leaves About")
        and "Nothing takes its place" in m
        and "“city: Denver”, which it replaced, does not come back" in m
        for m in told
    ), told
    assert promotion_of(lisbon).status == PromotionStatus.REVOKED
    assert promotion_of(denver).status == PromotionStatus.SUPERSEDED
    assert "city" not in composed(wren).prompt.text


def test_a_post_without_the_confirmation_shows_the_page_and_changes_nothing(
    reviewer_client: Client, wren: Agent
) -> None:
    _denver, lisbon = lisbon_over_denver(wren)
    for data in ({"team": "acme"}, {"team": "acme", "confirm": ""}):
        page = dom(reviewer_client.post(f"/memories/{lisbon}/revoke/", data))
        assert says(page)[0].startswith("Its line leaves About the User")
    assert promotion_of(lisbon).status == PromotionStatus.APPROVED


def test_the_confirmation_names_the_memories_the_freed_budget_brings_back(
    reviewer_client: Client, wren: Agent, settings: Any
) -> None:
    big = remember(wren, "profile", "A" * 60, label="big")
    later = remember(wren, "profile", "B" * 60, label="later")
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 90  # room for one of the two lines
    assert in_prompt(wren, later)
    assert not in_prompt(wren, big)

    sentences = says(confirm_page(reviewer_client, later))

    assert sentences[1] == "Nothing takes its place at “later”."
    assert sentences[2].startswith("The ")
    assert "let “big: AAAA" in sentences[2]
    assert sentences[2].endswith("back in (they were over the memory budget).")
    assert lines(confirm_page(reviewer_client, later), "new") == [f"- **big**: {'A' * 60}"]


def test_a_memory_that_is_not_approved_has_nothing_to_confirm(
    reviewer_client: Client, wren: Agent
) -> None:
    record_id = preference(wren, "Tea.", label="drink")
    page = dom(reviewer_client.get(f"/memories/{record_id}/revoke/"))
    assert (
        "Only an approved memory can be revoked: this one is pending"
        in page.one("data-revoke-impact-none").squashed
    )
    assert [e for e in page.elements if e.tag == "form" and "revoke" in str(e.get("action"))] == []
    assert with_class(page, "revoke-sentences") == []


def test_who_may_see_the_confirmation(
    wren: Agent,
    rhea: User,
    viewer_client: Client,
    stranger_client: Client,
) -> None:
    record_id = preference(wren, "Tea.", label="drink")
    decide(record_id, True, Actor.for_user(rhea))
    path = f"/memories/{record_id}/revoke/"
    assert viewer_client.get(path).status_code == 403
    assert stranger_client.get(path).status_code == 404
    anonymous = Client().get(path)
    assert anonymous.status_code == 302
    assert anonymous["Location"] == f"/accounts/login/?next={path}"
    assert promotion_of(record_id).status == PromotionStatus.APPROVED
