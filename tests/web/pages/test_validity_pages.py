"""A memory's validity window on its page (SPEC §19.2): a reviewer sets, moves or clears
it with a small form that works without JavaScript; anyone else changes nothing. The
lens marks memory fragments whose window closes within seven days."""

from __future__ import annotations

from datetime import UTC, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from lens.models import Agent, AuditEvent, Team
from memory.models import MemoryRecord
from tests.factories import (
    Unchanged,
    create_agent,
    fill_memories,
    logged_in,
    many_sections,
    memory_config,
    remember,
)
from tests.pages import dom

pytestmark = pytest.mark.django_db


def form_value(days: float) -> str:
    """What a browser's datetime-local field posts: minutes, no zone (read as UTC)."""
    return (timezone.now() + timedelta(days=days)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M")


def post(client: Client, record_id: str, **fields: str) -> Any:
    return client.post(f"/memories/{record_id}/validity/", {"team": "acme", **fields})


def window(record_id: str) -> Any:
    return MemoryRecord.objects.get(pk=record_id).valid_until


def test_a_reviewer_sets_moves_and_clears_the_window(reviewer_client: Client, wren: Agent) -> None:
    record = remember(wren, "profile", "In Lisbon this week.")
    page = dom(reviewer_client.get(f"/memories/{record}/"))
    (form,) = [e for e in page.elements if e.tag == "form" and "data-validity-form" in e.attrs]
    assert form.get("method") == "post"
    assert form.get("action") == f"/memories/{record}/validity/"
    response = post(reviewer_client, record, valid_until=form_value(3))
    assert response.status_code == 302
    assert response["Location"].startswith(f"/memories/{record}/")
    first = window(record)
    assert first is not None
    assert first.strftime("%Y-%m-%dT%H:%M") == form_value(3)
    assert post(reviewer_client, record, valid_until=form_value(5)).status_code == 302
    assert window(record) > first
    assert post(reviewer_client, record, clear="1", valid_until=form_value(5)).status_code == 302
    assert window(record) is None
    actions = AuditEvent.objects.filter(action="memory.validity_changed", object_id=record)
    assert actions.count() == 3
    shown = dom(reviewer_client.get(f"/memories/{record}/"))
    (fact,) = [e for e in shown.elements if "data-valid-until" in e.attrs]
    assert "no end set" in fact.squashed
    # The history tells each change in words, never as the stored JSON.
    told = [e.squashed for e in shown.elements if "data-validity" in e.attrs]
    first_words = f"{first.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
    assert told[0].startswith(f"Valid until set to {first_words} on ")
    assert told[1].startswith(f"Valid until moved from {first_words} to ")
    assert told[2].startswith("Valid until cleared (was ")
    assert all(line.endswith("by mira") for line in told)
    assert "from: None" not in reviewer_client.get(f"/memories/{record}/").content.decode()


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("", "Choose a date and time"),
        ("next tuesday", "is no date and time"),
        ("2001-01-01T00:00", "must be after"),
    ],
)
def test_a_bad_date_is_a_clear_error_and_nothing_changes(
    reviewer_client: Client, wren: Agent, value: str, said: str
) -> None:
    record = remember(wren, "profile", "In Lisbon this week.")
    unchanged = Unchanged(ignore=("sessions.Session",))
    page = dom(post(reviewer_client, record, valid_until=value), status=400)
    (error,) = [e for e in page.elements if "data-validity-error" in e.attrs]
    assert said in error.squashed
    assert error.get("role") == "alert"
    unchanged.check()


def test_a_member_without_the_permission_is_refused_and_nothing_changes(
    viewer_client: Client, wren: Agent
) -> None:
    record = remember(wren, "profile", "In Lisbon this week.")
    page = dom(viewer_client.get(f"/memories/{record}/"))
    assert not [e for e in page.elements if "data-validity-form" in e.attrs]
    unchanged = Unchanged(ignore=("sessions.Session",))
    assert post(viewer_client, record, valid_until=form_value(3)).status_code == 403
    unchanged.check()


