"""Which team a dashboard request works in, and team-scoped lookups that 404 strangers."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.http import Http404, HttpRequest

from lens.models import Agent, Team

SESSION_KEY = "lens_team"


def teams_of(request: HttpRequest) -> list[Team]:
    """The user's teams by slug, loaded once per request."""
    cached: list[Team] | None = getattr(request, "_lens_teams", None)
    if cached is None:
        user: AbstractBaseUser = request.user  # type: ignore[assignment]
        cached = list(Team.objects.filter(memberships__user=user).order_by("slug"))
        request._lens_teams = cached  # type: ignore[attr-defined]
    return cached


def current_team(request: HttpRequest) -> Team | None:
    """``?team=`` when given (404 unless a member), else the last one used, else the first.

    Returns None only for a user who belongs to no team.
    """
    cached: Team | None = getattr(request, "lens_team", None)
    if cached is not None:
        return cached
    teams = {team.slug: team for team in teams_of(request)}
    asked = request.GET.get("team")
    if asked is not None:
        if asked not in teams:
            raise Http404("No such team")
        team: Team | None = teams[asked]
    else:
        team = teams.get(request.session.get(SESSION_KEY, "")) or next(iter(teams.values()), None)
    if team is not None and request.session.get(SESSION_KEY) != team.slug:
        request.session[SESSION_KEY] = team.slug
    request.lens_team = team  # type: ignore[attr-defined]
    return team


def require_team(request: HttpRequest) -> Team:
    """The current team; 404 for a user who belongs to none."""
    team = current_team(request)
    if team is None:
        raise Http404("No team")
    return team


def get_agent_for_user(request: HttpRequest, slug: str) -> Agent:
    """The current team's agent ``slug``; 404 for anyone who cannot see it."""
    from lens.agents import with_config

    team = current_team(request)
    agent = with_config(Agent.objects.filter(team=team, slug=slug)).first() if team else None
    if agent is None:
        raise Http404("No such agent")
    agent.team = team  # type: ignore[assignment]  # already loaded; saves a query
    return agent
