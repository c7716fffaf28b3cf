"""What every dashboard view shares: the typed request, the current team, lookups that
404 strangers, and list pages that filter as you type.

This is the outer layer: it may import every package (tests/test_layers.py).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar
from urllib.parse import urlsplit

from django.contrib import messages
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, Permission, PermissionsMixin
from django.db.models import BooleanField, Exists, ExpressionWrapper, OuterRef, Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.cache import patch_vary_headers
from django_htmx.middleware import HtmxDetails

from kvstore import store
from kvstore.core.keys import key_problem
from kvstore.models import Key
from lens.agents import AgentNotFound, get_agent
from lens.models import Agent, Membership, Role, Team
from memory.composed import stamped_agent
from memory.core.records import is_record_id
from memory.models import MemoryRecord

SESSION_KEY = "lens_team"
# The hidden field every page form carries: the slug of the team it was rendered for.
TEAM_FIELD = "team"
# The global permission to decide promotions: a reviewer in every team of its holder.
REVIEW_PERMISSION = "memory.approve_promotion"
# Sec-Fetch-Site values of a request the user made from this site or by hand.
_OWN_SITE = frozenset({"same-origin", "none"})
# Rows per page on every list page (the API's default limit is the same).
PAGE_SIZE = 50

T = TypeVar("T")


class AppRequest(HttpRequest):
    """A dashboard request as the middleware leaves it; views annotate with this.

    ``lens_team`` and ``lens_teams`` are set by ``current_team``/``teams_of``; ``user``
    keeps HttpRequest's type (the django-stubs plugin reads it from AUTH_USER_MODEL).
    """

    htmx: HtmxDetails
    lens_team: Team | None
    lens_teams: list[Team]


def teams_of(request: AppRequest) -> list[Team]:
    """The user's teams by slug, loaded once per request, each with ``reviewing``: whether
    the user reviews in it (what ``can_review`` answers, superusers aside), read in the
    same query so the navigation can show reviewers' links on every page for nothing."""
    if not hasattr(request, "lens_teams"):
        request.lens_teams = list(
            Team.objects.filter(memberships__user=request.user.pk)
            .annotate(reviewing=_reviewing(request.user.pk))
            .order_by("slug")
        )
    return request.lens_teams


def _reviewing(user_pk: Any) -> ExpressionWrapper[Q]:
    app_label, codename = REVIEW_PERMISSION.split(".")
    role = Membership.objects.filter(team=OuterRef("pk"), user=user_pk, role=Role.REVIEWER)
    granted = Permission.objects.filter(
        Q(user=user_pk) | Q(group__user=user_pk),
        content_type__app_label=app_label,
        codename=codename,
    )
    return ExpressionWrapper(Q(Exists(role)) | Q(Exists(granted)), output_field=BooleanField())


def reviews_here(request: AppRequest) -> bool:
    """Whether the user reviews in the current team: for what the page shows only (the
    navigation's reviewer links); a view that acts checks ``can_review``."""
    team = getattr(request, "lens_team", None)
    if team is None or not request.user.is_authenticated:
        return False
    return bool(getattr(request.user, "is_superuser", False) or getattr(team, "reviewing", False))


def current_team(request: AppRequest) -> Team | None:
    """``?team=`` when given (404 unless a member), else the last one used, else the first.

    Returns None only for a user who belongs to no team.
    """
    if getattr(request, "lens_team", None) is not None:
        return request.lens_team
    teams = {team.slug: team for team in teams_of(request)}
    asked = request.GET.get("team")
    if asked is not None:
        if asked not in teams:
            raise Http404("No such team")
        team: Team | None = teams[asked]
    else:
        team = teams.get(request.session.get(SESSION_KEY, "")) or next(iter(teams.values()), None)
    # A link from another site shows the team it names but does not become the one
    # remembered: otherwise any page could pick which team the user's next form writes to.
    remember = asked is None or _same_origin(request)
    if remember and team is not None and request.session.get(SESSION_KEY) != team.slug:
        request.session[SESSION_KEY] = team.slug
    request.lens_team = team
    return team


