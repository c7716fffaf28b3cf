"""Revoke and reopen from a memory's page (SPEC §5.4, §9): ``revoked`` is its own status
and drop reason, Revoke appears only on a composed memory, Reopen on a rejected or
revoked one, and a reopen racing a save to the same address lets exactly one hold it.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lens.actors import Actor
from lens.models import Agent
from memory.core.explain import utc
from memory.core.records import MemoryInput
from memory.decisions import AddressTaken, Decided, decide, reopen, revoke, undo
from memory.models import EventKind, MemoryEvent, PromotionStatus
from memory.saving import Conflict, Saved, save_memory
from tests.factories import (
    drop_reason,
    event_kinds,
    in_prompt,
    preference,
    promotion_of,
    race,
    remember,
)
from tests.pages import alerts, approval_queue, buttons, dom, queue_rows, with_class

pytestmark = pytest.mark.django_db


def page_buttons(client: Client, record_id: str) -> list[str]:
    return buttons(dom(client.get(f"/memories/{record_id}/")))


def test_a_revoked_memory_drops_as_revoked_and_can_be_reopened(
    reviewer_client: Client, wren: Agent, rhea: User
) -> None:
    record_id = preference(wren, "Tea, never coffee.", label="drink")
    decide(record_id, True, Actor.for_user(rhea))
    revoke(record_id, Actor.for_user(rhea), "wrong person")
    assert promotion_of(record_id).status == PromotionStatus.REVOKED
    assert drop_reason(wren, record_id) == "revoked"
    page = dom(reviewer_client.get(f"/memories/{record_id}/"))
    assert page.one("data-memory-status").get("data-memory-status") == "revoked"
    assert "Reopen" in buttons(page)

    response = reviewer_client.post(
        f"/memories/{record_id}/reopen/", {"team": "acme", "reason": "it was him"}
    )
    assert response.status_code == 302
    after = dom(reviewer_client.get(response["Location"]))
    assert any("waits in the approval queue" in m for m in alerts(after))
    assert promotion_of(record_id).status == PromotionStatus.PENDING
    assert event_kinds(record_id)[-2:] == [EventKind.REVOKED, EventKind.REOPENED]
    assert drop_reason(wren, record_id) == "awaiting-approval"


def test_a_rejected_memory_can_be_reopened_too(
    reviewer_client: Client, wren: Agent, rhea: User
) -> None:
    record_id = preference(wren, "Jokes every morning.", label="jokes")
    decide(record_id, False, Actor.for_user(rhea), "no")
    assert "Reopen" in page_buttons(reviewer_client, record_id)
    reviewer_client.post(f"/memories/{record_id}/reopen/", {"team": "acme"})
    assert promotion_of(record_id).status == PromotionStatus.PENDING


@pytest.mark.parametrize("state", ["pending", "approved"])
def test_reopen_is_refused_unless_rejected_or_revoked(
    reviewer_client: Client, wren: Agent, rhea: User, state: str
) -> None:
    record_id = preference(wren, "Tea.", label="drink")
    if state == "approved":
        decide(record_id, True, Actor.for_user(rhea))
    assert "Reopen" not in page_buttons(reviewer_client, record_id)
    response = reviewer_client.post(f"/memories/{record_id}/reopen/", {"team": "acme"}, follow=True)
    assert any("can be reopened" in m for m in alerts(dom(response)))
    assert promotion_of(record_id).status == state


def test_revoke_is_offered_only_where_the_memory_is_in_the_prompt(
    reviewer_client: Client, wren: Agent, rhea: User, settings: Any
) -> None:
    composed = remember(wren, "profile", "The user's name is Ada.", label="name")
    assert in_prompt(wren, composed)
    assert "Revoke" in page_buttons(reviewer_client, composed)
    # Approved but over the budget: not in the prompt, so nothing to take out of it.
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 10
    assert drop_reason(wren, composed) == "over-budget"
    assert "Revoke" not in page_buttons(reviewer_client, composed)


def test_people_without_the_permission_get_no_reopen(
    viewer_client: Client, wren: Agent, rhea: User
) -> None:
    record_id = preference(wren, "Tea.", label="drink")
    decide(record_id, False, Actor.for_user(rhea))
    assert "Reopen" not in page_buttons(viewer_client, record_id)
    assert viewer_client.post(f"/memories/{record_id}/reopen/", {"team": "acme"}).status_code == 403
    assert promotion_of(record_id).status == PromotionStatus.REJECTED


def test_strangers_cannot_reopen(stranger_client: Client, wren: Agent, rhea: User) -> None:
    record_id = preference(wren, "Tea.", label="drink")
    decide(record_id, False, Actor.for_user(rhea))
    assert (
        stranger_client.post(f"/memories/{record_id}/reopen/", {"team": "globex"}).status_code
        == 404
    )
    assert promotion_of(record_id).status == PromotionStatus.REJECTED


@pytest.mark.django_db(transaction=True)
def test_reopen_racing_a_save_to_the_same_address_lets_exactly_one_hold_it(
    wren: Agent, rhea: User
) -> None:
    reviewer = Actor.for_user(rhea)
    for _round in range(5):
        old = preference(wren, f"Tea {_round}.", label=f"drink{_round}")
        decide(old, True, reviewer)
        revoke(old, reviewer)

        def act(i: int, label: str = f"drink{_round}", old: str = old) -> Any:
            if i == 0:
                return reopen(old, reviewer)
            data = MemoryInput(kind="preference", content="Coffee.", label=label)
            return save_memory(wren, data, reviewer)

        reopened, saved = race(2, act)
        holders = [
            isinstance(reopened, Decided),
            isinstance(saved, Saved),
        ]
        assert sum(holders) == 1, (reopened, saved)
        assert isinstance(reopened, AddressTaken) or isinstance(saved, Conflict)


# --- what a reopened memory says about itself --------------------------------------------


def _why(client: Client, path: str, memory_id: str) -> str:
    """The words a page says about ``memory_id``: the lens's drop, or the memory page."""
    page = dom(client.get(path))
    if path.startswith("/agents/"):
        (why,) = with_class(page.one("data-memory-id", memory_id, tag="li"), "drop-why")
        return why.squashed
    return page.one("data-memory-why").squashed


