"""The pager that counts no further than a cap (``web/pages/bounded_pager.py``): one
bounded count, one read of the page's rows with one more, and links that keep working
past the counted rows."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from lens.models import Team
from web.pages import bounded_pager
from web.pages.bounded_pager import bounded_count, bounded_page

pytestmark = pytest.mark.django_db


@pytest.fixture
def teams() -> None:
    Team.objects.bulk_create(Team(slug=f"t{i:02}", name=f"T {i}") for i in range(7))


def test_the_count_stops_at_the_cap_and_says_so(teams: None) -> None:
    assert bounded_count(Team.objects.all(), 10) == (7, True)
    assert bounded_count(Team.objects.all(), 7) == (7, True)
    assert bounded_count(Team.objects.all(), 6) == (6, False)
    assert bounded_count(Team.objects.all(), 3) == (3, False)


def test_the_count_is_one_query_with_a_limit(teams: None) -> None:
    with CaptureQueriesContext(connection) as queries:
        bounded_count(Team.objects.filter(slug__startswith="t"), 3)
    (query,) = queries.captured_queries
    assert "LIMIT 4" in query["sql"]
    assert "ORDER BY" not in query["sql"]


def test_pages_past_the_cap_still_link_on_and_back(
    teams: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bounded_pager, "COUNT_CAP", 3)
    ordered = Team.objects.order_by("slug")
    first = bounded_page(ordered, None, 2)
    assert [t.slug for t in first.object_list] == ["t00", "t01"]
    assert (first.paginator.shown, first.paginator.exact) == ("3+", False)
    assert first.has_next()
    assert not first.has_previous()
    third = bounded_page(ordered, "3", 2)  # rows 5 and 6: past the 3 counted
    assert [t.slug for t in third.object_list] == ["t04", "t05"]
    assert third.has_next()
    assert third.has_previous()
    last = bounded_page(ordered, third.next_page_number(), 2)
    assert [t.slug for t in last.object_list] == ["t06"]
    assert not last.has_next()


def test_a_page_past_the_end_falls_back_to_the_last_and_a_bad_number_to_the_first(
    teams: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    ordered = Team.objects.order_by("slug")
    assert bounded_page(ordered, "99", 2).number == 4
    assert bounded_page(ordered, "x", 2).number == 1
    assert bounded_page(ordered, "-2", 2).number == 1
    monkeypatch.setattr(bounded_pager, "COUNT_CAP", 3)
    beyond = bounded_page(ordered, "99", 2)
    assert (beyond.number, beyond.paginator.exact, beyond.paginator.count) == (4, True, 7)


def test_two_queries_whatever_the_page(teams: None) -> None:
    with CaptureQueriesContext(connection) as queries:
        page = bounded_page(Team.objects.order_by("slug"), "2", 2)
        assert len(page.object_list) == 2
        assert page.has_next()
    assert len(queries.captured_queries) == 2
