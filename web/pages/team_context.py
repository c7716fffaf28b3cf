from __future__ import annotations

from typing import Any

from django.utils.functional import SimpleLazyObject

from web.pages.queue_count import queue_count
from web.pages.toolkit import AppRequest, reviews_here, teams_of


def current_team(request: AppRequest) -> dict[str, Any]:
    """The team switcher's data, for pages whose view resolved a current team."""
    team = getattr(request, "lens_team", None)
    if team is None:
        return {}
    return {
        "current_team": team,
        "user_teams": teams_of(request),
        "reviews_here": reviews_here(request),
        # Lazy and evaluated once: only pages that show it pay for the count. Memories
        # and proposed changes both wait in the queue, so the badge counts both.
        "pending_count": SimpleLazyObject(lambda: queue_count(team)),
    }