def test_a_stranger_gets_404_and_anonymous_goes_to_log_in(
    stranger: User, wren: Agent, other_team: Team
) -> None:
    record = remember(wren, "profile", "In Lisbon this week.")
    stranger_client = logged_in(stranger)
    unchanged = Unchanged(ignore=("sessions.Session",))
    response = stranger_client.post(
        f"/memories/{record}/validity/", {"team": "globex", "valid_until": form_value(3)}
    )
    assert response.status_code == 404
    anonymous = Client()
    response = post(anonymous, record, valid_until=form_value(3))
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    unchanged.check()


def test_a_post_without_the_csrf_token_is_refused(reviewer: User, wren: Agent) -> None:
    record = remember(wren, "profile", "In Lisbon this week.")
    client = logged_in(reviewer, enforce_csrf_checks=True)
    assert post(client, record, valid_until=form_value(3)).status_code == 403
    assert window(record) is None


# --- the lens -------------------------------------------------------------------------


def test_the_lens_marks_a_memory_fragment_that_expires_within_seven_days(
    member_client: Client, wren: Agent
) -> None:
    soon = remember(wren, "profile", "In Lisbon this week.", label="city")
    later = remember(wren, "profile", "Learning Portuguese.", label="hobby")
    MemoryRecord.objects.filter(pk=soon).update(
        valid_until=timezone.now() + timedelta(days=3, hours=2)
    )
    MemoryRecord.objects.filter(pk=later).update(valid_until=timezone.now() + timedelta(days=30))
    page = dom(member_client.get("/agents/wren/"))
    fragments = {
        e.get("data-memory-ids"): e for e in page.elements if e.get("data-source") == "memory"
    }
    assert fragments[soon].get("data-expires") == "expires in 3 days"
    assert "expires in 3 days" in (fragments[soon].get("data-tip") or "")
    assert fragments[later].get("data-expires") is None
    # The fragment's text stays exactly the prompt's line.
    assert "expires" not in fragments[soon].text


def test_the_lens_query_count_stays_flat_with_expiring_memories(
    member_client: Client, team: Team, member: User, django_assert_max_num_queries: Any
) -> None:
    small = create_agent(team, "small", memory_config())
    fill_memories(small, member, 5)
    big = create_agent(team, "big", many_sections(38, 50))
    fill_memories(big, member, 60)
    MemoryRecord.objects.update(valid_until=timezone.now() + timedelta(days=2))
    member_client.get("/agents/small/")
    member_client.get("/agents/big/")
    with django_assert_max_num_queries(20) as captured:
        assert member_client.get("/agents/small/").status_code == 200
    with django_assert_max_num_queries(len(captured)):
        page = member_client.get("/agents/big/")
    assert page.status_code == 200
    assert b'data-expires="expires in 1 day"' in page.content


def test_an_expired_memorys_page_says_when_its_window_closed(
    member_client: Client, wren: Agent
) -> None:
    record = remember(wren, "profile", "In Lisbon this week.")
    MemoryRecord.objects.filter(pk=record).update(valid_until=timezone.now())
    page = dom(member_client.get(f"/memories/{record}/"))
    (status,) = [e for e in page.elements if "data-memory-status" in e.attrs]
    assert status.get("data-memory-status") == "expired"
    assert "It was valid until" in status.squashed
    assert "which has passed" in status.squashed


def test_an_overlong_value_is_refused_in_words(reviewer_client: Client, wren: Agent) -> None:
    record = remember(wren, "profile", "In Lisbon this week.")
    page = dom(post(reviewer_client, record, valid_until="2030-01-01T00:00" + "0" * 80), status=400)
    (error,) = [e for e in page.elements if "data-validity-error" in e.attrs]
    assert "at most 64 characters" in error.squashed
    assert "<" not in error.text
    assert window(record) is None
