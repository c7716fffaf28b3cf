"""The approval queue at ``/approvals/``: listing, deciding one or many, revoking, who may
do what, CSRF, races, no-JavaScript fallbacks and query counts (SPEC §5.4, §9).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from lens.actors import Actor
from lens.models import Agent, ApiToken, Team
from memory.decisions import decide, pending_count
from memory.models import EventKind, MemoryEvent, MemoryRecord, Promotion, PromotionStatus
from tests.factories import SAMPLE_CONFIG, create_agent, make_user
from tests.pages import Dom, Element, dom
from tests.test_memory_views import composed, memory_config, remember

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}
DECISIONS = (EventKind.APPROVED, EventKind.REJECTED, EventKind.REVOKED)


# --- configs, people and clients -----------------------------------------------------


def wren_config() -> dict[str, Any]:
    """``user-background`` with the guarded preferences section holding one authored entry."""
    config = memory_config()
    preferences = config["background"]["sections"][1]
    preferences["entries"] = [{"key": "theme", "value": "Light theme, large font."}]
    return config


def project_config(name: str = "Atlas") -> dict[str, Any]:
    """The ``project`` preset with its two guarded sections."""
    return {
        **SAMPLE_CONFIG,
        "name": name,
        "routing_spec": "project",
        "background": {
            "sections": [
                {"id": "project_context", "title": "Project Context", "promotion": "guarded"},
                {"id": "conventions", "title": "Conventions", "promotion": "guarded"},
                {"id": "project_state", "title": "Project State", "promotion": "auto"},
            ]
        },
    }


def grant(user: User) -> User:
    user.user_permissions.add(Permission.objects.get(codename="approve_promotion"))
    return user


def logged_in(user: User, **options: Any) -> Client:
    client = Client(**options)
    client.force_login(user)
    return client


@pytest.fixture
def wren(team: Team) -> Agent:
    return create_agent(team, "wren", wren_config())


@pytest.fixture
def atlas(team: Team) -> Agent:
    return create_agent(team, "atlas", project_config())


@pytest.fixture
def reviewer(member: User) -> User:
    """mira, a member of acme holding ``memory.approve_promotion``."""
    return grant(member)


@pytest.fixture
def reviewer_client(reviewer: User) -> Client:
    return logged_in(reviewer)


@pytest.fixture
def rhea(team: Team) -> User:
    """A second reviewer of acme."""
    return grant(make_user("rhea", team))


@pytest.fixture
def viewer(team: Team) -> User:
    """A member of acme without the permission."""
    return make_user("vic", team)


@pytest.fixture
def viewer_client(viewer: User) -> Client:
    return logged_in(viewer)


@pytest.fixture
def outsider_client(stranger: User) -> Client:
    """A member of globex only, holding the permission (which is not team-scoped)."""
    return logged_in(grant(stranger))


# --- helpers ---------------------------------------------------------------------------


def preference(agent: Agent, content: str, label: str | None = None, **extra: Any) -> str:
    """A memory routed to a guarded section: its promotion row is pending."""
    record_id = remember(agent, "preference", content, label=label, **extra)
    assert promotion(record_id).status == PromotionStatus.PENDING
    return record_id


def many_pending(agent: Agent, n: int, prefix: str = "p") -> list[str]:
    return [preference(agent, f"Preference number {i}.", label=f"{prefix}{i}") for i in range(n)]


def promotion(record_id: str) -> Promotion:
    return Promotion.objects.select_related("decided_by").get(pk=record_id)


def decisions(*record_ids: str) -> list[tuple[str, str, str]]:
    """(record id, kind, actor) of every approve/reject/revoke event, oldest first."""
    return list(
        MemoryEvent.objects.filter(record_id__in=record_ids, kind__in=DECISIONS)
        .order_by("at", "id")
        .values_list("record_id", "kind", "actor")
    )


def in_prompt(agent: Agent, record_id: str) -> bool:
    composition = composed(agent)
    return any(record_id in section.memory_ids for section in composition.prompt.sections)


def drop_reason(agent: Agent, record_id: str) -> str | None:
    return {d.memory_id: d.reason for d in composed(agent).report.drops}.get(record_id)


def post_decision(
    client: Client,
    record_id: str,
    decision: str,
    reason: str | None = None,
    *,
    htmx: bool = True,
    query: str = "",
    **headers: str,
) -> Any:
    data = {"decision": decision} if reason is None else {"decision": decision, "reason": reason}
    return client.post(
        f"/approvals/{record_id}/decide/{query}",
        data,
        headers={**(HTMX if htmx else {}), **headers},
    )


def post_bulk(
    client: Client,
    decision: str,
    selected: Iterable[str],
    reason: str = "",
    *,
    htmx: bool = True,
    query: str = "",
) -> Any:
    return client.post(
        f"/approvals/bulk/{query}",
        {"decision": decision, "selected": list(selected), "reason": reason},
        headers=HTMX if htmx else {},
    )


def queue(client: Client, query: str = "") -> Dom:
    return dom(client.get(f"/approvals/{query}"))


def row_ids(page: Dom) -> list[str]:
    return [e.get("data-promotion-id") or "" for e in page.all("data-promotion-id")]


def rows(page: Dom) -> dict[str, Element]:
    return {e.get("data-promotion-id") or "": e for e in page.all("data-promotion-id")}


def inside(element: Element, tag: str, **attrs: str) -> list[Element]:
    return [
        e
        for e in element.descendants()
        if e.tag == tag and all(e.get(k.replace("_", "-")) == v for k, v in attrs.items())
    ]


def with_class(element: Element, name: str) -> list[Element]:
    return [e for e in element.descendants() if name in (e.get("class") or "").split()]


def buttons(element: Element | Dom) -> list[str]:
    found = element.descendants() if isinstance(element, Element) else element.elements
    return [e.squashed for e in found if e.tag == "button"]


def messages_on(page: Dom) -> list[str]:
    return [e.squashed for e in page.elements if "alert" in (e.get("class") or "").split()]


def fragment(response: Any) -> Dom:
    """An htmx answer: a fragment, never a whole page."""
    text = response.content.decode()
    assert "<html" not in text and "<body" not in text and "<header" not in text
    return dom(response)


def oob_count(page: Dom) -> int:
    counter = page.one("id", "pending-count")
    assert counter.get("hx-swap-oob") == "true"
    assert counter.get("data-pending-total") == counter.squashed
    return int(counter.squashed)


# --- the queue -------------------------------------------------------------------------


def test_the_queue_lists_every_pending_promotion_of_the_team_oldest_first(
    viewer_client: Client, wren: Agent, atlas: Agent, reviewer: User
) -> None:
    first = preference(wren, "Prefers a dark theme.", label="theme")
    remember(wren, "profile", "Mira", label="name")  # auto: approved, never queued
    remember(wren, "fact", "Visited Kraków.")  # spec-declined
    second = remember(atlas, "convention", "Tabs, never spaces.", label="indent")
    rejected = preference(wren, "Wants daily jokes.", label="jokes")
    decide(rejected, False, Actor.for_user(reviewer))
    third = remember(atlas, "decision", "We use PostgreSQL.", label="database")
    fourth = preference(wren, "Short answers.")

    assert row_ids(queue(viewer_client)) == [first, second, third, fourth]


def test_the_queue_is_paginated_by_fifty(viewer_client: Client, wren: Agent) -> None:
    ids = many_pending(wren, 60)

    page_one = queue(viewer_client)
    assert row_ids(page_one) == ids[:50]
    pager = page_one.one("aria-label", "Pages")
    assert "page 1 of 2" in pager.squashed.lower()
    assert [a.get("href") for a in inside(pager, "a")] == ["?page=2"]

    page_two = queue(viewer_client, "?page=2")
    assert row_ids(page_two) == ids[50:]
    assert [a.get("href") for a in inside(page_two.one("aria-label", "Pages"), "a")] == ["?page=1"]


def test_the_queue_filters_by_agent_and_section(
    viewer_client: Client, wren: Agent, atlas: Agent
) -> None:
    theme = preference(wren, "Prefers a dark theme.", label="theme")
    indent = remember(atlas, "convention", "Tabs, never spaces.", label="indent")
    database = remember(atlas, "decision", "We use PostgreSQL.", label="database")
    naming = remember(atlas, "convention", "snake_case everywhere.", label="naming")

    assert row_ids(queue(viewer_client, "?agent=wren")) == [theme]
    assert row_ids(queue(viewer_client, "?agent=atlas")) == [indent, database, naming]
    assert row_ids(queue(viewer_client, "?section=conventions")) == [indent, naming]
    assert row_ids(queue(viewer_client, "?agent=atlas&section=project_context")) == [database]
    empty = queue(viewer_client, "?agent=wren&section=conventions")
    assert row_ids(empty) == []
    assert "with these filters" in empty.one("class", "empty card").squashed

    page = queue(viewer_client, "?agent=atlas")
    agent_select, section_select = (e for e in page.elements if e.tag == "select")
    assert [o.get("value") for o in inside(agent_select, "option")] == ["", "atlas", "wren"]
    assert [o.get("value") for o in inside(agent_select, "option") if "selected" in o.attrs] == [
        "atlas"
    ]
    # Only guarded sections can hold pending rows, so only they are offered.
    assert [o.get("value") for o in inside(section_select, "option")] == [
        "",
        "conventions",
        "project_context",
        "user_preferences",
    ]


def test_pages_of_a_filtered_queue_keep_the_filter(viewer_client: Client, wren: Agent) -> None:
    ids = many_pending(wren, 55)
    page = queue(viewer_client, "?agent=wren")
    assert [a.get("href") for a in inside(page.one("aria-label", "Pages"), "a")] == [
        "?agent=wren&page=2"
    ]
    assert row_ids(queue(viewer_client, "?agent=wren&page=2")) == ids[50:]


def test_a_row_shows_what_the_memory_is_and_where_it_would_land(
    viewer_client: Client, wren: Agent
) -> None:
    labelled = preference(
        wren, "Prefers <short> answers & no emoji.", label="Answer Style", tags=["tone", "chat"]
    )
    unlabelled = preference(wren, "Likes jazz in the evening.")
    three_days_ago = timezone.now() - timedelta(days=3, minutes=5)
    MemoryRecord.objects.filter(pk=labelled).update(created_at=three_days_ago)

    found = rows(queue(viewer_client))
    row = found[labelled]
    assert inside(row, "span", **{"class": "kind"})[0].squashed == "preference"
    assert inside(row, "span", **{"class": "label"})[0].squashed == "Answer Style"
    assert [t.squashed for t in with_class(row, "tag")] == ["tone", "chat"]
    content = with_class(row, "queue-content")[0]
    assert content.squashed == "Prefers <short> answers & no emoji."
    assert [a.get("href") for a in inside(content, "a")] == [f"/memories/{labelled}/"]
    (age,) = inside(row, "time")
    assert datetime.fromisoformat(age.get("datetime") or "") == three_days_ago
    assert age.squashed == "3 days ago"
    assert "Wren" in with_class(row, "queue-meta")[0].squashed
    where = with_class(row, "queue-where")[0]
    assert where.squashed == (
        "Would land in User Preferences at answer-style "
        f"{chr(0xB7)} key from label {chr(0xB7)} spec user-background v1"
    )
    assert with_class(row, "queue-replaces") == []

    key = promotion(unlabelled).key or ""
    assert key.startswith("c-")
    where = with_class(found[unlabelled], "queue-where")[0]
    assert f"at {key} {chr(0xB7)} key from content {chr(0xB7)}" in where.squashed
    assert inside(found[unlabelled], "span", **{"class": "label"}) == []


def test_a_row_at_an_authored_address_shows_the_diff_and_warns_that_authored_wins(
    viewer_client: Client, wren: Agent
) -> None:
    record_id = preference(wren, "Dark theme, large font.", label="theme")
    (replaces,) = with_class(rows(queue(viewer_client))[record_id], "queue-replaces")
    assert replaces.get("data-replaces") == "authored"
    assert "authored wins" in replaces.squashed
    (diff,) = with_class(replaces, "diff")
    assert [e.squashed for e in inside(diff, "del")] == ["Light"]
    assert [e.squashed for e in inside(diff, "ins")] == ["Dark"]
    assert diff.squashed == "Light Dark theme, large font."


def test_a_row_that_supersedes_a_memory_at_its_address_shows_the_diff(
    viewer_client: Client, wren: Agent, reviewer: User
) -> None:
    older = preference(wren, "Likes <b>bold</b> headings.", label="headings")
    decide(older, True, Actor.for_user(reviewer))
    assert in_prompt(wren, older)
    newer = preference(wren, "Likes <i>plain</i> headings.", label="headings", supersedes=older)

    (replaces,) = with_class(rows(queue(viewer_client))[newer], "queue-replaces")
    assert replaces.get("data-replaces") == "memory"
    assert f"/memories/{older}/" in [a.get("href") for a in inside(replaces, "a")]
    (diff,) = with_class(replaces, "diff")
    # Escaped: the content's markup is text, never elements.
    assert [e.tag for e in diff.descendants()] == ["del", "ins"]
    assert [e.text for e in inside(diff, "del")] == ["<b>bold</b>"]
    assert [e.text for e in inside(diff, "ins")] == ["<i>plain</i>"]


def test_a_row_that_supersedes_a_memory_elsewhere_shows_no_diff(
    viewer_client: Client, wren: Agent
) -> None:
    older = preference(wren, "Likes jazz.", label="music")
    newer = preference(wren, "Prefers tea.", label="drink", supersedes=older)
    page = queue(viewer_client)
    assert row_ids(page) == [newer]
    assert with_class(rows(page)[newer], "queue-replaces") == []


def test_a_reviewer_gets_approve_and_reject_buttons_a_reason_and_bulk_actions(
    reviewer_client: Client, wren: Agent
) -> None:
    ids = many_pending(wren, 3)
    page = queue(reviewer_client)
    assert page.all("data-read-only") == []
    for record_id, row in rows(page).items():
        assert buttons(row) == ["Approve", "Reject"]
        (reject,) = (e for e in inside(row, "button") if e.squashed == "Reject")
        form = reject.ancestor("form")
        assert form is not None and form.get("method") == "post"
        assert form.get("action") == form.get("hx-post") == f"/approvals/{record_id}/decide/"
        assert form.get("hx-target") == "closest li"
        # The reason field is inside the row, in the form the Reject button sends.
        assert [e.get("name") for e in inside(form, "input", type="text")] == ["reason"]
        (checkbox,) = inside(row, "input", type="checkbox")
        assert checkbox.get("name") == "selected" and checkbox.get("form") == "bulk"
        assert checkbox.get("value") == record_id and "checked" not in checkbox.attrs

    bulk = page.one("id", "bulk")
    assert bulk.get("action") == "/approvals/bulk/"
    assert buttons(bulk) == ["Approve selected", "Reject selected"]
    assert [e.get("name") for e in inside(bulk, "input", type="text")] == ["reason"]

    # Without JavaScript, "select all" is a link that checks every box on the page.
    checked = queue(reviewer_client, "?select=all")
    assert [
        e.get("value")
        for e in checked.elements
        if e.get("name") == "selected" and "checked" in e.attrs
    ] == ids


# --- deciding one row --------------------------------------------------------------------


def test_approving_with_htmx_swaps_the_row_and_composes_the_memory(
    reviewer_client: Client, wren: Agent, reviewer: User
) -> None:
    record_id = preference(wren, "Tea, never coffee.", label="drink")
    other = preference(wren, "Short answers.", label="answers")
    assert drop_reason(wren, record_id) == "awaiting-approval"

    # The row's form also sends its (empty or not) reason field: approving ignores it.
    response = post_decision(reviewer_client, record_id, "approve", reason="ignored")
    page = fragment(response)
    (decided,) = page.all("data-promotion-id")
    assert decided.tag == "li"
    assert decided.get("data-promotion-id") == record_id
    assert decided.get("data-decision") == "approved"
    assert "Approved by mira." in decided.squashed
    assert oob_count(page) == 1

    row = promotion(record_id)
    assert row.status == PromotionStatus.APPROVED
    assert row.decided_by == reviewer
    assert row.decided_at is not None
    assert row.decision_note == ""
    event = MemoryEvent.objects.get(record_id=record_id, kind=EventKind.APPROVED)
    assert (event.actor, event.actor_user, event.actor_token) == ("mira", reviewer, None)
    assert event.detail == {}

    assert in_prompt(wren, record_id)
    assert drop_reason(wren, record_id) is None
    lens = dom(reviewer_client.get("/agents/wren/"))
    assert lens.one("data-memory-ids", record_id).squashed == "- **drink**: Tea, never coffee."
    assert promotion(other).status == PromotionStatus.PENDING
    assert row_ids(queue(reviewer_client)) == [other]


def test_rejecting_with_a_reason_drops_the_memory_as_rejected(
    reviewer_client: Client, wren: Agent, reviewer: User
) -> None:
    record_id = preference(wren, "Wants daily jokes.", label="jokes")
    response = post_decision(reviewer_client, record_id, "reject", reason="  not useful  ")
    page = fragment(response)
    decided = page.one("data-promotion-id", record_id)
    assert decided.get("data-decision") == "rejected"
    assert "Rejected by mira: not useful" in decided.squashed
    assert oob_count(page) == 0

    row = promotion(record_id)
    assert (row.status, row.decided_by, row.decision_note) == (
        PromotionStatus.REJECTED,
        reviewer,
        "not useful",
    )
    event = MemoryEvent.objects.get(record_id=record_id, kind=EventKind.REJECTED)
    assert (event.actor, event.actor_user) == ("mira", reviewer)
    assert event.detail == {"reason": "not useful"}
    assert drop_reason(wren, record_id) == "rejected"
    assert not in_prompt(wren, record_id)


def test_rejecting_without_a_reason_stores_none(reviewer_client: Client, wren: Agent) -> None:
    record_id = preference(wren, "Wants daily jokes.", label="jokes")
    decided = fragment(post_decision(reviewer_client, record_id, "reject", reason=""))
    assert "Rejected by mira." in decided.one("data-promotion-id").squashed
    assert promotion(record_id).decision_note == ""
    assert MemoryEvent.objects.get(record_id=record_id, kind=EventKind.REJECTED).detail == {}


def test_without_javascript_deciding_redirects_back_to_the_queue_with_a_message(
    reviewer_client: Client, wren: Agent
) -> None:
    approved = preference(wren, "Tea, never coffee.", label="drink")
    rejected = preference(wren, "Wants daily jokes.", label="jokes")

    response = post_decision(reviewer_client, approved, "approve", htmx=False)
    assert response.status_code == 302
    assert response["Location"] == "/approvals/"
    page = dom(reviewer_client.get(response["Location"]))
    assert "Approved by mira." in messages_on(page)
    assert row_ids(page) == [rejected]

    # The filters of the page the form was on are kept.
    response = post_decision(
        reviewer_client, rejected, "reject", "too noisy", htmx=False, query="?agent=wren"
    )
    assert response.status_code == 302
    assert response["Location"] == "/approvals/?agent=wren"
    page = dom(reviewer_client.get(response["Location"]))
    assert "Rejected by mira: too noisy" in messages_on(page)
    assert row_ids(page) == []
    assert promotion(approved).status == PromotionStatus.APPROVED
    assert promotion(rejected).status == PromotionStatus.REJECTED


@pytest.mark.parametrize("decision", [None, "", "maybe", "APPROVE"])
def test_a_decision_other_than_approve_or_reject_is_refused(
    reviewer_client: Client, wren: Agent, decision: str | None
) -> None:
    record_id = preference(wren, "Tea, never coffee.", label="drink")
    data = {} if decision is None else {"decision": decision}
    response = reviewer_client.post(f"/approvals/{record_id}/decide/", data, headers=HTMX)
    assert response.status_code == 400
    assert promotion(record_id).status == PromotionStatus.PENDING
    assert decisions(record_id) == []


def test_an_unknown_promotion_is_404(reviewer_client: Client, wren: Agent) -> None:
    assert post_decision(reviewer_client, "zzzzzzzzzzzzzzzzzz", "approve").status_code == 404
    assert reviewer_client.post("/memories/zzzzzzzzzzzzzzzzzz/revoke/").status_code == 404


def test_the_decide_and_bulk_urls_refuse_get(reviewer_client: Client, wren: Agent) -> None:
    record_id = preference(wren, "Tea, never coffee.", label="drink")
    assert reviewer_client.get(f"/approvals/{record_id}/decide/").status_code == 405
    assert reviewer_client.get("/approvals/bulk/").status_code == 405
    assert reviewer_client.get(f"/memories/{record_id}/revoke/").status_code == 405
    assert reviewer_client.post("/approvals/").status_code == 405
    assert promotion(record_id).status == PromotionStatus.PENDING


# --- races and stale rows ------------------------------------------------------------------


def test_deciding_a_row_someone_already_decided_changes_nothing_and_says_who(
    reviewer_client: Client, wren: Agent, rhea: User
) -> None:
    record_id = preference(wren, "Tea, never coffee.", label="drink")
    waiting = preference(wren, "Short answers.", label="answers")
    decide(record_id, True, Actor.for_user(rhea))
    before = promotion(record_id)

    response = post_decision(reviewer_client, record_id, "reject", reason="nope")
    assert response.status_code == 200
    page = fragment(response)
    stale = page.one("data-promotion-id", record_id)
    assert stale.get("data-decision") == "stale"
    assert "already decided by rhea" in stale.squashed
    assert "approved" in stale.squashed
    assert oob_count(page) == 1

    after = promotion(record_id)
    assert (after.status, after.decided_by, after.decided_at, after.decision_note) == (
        PromotionStatus.APPROVED,
        rhea,
        before.decided_at,
        "",
    )
    assert decisions(record_id) == [(record_id, "approved", "rhea")]
    assert promotion(waiting).status == PromotionStatus.PENDING


def test_without_javascript_a_stale_decision_says_who_after_the_redirect(
    reviewer_client: Client, wren: Agent, rhea: User
) -> None:
    record_id = preference(wren, "Wants daily jokes.", label="jokes")
    decide(record_id, False, Actor.for_user(rhea), "not useful")
    response = post_decision(reviewer_client, record_id, "approve", htmx=False)
    assert response.status_code == 302
    assert response["Location"] == "/approvals/"
    shown = messages_on(dom(reviewer_client.get("/approvals/")))
    assert any("already decided by rhea" in m and "rejected" in m for m in shown), shown
    assert promotion(record_id).status == PromotionStatus.REJECTED
    assert decisions(record_id) == [(record_id, "rejected", "rhea")]


def test_deciding_a_row_whose_memory_was_superseded_meanwhile_says_so(
    reviewer_client: Client, wren: Agent
) -> None:
    older = preference(wren, "Likes jazz.", label="music")
    newer = preference(wren, "Likes jazz and blues.", label="music", supersedes=older)
    assert promotion(older).status == PromotionStatus.SUPERSEDED

    for decision in ("approve", "reject"):
        response = post_decision(reviewer_client, older, decision)
        assert response.status_code == 200
        stale = fragment(response).one("data-promotion-id", older)
        assert stale.get("data-decision") == "stale"
        assert "superseded" in stale.squashed
        assert newer in stale.squashed

    assert promotion(older).status == PromotionStatus.SUPERSEDED
    assert promotion(older).decided_by is None
    assert promotion(newer).status == PromotionStatus.PENDING
    assert decisions(older, newer) == []


@pytest.mark.django_db(transaction=True)
def test_reviewers_deciding_one_row_at_once_land_exactly_one_decision(
    wren: Agent, reviewer: User, rhea: User
) -> None:
    record_ids = many_pending(wren, 3)
    # Two browsers each: approvers and rejecters race on every row.
    clients = [logged_in(user) for user in (reviewer, rhea, reviewer, rhea)]
    wanted = ["approve", "reject", "reject", "approve"]
    for record_id in record_ids:
        answers = race(
            [
                lambda c=client, d=decision, r=record_id: post_decision(c, r, d)
                for client, decision in zip(clients, wanted, strict=True)
            ]
        )
        landed = decisions(record_id)
        assert len(landed) == 1, landed
        _rid, kind, who = landed[0]
        row = promotion(record_id)
        assert row.status == kind
        assert row.decided_by is not None and row.decided_by.get_username() == who
        outcomes = []
        for response in answers:
            assert response.status_code == 200
            element = fragment(response).one("data-promotion-id", record_id)
            outcomes.append(element.get("data-decision"))
            if element.get("data-decision") == "stale":
                assert f"already decided by {who}" in element.squashed
        assert sorted(outcomes) == sorted([kind, "stale", "stale", "stale"])
    assert pending_count(wren.team) == 0


@pytest.mark.django_db(transaction=True)
def test_overlapping_bulk_decisions_at_once_land_all_or_nothing(
    wren: Agent, reviewer: User, rhea: User
) -> None:
    a, b, c, d = many_pending(wren, 4)
    mira_client, rhea_client = logged_in(reviewer), logged_in(rhea)
    answers = race(
        [
            lambda: post_bulk(mira_client, "approve", [a, b, c]),
            lambda: post_bulk(rhea_client, "reject", [b, c, d]),
        ]
    )
    assert [r.status_code for r in answers] == [200, 200]
    statuses = {rid: promotion(rid).status for rid in (a, b, c, d)}
    assert statuses in (
        {a: "approved", b: "approved", c: "approved", d: "pending"},
        {a: "pending", b: "rejected", c: "rejected", d: "rejected"},
    ), statuses
    assert len(decisions(a, b, c, d)) == 3
    errors = [
        r
        for r in answers
        if fragment(r).all("role", "alert") and b"Nothing was changed" in r.content
    ]
    assert len(errors) == 1


@pytest.mark.django_db(transaction=True)
def test_reviewers_revoking_one_memory_at_once_revoke_it_once(
    wren: Agent, reviewer: User, rhea: User
) -> None:
    record_id = preference(wren, "Tea, never coffee.", label="drink")
    decide(record_id, True, Actor.for_user(reviewer))
    clients = [logged_in(user) for user in (reviewer, rhea, reviewer, rhea)]
    answers = race(
        [lambda c=client: c.post(f"/memories/{record_id}/revoke/") for client in clients]
    )
    assert [r.status_code for r in answers] == [302] * 4
    landed = decisions(record_id)
    assert [kind for _rid, kind, _who in landed] == ["approved", "revoked"]
    assert MemoryEvent.objects.filter(record_id=record_id, kind=EventKind.REVOKED).count() == 1
    row = promotion(record_id)
    assert row.status == PromotionStatus.REJECTED
    assert row.decided_by is not None and row.decided_by.get_username() == landed[-1][2]
    assert not in_prompt(wren, record_id)


def race(calls: list[Callable[[], Any]]) -> list[Any]:
    """Run every call at once, each in its own thread (after a barrier); their answers."""
    barrier = threading.Barrier(len(calls))
    answers: list[Any] = [None] * len(calls)
    failures: list[BaseException] = []
    lock = threading.Lock()

    def run(n: int) -> None:
        try:
            barrier.wait(timeout=30)
            answer = calls[n]()
            with lock:
                answers[n] = answer
        except BaseException as exc:  # reported by the test, never swallowed
            with lock:
                failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)
    assert failures == []
    return answers


# --- bulk ----------------------------------------------------------------------------------


def test_bulk_approve_decides_every_selected_row_and_nothing_else(
    reviewer_client: Client, wren: Agent, atlas: Agent, reviewer: User
) -> None:
    ids = many_pending(wren, 3)
    convention = remember(atlas, "convention", "Tabs, never spaces.", label="indent")
    left = preference(wren, "Short answers.", label="answers")

    response = post_bulk(reviewer_client, "approve", [*ids, convention, ids[0]])
    page = fragment(response)
    assert page.one("role", "status").squashed == "Approved 4 memories."
    assert row_ids(page) == [left]
    assert oob_count(page) == 1

    for record_id in [*ids, convention]:
        row = promotion(record_id)
        assert (row.status, row.decided_by) == (PromotionStatus.APPROVED, reviewer)
    assert promotion(left).status == PromotionStatus.PENDING
    events = MemoryEvent.objects.filter(kind=EventKind.APPROVED).order_by("record_id")
    assert sorted(e.record_id for e in events) == sorted([*ids, convention])
    assert {(e.actor, e.actor_user_id, json.dumps(e.detail)) for e in events} == {
        ("mira", reviewer.pk, '{"bulk": true}')
    }
    assert {e.agent_id for e in events} == {wren.pk, atlas.pk}
    assert all(in_prompt(wren, record_id) for record_id in ids)
    assert in_prompt(atlas, convention)


def test_bulk_reject_stores_the_reason_on_every_row(
    reviewer_client: Client, wren: Agent, reviewer: User
) -> None:
    ids = many_pending(wren, 2)
    page = fragment(post_bulk(reviewer_client, "reject", ids, reason="duplicates"))
    assert page.one("role", "status").squashed == "Rejected 2 memories."
    for record_id in ids:
        row = promotion(record_id)
        assert (row.status, row.decision_note) == (PromotionStatus.REJECTED, "duplicates")
        event = MemoryEvent.objects.get(record_id=record_id, kind=EventKind.REJECTED)
        assert event.detail == {"reason": "duplicates", "bulk": True}
        assert drop_reason(wren, record_id) == "rejected"


def test_without_javascript_bulk_redirects_back_with_a_message(
    reviewer_client: Client, wren: Agent
) -> None:
    (record_id,) = many_pending(wren, 1)
    response = post_bulk(reviewer_client, "approve", [record_id], htmx=False, query="?agent=wren")
    assert response.status_code == 302
    assert response["Location"] == "/approvals/?agent=wren"
    assert "Approved 1 memory." in messages_on(dom(reviewer_client.get(response["Location"])))
    assert promotion(record_id).status == PromotionStatus.APPROVED


def test_bulk_is_all_or_nothing_when_a_selected_row_is_no_longer_pending(
    reviewer_client: Client, wren: Agent, rhea: User
) -> None:
    ids = many_pending(wren, 4)
    decide(ids[2], False, Actor.for_user(rhea))

    page = fragment(post_bulk(reviewer_client, "approve", ids))
    (error,) = page.all("role", "alert")
    assert "Nothing was changed" in error.squashed
    assert "1 of the selected memories are no longer pending" in error.squashed
    assert row_ids(page) == [ids[0], ids[1], ids[3]]
    assert oob_count(page) == 3
    assert [promotion(rid).status for rid in ids] == ["pending", "pending", "rejected", "pending"]
    assert decisions(*ids) == [(ids[2], "rejected", "rhea")]

    response = post_bulk(reviewer_client, "reject", ids, "spam", htmx=False)
    assert response.status_code == 302
    shown = messages_on(dom(reviewer_client.get(response["Location"])))
    assert any("Nothing was changed" in m for m in shown), shown
    assert [promotion(rid).status for rid in ids] == ["pending", "pending", "rejected", "pending"]
    assert decisions(*ids) == [(ids[2], "rejected", "rhea")]


def test_bulk_with_a_superseded_row_changes_nothing(reviewer_client: Client, wren: Agent) -> None:
    older = preference(wren, "Likes jazz.", label="music")
    other = preference(wren, "Short answers.", label="answers")
    newer = preference(wren, "Likes jazz and blues.", label="music", supersedes=older)
    page = fragment(post_bulk(reviewer_client, "approve", [older, other, newer]))
    assert "Nothing was changed" in page.one("role", "alert").squashed
    assert [promotion(rid).status for rid in (older, other, newer)] == [
        "superseded",
        "pending",
        "pending",
    ]
    assert decisions(older, other, newer) == []


def test_bulk_with_a_row_of_another_team_changes_nothing(
    reviewer_client: Client, wren: Agent, other_team: Team
) -> None:
    gizmo = create_agent(other_team, "gizmo", memory_config(name="Gizmo"))
    theirs = preference(gizmo, "Globex secret preference.", label="secret")
    ours = preference(wren, "Short answers.", label="answers")
    for ids in ([ours, theirs], [theirs], [ours, "zzzzzzzzzzzzzzzzzz"]):
        page = fragment(post_bulk(reviewer_client, "approve", ids))
        assert "Nothing was changed" in page.one("role", "alert").squashed
        assert row_ids(page) == [ours]
    assert promotion(theirs).status == promotion(ours).status == PromotionStatus.PENDING
    assert decisions(theirs, ours) == []


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"decision": "approve"}, "Select at least one memory first."),
        ({"decision": "reject", "selected": []}, "Select at least one memory first."),
        ({"selected": ["x"]}, "Choose Approve selected or Reject selected."),
        ({"decision": "delete", "selected": ["x"]}, "Choose Approve selected or Reject selected."),
    ],
)
def test_bulk_without_a_selection_or_a_decision_shows_an_error(
    reviewer_client: Client, wren: Agent, data: dict[str, Any], error: str
) -> None:
    record_id = preference(wren, "Short answers.", label="answers")
    if data.get("selected") == ["x"]:
        data = {**data, "selected": [record_id]}
    page = fragment(reviewer_client.post("/approvals/bulk/", data, headers=HTMX))
    assert page.one("role", "alert").squashed == error
    assert promotion(record_id).status == PromotionStatus.PENDING
    assert decisions(record_id) == []


def test_bulk_approving_sixty_rows_creates_sixty_events_and_empties_the_queue(
    reviewer_client: Client, wren: Agent, reviewer: User
) -> None:
    ids = many_pending(wren, 60)
    assert pending_count(wren.team) == 60
    page = fragment(post_bulk(reviewer_client, "approve", ids))
    assert page.one("role", "status").squashed == "Approved 60 memories."
    assert oob_count(page) == 0
    assert row_ids(page) == []
    assert pending_count(wren.team) == 0
    events = MemoryEvent.objects.filter(kind=EventKind.APPROVED)
    assert events.count() == 60
    assert set(events.values_list("record_id", flat=True)) == set(ids)
    assert set(events.values_list("actor_user", flat=True)) == {reviewer.pk}
    assert Promotion.objects.filter(pk__in=ids, status=PromotionStatus.APPROVED).count() == 60
    assert composed(wren).report.stats.composed == 60
    assert row_ids(queue(reviewer_client)) == []


# --- revoking ------------------------------------------------------------------------------


def test_revoking_an_approved_memory_takes_it_out_of_the_prompt(
    reviewer_client: Client, wren: Agent, reviewer: User, rhea: User
) -> None:
    record_id = preference(wren, "Tea, never coffee.", label="drink")
    decide(record_id, True, Actor.for_user(rhea))
    assert in_prompt(wren, record_id)
    detail = dom(reviewer_client.get(f"/memories/{record_id}/"))
    (revoke_form,) = [
        e for e in detail.elements if e.tag == "form" and "revoke" in (e.get("action") or "")
    ]
    assert revoke_form.get("action") == f"/memories/{record_id}/revoke/"
    assert buttons(revoke_form) == ["Revoke"]

    response = reviewer_client.post(f"/memories/{record_id}/revoke/", {"reason": "outdated"})
    assert response.status_code == 302
    assert response["Location"] == f"/memories/{record_id}/"
    page = dom(reviewer_client.get(response["Location"]))
    assert any("Revoked by mira" in m for m in messages_on(page))
    assert page.one("data-memory-status").get("data-memory-status") == "rejected"

    row = promotion(record_id)
    assert (row.status, row.decided_by, row.decision_note) == (
        PromotionStatus.REJECTED,
        reviewer,
        "outdated",
    )
    event = MemoryEvent.objects.get(record_id=record_id, kind=EventKind.REVOKED)
    assert (event.actor, event.actor_user, event.detail) == (
        "mira",
        reviewer,
        {"reason": "outdated"},
    )
    assert decisions(record_id) == [
        (record_id, "approved", "rhea"),
        (record_id, "revoked", "mira"),
    ]
    assert not in_prompt(wren, record_id)
    assert drop_reason(wren, record_id) == "rejected"


def test_an_auto_promoted_memory_can_be_revoked_too(reviewer_client: Client, wren: Agent) -> None:
    record_id = remember(wren, "profile", "Mira", label="name")
    assert in_prompt(wren, record_id)
    assert reviewer_client.post(f"/memories/{record_id}/revoke/").status_code == 302
    assert not in_prompt(wren, record_id)
    assert decisions(record_id) == [(record_id, "revoked", "mira")]
    assert MemoryEvent.objects.get(record_id=record_id, kind=EventKind.REVOKED).detail == {}


@pytest.mark.parametrize("state", ["pending", "rejected", "declined"])
def test_revoking_a_memory_that_is_not_approved_changes_nothing(
    reviewer_client: Client, wren: Agent, rhea: User, state: str
) -> None:
    if state == "declined":
        record_id = remember(wren, "fact", "Visited Kraków.")
    else:
        record_id = preference(wren, "Tea, never coffee.", label="drink")
    if state == "rejected":
        decide(record_id, False, Actor.for_user(rhea))
    before = decisions(record_id)

    response = reviewer_client.post(f"/memories/{record_id}/revoke/", follow=True)
    assert response.status_code == 200
    shown = messages_on(dom(response))
    assert any("Only an approved memory can be revoked" in m for m in shown), shown
    assert promotion(record_id).status == state
    assert decisions(record_id) == before


# --- who may do what ---------------------------------------------------------------------


def test_a_member_without_the_permission_sees_the_queue_read_only(
    viewer_client: Client, wren: Agent
) -> None:
    ids = many_pending(wren, 2)
    page = queue(viewer_client)
    assert row_ids(page) == ids
    note = page.one("data-read-only")
    assert "memory.approve_promotion" in note.squashed
    assert not {"Approve", "Reject", "Approve selected", "Reject selected"} & set(buttons(page))
    posting = [
        e.get("action") for e in page.elements if e.tag == "form" and e.get("method") == "post"
    ]
    assert posting == ["/accounts/logout/"]
    assert [e for e in page.elements if e.get("name") in ("selected", "reason")] == []

    detail = dom(viewer_client.get(f"/memories/{ids[0]}/"))
    assert [e for e in detail.elements if "revoke" in (e.get("action") or "")] == []


def test_a_member_without_the_permission_gets_403_and_nothing_changes(
    viewer_client: Client, wren: Agent, reviewer: User
) -> None:
    pending = preference(wren, "Tea, never coffee.", label="drink")
    approved = preference(wren, "Short answers.", label="answers")
    decide(approved, True, Actor.for_user(reviewer))

    assert post_decision(viewer_client, pending, "approve").status_code == 403
    assert post_decision(viewer_client, pending, "reject", htmx=False).status_code == 403
    assert post_bulk(viewer_client, "approve", [pending]).status_code == 403
    assert viewer_client.post(f"/memories/{approved}/revoke/").status_code == 403
    assert promotion(pending).status == PromotionStatus.PENDING
    assert promotion(approved).status == PromotionStatus.APPROVED
    assert decisions(pending, approved) == [(approved, "approved", "mira")]


def test_the_permission_alone_is_not_enough_without_membership(
    outsider_client: Client, wren: Agent, reviewer: User, other_team: Team
) -> None:
    gizmo = create_agent(other_team, "gizmo", memory_config(name="Gizmo"))
    theirs = preference(gizmo, "Globex preference.", label="theirs")
    ours = preference(wren, "Tea, never coffee.", label="drink")
    approved = preference(wren, "Short answers.", label="answers")
    decide(approved, True, Actor.for_user(reviewer))

    # The outsider's queue is their own team's: none of acme's rows.
    assert row_ids(queue(outsider_client)) == [theirs]
    assert queue(outsider_client, "?agent=wren").all("data-promotion-id") == []
    assert outsider_client.get("/approvals/?team=acme").status_code == 404

    assert post_decision(outsider_client, ours, "approve").status_code == 404
    assert post_decision(outsider_client, ours, "reject", htmx=False).status_code == 404
    assert post_decision(outsider_client, ours, "approve", query="?team=acme").status_code == 404
    assert outsider_client.post(f"/memories/{approved}/revoke/").status_code == 404
    page = fragment(post_bulk(outsider_client, "approve", [ours]))
    assert "Nothing was changed" in page.one("role", "alert").squashed

    assert promotion(ours).status == PromotionStatus.PENDING
    assert promotion(approved).status == PromotionStatus.APPROVED
    assert decisions(ours, approved) == [(approved, "approved", "mira")]


def test_a_non_member_without_the_permission_gets_404_not_403(
    stranger_client: Client, wren: Agent
) -> None:
    ours = preference(wren, "Tea, never coffee.", label="drink")
    assert post_decision(stranger_client, ours, "approve").status_code == 404
    assert stranger_client.post(f"/memories/{ours}/revoke/").status_code == 404
    assert promotion(ours).status == PromotionStatus.PENDING


def test_a_user_of_two_teams_decides_in_the_current_one_only(wren: Agent, other_team: Team) -> None:
    duo = grant(make_user("duo", other_team, wren.team))
    client = logged_in(duo)
    gizmo = create_agent(other_team, "gizmo", memory_config(name="Gizmo"))
    theirs = preference(gizmo, "Globex preference.", label="theirs")
    ours = preference(wren, "Acme preference.", label="ours")

    assert row_ids(queue(client)) == [ours]  # acme comes first by slug
    assert post_decision(client, theirs, "approve").status_code == 404
    assert row_ids(queue(client, "?team=globex")) == [theirs]
    assert post_decision(client, ours, "approve").status_code == 404  # the switch sticks
    decided = fragment(post_decision(client, theirs, "approve")).one("data-decision")
    assert decided.get("data-decision") == "approved"
    assert promotion(ours).status == PromotionStatus.PENDING
    assert promotion(theirs).status == PromotionStatus.APPROVED


def test_an_anonymous_visitor_is_sent_to_log_in(wren: Agent, reviewer: User) -> None:
    pending = preference(wren, "Tea, never coffee.", label="drink")
    approved = preference(wren, "Short answers.", label="answers")
    decide(approved, True, Actor.for_user(reviewer))
    anonymous = Client()

    response = anonymous.get("/approvals/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/approvals/"
    for path, data in [
        (f"/approvals/{pending}/decide/", {"decision": "approve"}),
        ("/approvals/bulk/", {"decision": "approve", "selected": [pending]}),
        (f"/memories/{approved}/revoke/", {}),
    ]:
        for headers in ({}, HTMX):
            response = anonymous.post(path, data, headers=headers)
            assert response.status_code == 302, path
            assert response["Location"] == f"/accounts/login/?next={path}"
    assert promotion(pending).status == PromotionStatus.PENDING
    assert promotion(approved).status == PromotionStatus.APPROVED
    assert decisions(pending, approved) == [(approved, "approved", "mira")]


def test_an_api_token_can_never_decide(wren: Agent, reviewer: User) -> None:
    pending = preference(wren, "Tea, never coffee.", label="drink")
    approved = preference(wren, "Short answers.", label="answers")
    decide(approved, True, Actor.for_user(reviewer))
    _token, raw = ApiToken.objects.issue(wren.team)
    bearer = {"Authorization": f"Bearer {raw}"}
    client = Client()

    for path, data in [
        (f"/approvals/{pending}/decide/", {"decision": "approve"}),
        ("/approvals/bulk/", {"decision": "approve", "selected": [pending]}),
        (f"/memories/{approved}/revoke/", {}),
    ]:
        response = client.post(path, data, headers={**bearer, **HTMX})
        assert response.status_code == 302, path
        assert response["Location"].startswith("/accounts/login/")
    assert client.get("/approvals/", headers=bearer).status_code == 302

    # Nor is there any deciding route in the JSON API.
    for path in (
        f"/api/agents/wren/memories/{pending}/approve",
        f"/api/agents/wren/memories/{pending}",
        f"/api/memories/{pending}/approve",
        f"/api/approvals/{pending}",
    ):
        assert client.post(path, {}, headers=bearer).status_code in (404, 405), path
    assert promotion(pending).status == PromotionStatus.PENDING
    assert promotion(approved).status == PromotionStatus.APPROVED
    assert decisions(pending, approved) == [(approved, "approved", "mira")]


# --- CSRF ------------------------------------------------------------------------------------


def test_a_post_without_the_csrf_token_is_refused(wren: Agent, reviewer: User) -> None:
    client = logged_in(reviewer, enforce_csrf_checks=True)
    pending = preference(wren, "Tea, never coffee.", label="drink")
    approved = preference(wren, "Short answers.", label="answers")
    decide(approved, True, Actor.for_user(reviewer))
    queue(client)  # the page sets the cookie; a forged post still lacks the token

    assert post_decision(client, pending, "approve").status_code == 403
    assert post_decision(client, pending, "reject", htmx=False).status_code == 403
    assert post_bulk(client, "approve", [pending]).status_code == 403
    assert client.post(f"/memories/{approved}/revoke/").status_code == 403
    assert post_decision(client, pending, "approve", X_CSRFToken="forged" * 6).status_code == 403
    assert promotion(pending).status == PromotionStatus.PENDING
    assert promotion(approved).status == PromotionStatus.APPROVED
    assert decisions(pending, approved) == [(approved, "approved", "mira")]


def test_a_post_with_the_csrf_token_htmx_sends_works(wren: Agent, reviewer: User) -> None:
    client = logged_in(reviewer, enforce_csrf_checks=True)
    first, second = many_pending(wren, 2)
    page = queue(client)
    # htmx sends the token from <body hx-headers> on every request.
    (body,) = [e for e in page.elements if e.tag == "body"]
    token = json.loads(body.get("hx-headers") or "{}")["X-CSRFToken"]
    assert "csrftoken" in client.cookies

    response = post_decision(client, first, "approve", X_CSRFToken=token)
    assert fragment(response).one("data-promotion-id").get("data-decision") == "approved"
    assert promotion(first).status == PromotionStatus.APPROVED

    # The forms carry it too, for the no-JavaScript path.
    (field,) = {
        e.get("value")
        for e in rows(page)[second].descendants()
        if e.get("name") == "csrfmiddlewaretoken"
    }
    response = client.post(
        f"/approvals/{second}/decide/", {"decision": "reject", "csrfmiddlewaretoken": field}
    )
    assert response.status_code == 302
    assert promotion(second).status == PromotionStatus.REJECTED


# --- the pending count and query counts --------------------------------------------------------


def test_the_nav_shows_the_team_s_pending_count_on_every_page(
    reviewer_client: Client, wren: Agent, other_team: Team
) -> None:
    ids = many_pending(wren, 3)
    gizmo = create_agent(other_team, "gizmo", memory_config(name="Gizmo"))
    many_pending(gizmo, 2)
    paths = ["/", "/approvals/", "/memories/", "/agents/wren/", f"/memories/{ids[0]}/"]
    for path in paths:
        counter = dom(reviewer_client.get(path)).one("id", "pending-count")
        assert counter.squashed == "3", path
        assert counter.get("data-pending-total") == "3"
        assert "hx-swap-oob" not in counter.attrs
        assert counter.ancestor("nav") is not None
    assert pending_count(wren.team) == 3
    assert pending_count(other_team) == 2

    post_decision(reviewer_client, ids[0], "approve")
    post_bulk(reviewer_client, "reject", ids[1:])
    for path in paths:
        counter = dom(reviewer_client.get(path)).one("id", "pending-count")
        assert counter.squashed == "0", path
        assert "is-zero" in (counter.get("class") or "").split()


def test_the_queue_s_query_count_does_not_grow_with_its_rows(
    viewer_client: Client, reviewer_client: Client, wren: Agent, atlas: Agent, reviewer: User
) -> None:
    # One row with everything a row can show: tags, a label, an authored entry at its
    # address and a superseded memory.
    older = preference(wren, "Light theme.", label="theme")
    preference(wren, "Dark theme.", label="theme", tags=["ui"], supersedes=older)
    one = {
        name: queries(client)
        for name, client in (("read", viewer_client), ("decide", reviewer_client))
    }

    for i in range(20):
        first = preference(wren, f"Old value {i}.", label=f"pref-{i}", tags=["a", "b"])
        if i % 2:
            decide(first, True, Actor.for_user(reviewer))
        preference(wren, f"New value {i}.", label=f"pref-{i}", supersedes=first)
        preference(wren, f"Unlabelled {i}.")
        remember(atlas, "convention", f"Convention {i}.", label=f"conv-{i}")
    assert pending_count(wren.team) == 61
    many = {
        name: queries(client)
        for name, client in (("read", viewer_client), ("decide", reviewer_client))
    }
    assert many == one


def queries(client: Client, path: str = "/approvals/") -> int:
    assert client.get(path).status_code == 200  # warm-up: sessions, caches
    with CaptureQueriesContext(connection) as context:
        response = client.get(path)
    assert response.status_code == 200
    return len(context.captured_queries)


def test_an_htmx_filter_request_gets_the_queue_with_the_count_out_of_band(
    viewer_client: Client, wren: Agent, atlas: Agent
) -> None:
    theme = preference(wren, "Dark theme.", label="theme")
    remember(atlas, "convention", "Tabs.", label="indent")
    response = viewer_client.get("/approvals/?agent=wren", headers=HTMX)
    page = dom(response)
    assert row_ids(page) == [theme]
    # The filter form selects #queue from the answer; the counter (still 2) comes along
    # out of band, from inside #queue.
    (counter,) = page.all("hx-swap-oob")
    assert counter.get("id") == "pending-count"
    section = counter.ancestor("section")
    assert section is not None and section.get("id") == "queue"
    assert counter.squashed == "2"