def test_a_reopened_memory_of_an_auto_section_says_who_reopened_it_and_when(
    reviewer_client: Client, wren: Agent, rhea: User
) -> None:
    # About the User is an auto section: its memories are approved by the system, so only
    # a reopening makes one wait, and the section's tier explains nothing.
    record_id = remember(wren, "profile", "Lives in Lisbon.", label="city")
    assert promotion_of(record_id).tier == "auto"
    revoke(record_id, Actor.for_user(rhea), "moved")
    result = reopen(record_id, Actor.for_user(rhea), "asked again")
    assert isinstance(result, Decided)
    at = MemoryEvent.objects.get(record_id=record_id, kind=EventKind.REOPENED).at
    assert at > promotion_of(record_id).promoted_at

    for path in ("/agents/wren/", f"/memories/{record_id}/"):
        why = _why(reviewer_client, path, record_id)
        assert why.startswith(f"Reopened by rhea on {utc(at)} (“asked again”);"), why
        assert "waits for a reviewer's decision" in why
        assert "guarded section" not in why
    facts = dom(reviewer_client.get(f"/memories/{record_id}/")).one("data-reopened")
    assert facts.squashed.endswith(
        f"rhea, {at:%Y-%m-%d %H:%M:%S}: asked again · waits for a reviewer's decision"
    )

    row = queue_rows(approval_queue(reviewer_client))[record_id]
    (said,) = with_class(row, "queue-reopened")
    assert said.get("data-reopened-by") == "rhea"
    assert "Reopened by rhea" in said.squashed
    assert "“asked again”; waits for a reviewer's decision" in said.squashed
    assert "whatever its section's tier" in said.squashed


def test_undoing_a_decision_on_a_reopened_memory_keeps_its_reopening(
    reviewer_client: Client, wren: Agent, reviewer: User, rhea: User
) -> None:
    record_id = preference(wren, "Tea.", label="drink")
    decide(record_id, False, Actor.for_user(rhea))
    reopen(record_id, Actor.for_user(rhea))
    result = decide(record_id, True, Actor.for_user(reviewer))
    assert isinstance(result, Decided)
    undo(record_id, Actor.for_user(reviewer), "approved", result.promotion.decided_at)
    assert _why(reviewer_client, "/agents/wren/", record_id).startswith("Reopened by rhea on ")


def test_a_memory_never_reopened_still_waits_since_it_was_saved(
    reviewer_client: Client, wren: Agent, reviewer: User
) -> None:
    record_id = preference(wren, "Tea.", label="drink")
    result = decide(record_id, True, Actor.for_user(reviewer))
    assert isinstance(result, Decided)
    undo(record_id, Actor.for_user(reviewer), "approved", result.promotion.decided_at)
    since = utc(promotion_of(record_id).promoted_at)
    why = _why(reviewer_client, f"/memories/{record_id}/", record_id)
    assert why.startswith(f"Waiting for approval since {since}: User Preferences is a guarded")
    assert (
        with_class(queue_rows(approval_queue(reviewer_client))[record_id], "queue-reopened") == []
    )
