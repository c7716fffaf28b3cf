"""The approval queue at ``/approvals/`` (SPEC §5.4, §9): which rows it lists and how, its
filters and pages, the pending count in the nav, and query counts that do not grow.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from lens.actors import Actor
from lens.models import Agent, Team
from memory.decisions import decide, pending_count
from memory.models import MemoryRecord
from tests.factories import (
    HTMX,
    create_agent,
    in_prompt,
    many_pending,
    memory_config,
    post_bulk,
    post_decision,
    preference,
    promotion_of,
    remember,
)
from tests.pages import (
    approval_queue,
    buttons,
    dom,
    inside,
    queue_row_ids,
    queue_rows,
    with_class,
)

pytestmark = pytest.mark.django_db


# --- the queue ---------------------------------------------------------------------


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

    assert queue_row_ids(approval_queue(viewer_client)) == [first, second, third, fourth]


def test_the_queue_is_paginated_by_fifty(viewer_client: Client, wren: Agent) -> None:
    ids = many_pending(wren, 60)

    page_one = approval_queue(viewer_client)
    assert queue_row_ids(page_one) == ids[:50]
    pager = page_one.one("aria-label", "Pages")
    assert "page 1 of 2" in pager.squashed.lower()
    assert [a.get("href") for a in inside(pager, "a")] == ["?page=2"]

    page_two = approval_queue(viewer_client, "?page=2")
    assert queue_row_ids(page_two) == ids[50:]
    assert [a.get("href") for a in inside(page_two.one("aria-label", "Pages"), "a")] == ["?page=1"]


def test_the_queue_filters_by_agent_and_section(
    viewer_client: Client, wren: Agent, atlas: Agent
) -> None:
    theme = preference(wren, "Prefers a dark theme.", label="theme")
    indent = remember(atlas, "convention", "Tabs, never spaces.", label="indent")
    database = remember(atlas, "decision", "We use PostgreSQL.", label="database")
    naming = remember(atlas, "convention", "snake_case everywhere.", label="naming")

    assert queue_row_ids(approval_queue(viewer_client, "?agent=wren")) == [theme]
    assert queue_row_ids(approval_queue(viewer_client, "?agent=atlas")) == [
        indent,
        database,
        naming,
    ]
    assert queue_row_ids(approval_queue(viewer_client, "?section=conventions")) == [indent, naming]
    assert queue_row_ids(approval_queue(viewer_client, "?agent=atlas&section=project_context")) == [
        database
    ]
    empty = approval_queue(viewer_client, "?agent=wren&section=conventions")
    assert queue_row_ids(empty) == []
    assert "with these filters" in empty.one("class", "empty card").squashed

    page = approval_queue(viewer_client, "?agent=atlas")
    agent_select, section_select, show_select = (e for e in page.elements if e.tag == "select")
    assert [o.get("value") for o in inside(show_select, "option")] == ["", "earning"]
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
    page = approval_queue(viewer_client, "?agent=wren")
    assert [a.get("href") for a in inside(page.one("aria-label", "Pages"), "a")] == [
        "?agent=wren&page=2"
    ]
    assert queue_row_ids(approval_queue(viewer_client, "?agent=wren&page=2")) == ids[50:]


def test_a_row_shows_what_the_memory_is_and_where_it_would_land(
    viewer_client: Client, wren: Agent
) -> None:
    labelled = preference(
        wren, "Prefers <short> answers & no emoji.", label="Answer Style", tags=["tone", "chat"]
    )
    unlabelled = preference(wren, "Likes jazz in the evening.")
    three_days_ago = timezone.now() - timedelta(days=3, minutes=5)
    MemoryRecord.objects.filter(pk=labelled).update(created_at=three_days_ago)

    found = queue_rows(approval_queue(viewer_client))
    row = found[labelled]
    assert inside(row, "span", **{"class": "kind"})[0].squashed == "preference"
    assert inside(row, "span", **{"class": "label"})[0].squashed == "Answer Style"
    assert [t.squashed for t in with_class(row, "tag")] == ["tone", "chat"]
    content = with_class(row, "queue-content")[0]
    assert content.squashed == "Prefers <short> answers & no emoji."
    assert [a.get("href") for a in inside(content, "a")] == [f"/memories/{labelled}/"]
    ago, absolute = inside(row, "time")
    assert datetime.fromisoformat(ago.get("datetime") or "") == three_days_ago
    assert ago.squashed == "3 days ago"
    # The absolute moment beside the relative one, in UTC.
    assert absolute.get("datetime") == ago.get("datetime")
    assert absolute.squashed == three_days_ago.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    meta = with_class(row, "queue-meta")[0]
    assert "Wren" in meta.squashed
    # Who saved it, named as a memory's events name actors.
    assert [e.squashed for e in meta.descendants() if "data-saver" in e.attrs] == ["system"]
    where = with_class(row, "queue-where")[0]
    assert where.squashed == (
        "Would land in User Preferences guarded at answer-style "
        f"{chr(0xB7)} key from label {chr(0xB7)} spec user-background v1"
    )
    assert inside(where, "span", data_tier="guarded")
    assert with_class(row, "queue-replaces") == []

    key = promotion_of(unlabelled).key or ""
    assert key.startswith("c-")
    where = with_class(found[unlabelled], "queue-where")[0]
    assert f"at {key} {chr(0xB7)} key from content {chr(0xB7)}" in where.squashed
    assert inside(found[unlabelled], "span", **{"class": "label"}) == []


def test_a_row_at_an_authored_address_shows_the_diff_and_warns_that_authored_wins(
    viewer_client: Client, wren: Agent
) -> None:
    record_id = preference(wren, "Dark theme, large font.", label="theme")
    (replaces,) = with_class(queue_rows(approval_queue(viewer_client))[record_id], "queue-replaces")
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

    (replaces,) = with_class(queue_rows(approval_queue(viewer_client))[newer], "queue-replaces")
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
    page = approval_queue(viewer_client)
    assert queue_row_ids(page) == [newer]
    assert with_class(queue_rows(page)[newer], "queue-replaces") == []


def test_a_reviewer_gets_approve_and_reject_buttons_a_reason_and_bulk_actions(
    reviewer_client: Client, wren: Agent
) -> None:
    ids = many_pending(wren, 3)
    page = approval_queue(reviewer_client)
    assert page.all("data-read-only") == []
    for record_id, row in queue_rows(page).items():
        assert buttons(row) == ["Approve", "Reject"]
        (reject,) = (e for e in inside(row, "button") if e.squashed == "Reject")
        form = reject.ancestor("form")
        assert form is not None
        assert form.get("method") == "post"
        assert form.get("action") == form.get("hx-post") == f"/approvals/{record_id}/decide/"
        assert form.get("hx-target") == "closest li"
        # The reason field is inside the row, in the form the Reject button sends.
        assert [e.get("name") for e in inside(form, "input", type="text")] == ["reason"]
        (checkbox,) = inside(row, "input", type="checkbox")
        assert checkbox.get("name") == "selected"
        assert checkbox.get("form") == "bulk"
        assert checkbox.get("value") == record_id
        assert "checked" not in checkbox.attrs

    bulk = page.one("id", "bulk")
    assert bulk.get("action") == "/approvals/bulk/"
    assert buttons(bulk) == ["Approve selected", "Reject selected"]
    assert [e.get("name") for e in inside(bulk, "input", type="text")] == ["reason"]

    # Without JavaScript, "select all" is a link that checks every box on the page.
    checked = approval_queue(reviewer_client, "?select=all")
    assert [
        e.get("value")
        for e in checked.elements
        if e.get("name") == "selected" and "checked" in e.attrs
    ] == ids


# --- the pending count and query counts --------------------------------------------


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
    viewer_client: Client,
    reviewer_client: Client,
    wren: Agent,
    atlas: Agent,
    reviewer: User,
    django_assert_max_num_queries: Any,
) -> None:
    readers = {"read": viewer_client, "decide": reviewer_client}
    # One row with everything a row can show: tags, a label, an authored entry at its
    # address and a superseded memory.
    older = preference(wren, "Light theme.", label="theme")
    preference(wren, "Dark theme.", label="theme", tags=["ui"], supersedes=older)
    one = {}
    for name, client in readers.items():
        assert client.get("/approvals/").status_code == 200  # warm-up: sessions, caches
        with django_assert_max_num_queries(18) as queries:
            assert client.get("/approvals/").status_code == 200
        one[name] = len(queries)

    for i in range(20):
        first = preference(wren, f"Old value {i}.", label=f"pref-{i}", tags=["a", "b"])
        if i % 2:
            decide(first, True, Actor.for_user(reviewer))
        preference(wren, f"New value {i}.", label=f"pref-{i}", supersedes=first)
        preference(wren, f"Unlabelled {i}.")
        remember(atlas, "convention", f"Convention {i}.", label=f"conv-{i}")
    assert pending_count(wren.team) == 61
    for name, client in readers.items():
        assert client.get("/approvals/").status_code == 200  # warm-up: sessions, caches
        with django_assert_max_num_queries(one[name], info=f"{name}: a queue of 61 rows"):
            assert client.get("/approvals/").status_code == 200


def test_an_htmx_filter_request_gets_the_queue_with_the_count_out_of_band(
    viewer_client: Client, wren: Agent, atlas: Agent
) -> None:
    theme = preference(wren, "Dark theme.", label="theme")
    remember(atlas, "convention", "Tabs.", label="indent")
    response = viewer_client.get("/approvals/?agent=wren", headers=HTMX)
    page = dom(response)
    assert queue_row_ids(page) == [theme]
    # The filter form selects #queue from the answer; the counter (still 2) comes along
    # out of band, from inside #queue.
    (counter,) = page.all("hx-swap-oob")
    assert counter.get("id") == "pending-count"
    section = counter.ancestor("section")
    assert section is not None
    assert section.get("id") == "queue"
    assert counter.squashed == "2"
