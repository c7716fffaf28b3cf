"""The navigation's Approvals badge (``web/pages/queue_count.py``): this team's pending
memories and proposals, in one query that reads this team's agents' rows only."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from lens.models import Agent, Team
from tests.factories import create_agent, many_pending, memory_config
from web.pages.queue_count import queue_count

pytestmark = pytest.mark.django_db


def test_the_badge_counts_this_teams_pending_memories_only(
    wren: Agent, team: Team, other_team: Team
) -> None:
    many_pending(wren, 3)
    many_pending(create_agent(other_team, "kite", memory_config()), 2)
    assert queue_count(team) == 3
    assert queue_count(other_team) == 2


def test_the_badge_is_one_query_bounded_by_this_teams_agents(
    wren: Agent, team: Team, other_team: Team
) -> None:
    many_pending(wren, 1)
    with CaptureQueriesContext(connection) as queries:
        assert queue_count(team) == 1
    (query,) = queries.captured_queries
    sql = query["sql"]
    # Each count is a range of the (agent, status) index over this team's agents; no
    # grouping of every team's pending rows, nothing correlated with the outer row.
    assert sql.count(f'"team_id" = {team.pk}') == 2
    assert "GROUP BY" not in sql
    assert f"= {other_team.pk}" not in sql