def _same_origin(request: HttpRequest) -> bool:
    """Whether the request came from one of our own pages (or was typed by the user).

    Browsers send ``Sec-Fetch-Site``; without it, a ``Referer`` on this host will do.
    A request with neither is treated as foreign.
    """
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None:
        return site in _OWN_SITE
    referer = request.headers.get("Referer", "")
    return bool(referer) and urlsplit(referer).netloc == request.get_host()


class WrongTeam(Exception):
    """A posted form names no team of the user: nothing may be written."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def use_form_team(request: AppRequest) -> Team:
    """The team a posted form was rendered for (its hidden ``team`` field), which becomes
    the request's current team: every lookup after this one happens in it.

    A form acts on what its page showed, whatever team another tab has switched the
    session to since. Raises ``WrongTeam`` when the field is missing or names a team
    the user does not belong to.
    """
    asked = request.POST.get(TEAM_FIELD, "")
    teams = {team.slug: team for team in teams_of(request)}
    if asked in teams:
        request.lens_team = teams[asked]
        return teams[asked]
    working = _remembered_team(request, teams)
    now = f"; you are now working in {working.slug}" if working is not None else ""
    if not asked:
        raise WrongTeam(
            f"This form does not say which team it was opened for{now}. "
            "Reload the page and try again. Nothing was changed."
        )
    raise WrongTeam(
        f"This form was opened for team {_printable(asked)}, which you do not belong to"
        f"{now}. Reload the page. Nothing was changed."
    )


def _remembered_team(request: AppRequest, teams: dict[str, Team]) -> Team | None:
    return teams.get(request.session.get(SESSION_KEY, "")) or next(iter(teams.values()), None)


def _printable(text: str) -> str:
    return "".join(c if c.isprintable() else "\ufffd" for c in text[:64])


def can_review(user: AbstractBaseUser | AnonymousUser, team: Team) -> bool:
    """Whether ``user`` may decide ``team``'s promotions: a reviewer in that team, or a
    holder of the global permission (a reviewer in every team they belong to).

    Membership itself is checked by the lookups that found the team's objects.
    """
    if not user.is_authenticated or not isinstance(user, PermissionsMixin):
        return False
    if user.has_perm(REVIEW_PERMISSION):
        return True
    return Membership.objects.filter(team=team, user=user.pk, role=Role.REVIEWER).exists()


def no_team_page(request: AppRequest, title: str, nav: str) -> HttpResponse:
    """What a list page shows a user who belongs to no team: 200 and how to join one
    (SPEC §9: never an error)."""
    return render(request, "no_team.html", {"title": title, "nav": nav})


def require_team(request: AppRequest) -> Team:
    """The current team; 404 for a user who belongs to none."""
    team = current_team(request)
    if team is None:
        raise Http404("No team")
    return team


def find_linked(
    request: AppRequest,
    what: str,
    find: Callable[[Team], T],
    holders: QuerySet[Any],
    team_field: str,
) -> T:
    """``find(team)`` in the current team, or else in the user's team that holds the
    object a link names, which becomes the current team (SPEC §9: a link to an object
    works for every member of its team whatever team they last used).

    ``find`` raises Http404 when a team has no such object; ``holders`` are the rows
    that name it (in any team) and ``team_field`` their path to the team ("team",
    "agent__team"). The current team wins when several hold it (agent slugs and keys
    are unique only within a team); among the others, the first by slug. A non-member
    never finds it: only the user's teams are asked.
    """
    team = require_team(request)
    try:
        return find(team)
    except Http404:
        other = _other_team_holding(request, team, holders, team_field)
        if other is None:
            raise
    found = find(other)
    _switch_team(request, other, what)
    return found


def _other_team_holding(
    request: AppRequest, current: Team, holders: QuerySet[Any], team_field: str
) -> Team | None:
    """The first of the user's other teams (by slug) that holds the object, or None.

    Only a plain visit looks elsewhere: ``?team=`` names the team to look in, and a
    posted form acts in the team it was rendered for (``use_form_team``).
    """
    if request.method not in ("GET", "HEAD") or TEAM_FIELD in request.GET:
        return None
    others = [team for team in teams_of(request) if team.pk != current.pk]
    if not others:
        return None
    # One query, at most one row per team of the user.
    held = set(
        holders.filter(**{f"{team_field}__in": [team.pk for team in others]})
        .order_by()
        .values_list(team_field, flat=True)
    )
    return next((team for team in others if team.pk in held), None)


def _switch_team(request: AppRequest, team: Team, what: str) -> None:
    """Make ``team`` the current and remembered team, and say so on the page.

    Remembered even when the link came from another site (unlike ``?team=``): such a
    link is most often pasted into a ticket or a chat, and the page's own links (to the
    agent, its deliveries, the queue) name no team, so they must land in the team the
    page shows. The message says which team that now is.
    """
    request.lens_team = team
    request.session[SESSION_KEY] = team.slug
    # An htmx swap shows no messages: one added now would appear on a later page.
    if not request.htmx or request.htmx.history_restore_request:
        messages.info(request, f"Switched to team {team.name} to show this {what}.")


def get_agent_for_user(request: AppRequest, slug: str, *, stamped: bool = False) -> Agent:
    """The agent ``slug`` of the current team (or, for a link, of the user's team that
    has it: ``find_linked``), ready to compose; 404 for anyone else.

    ``stamped``: read with its composition stamp and without its declarations, for a
    page that reads the composition of now (``memory.composed.current``): a kept one
    needs nothing more, and the agent's thousands of entries are not read again."""

    def find(team: Team) -> Agent:
        try:
            return stamped_agent(team, slug) if stamped else get_agent(team, slug)
        except AgentNotFound:
            raise Http404("No such agent") from None

    return find_linked(request, "agent", find, Agent.objects.filter(slug=slug), "team")


def get_record_for_user(request: AppRequest, record_id: str) -> MemoryRecord:
    """The memory ``record_id`` of the current team (or, for a link, of the user's team
    that has it) with its agent and promotion; 404 otherwise."""
    valid = is_record_id(record_id)  # anything else is no id: no query at all

    def find(team: Team) -> MemoryRecord:
        record = (
            MemoryRecord.objects.select_related(
                "agent", "promotion", "promotion__decided_by", "supersedes"
            )
            .filter(pk=record_id, agent__team=team)
            .first()
            if valid
            else None
        )
        if record is None:
            raise Http404("No such memory")
        return record

    holders = MemoryRecord.objects.filter(pk=record_id) if valid else MemoryRecord.objects.none()
    return find_linked(request, "memory", find, holders, "agent__team")


def get_key_for_user(request: AppRequest, key: str) -> Key:
    """The key/value key ``key`` of the current team (or, for a link, of the user's team
    that has it); 404 otherwise. Views read the key's team with ``require_team`` after
    this call, never before."""
    if key_problem(key):
        raise Http404("Not a valid key")

    def find(team: Team) -> Key:
        try:
            return store.get_key(team, key)
        except store.KeyNotFound:
            raise Http404("No such key") from None

    return find_linked(request, "key", find, Key.objects.filter(key=key), "team")


def render_list(
    request: AppRequest, template: str, context: dict[str, Any], results: str = "results"
) -> HttpResponse:
    """A list page, or only its ``results`` partial for an htmx filter request.

    Every list page filters as you type the same way: its filter form carries
    ``{% filter_as_you_type "#target" %}`` (web/templatetags/lens_pages.py), which asks
    the page's own URL again and swaps the answer (this partial) into the target.
    """
    # htmx restoring a pushed URL it has no snapshot of swaps the answer into <body>,
    # so that request gets the whole page.
    if request.htmx and not request.htmx.history_restore_request:
        response = render(request, f"{template}#{results}", context)
    else:
        response = render(request, template, context)
    # The same URL answers a fragment or a page; without Vary the browser's back button
    # can bring back a cached bare fragment as the whole page.
    patch_vary_headers(response, ("HX-Request",))
    return response


def utc_minute(moment: datetime) -> str:
    """ "2026-12-09 22:41 UTC": a moment as pages write it in prose."""
    return f"{moment.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
