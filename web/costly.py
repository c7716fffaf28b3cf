"""Costly calls take turns per team: ``@costly`` on a view (API or page) lets at most
``TEAM_COSTLY_SHARE`` of one team's costly calls run at once in a server process.

Why. A costly call (a stability measure over 200 deliveries, a diff, an export, a
search) holds one of the process's few request threads for up to a second or more. One
token looping on ``/stability?last=200`` from 8 clients held them all, and another
team's ``GET /api/agents`` went from 9 ms to 417 ms (p50). With a share, the rest of the
threads stay free for everyone else.

Past its share, a call waits up to ``TEAM_COSTLY_WAIT_MS`` for a turn, then is refused:
429 with ``Retry-After``, the API's envelope with code ``team_busy``, or the product's
429 page. A refused call ran nothing and changed nothing. Under ``make serve`` it waits
on the server's event loop, holding no request thread (``loop_turn``): its thread
answers at once with the refusal marked for the loop (``TURN_HEADER``), and the loop
sends the request again once the turn is its own. Under another server it waits on its
thread, and only while that leaves a request thread free of costly calls (with two
threads, a waiting call would hold the last one), else it is refused at once.

Opting in is one line: ``@costly`` under ``@router.get(...)``, or under
``@login_required`` on a page.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar, cast

from django.conf import settings
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render

from lens.models import Team
from lens.serving.buffered import TURN_HEADER, TURN_HELD_KEY, TURNS_KEY
from lens.serving.envelope import ApiError
from lens.serving.runtime import request_threads
from web.pages.toolkit import SESSION_KEY, AppRequest, teams_of
from web.team_shares import TeamBusy, TeamShares, share_of

CODE = "team_busy"

View = TypeVar("View", bound=Callable[..., Any])


@functools.cache
def costly_shares() -> TeamShares:
    """This process's shares, made once: ``TEAM_COSTLY_SHARE`` per team (default half
    the request threads, rounded up), and room for waiting calls while one request
    thread is left free of costly calls."""
    threads = request_threads()
    return TeamShares(share_of(threads, settings.TEAM_COSTLY_SHARE), room=threads - 1)


@contextlib.asynccontextmanager
async def loop_turn(team: str) -> AsyncIterator[bool]:
    """For the server's event loop (lens/serving/buffered.py): ``team``'s turn, waited for
    up to ``TEAM_COSTLY_WAIT_MS`` holding no thread, and held for the block; False when
    none came in time."""
    team_id = int(team)
    shares = costly_shares()
    try:
        async with asyncio.timeout(wait_seconds()):
            await shares.acquire_async(team_id)
    except TimeoutError:
        got = False
    else:
        got = True
    try:
        yield got
    finally:
        if got:
            shares.release(team_id)


def wait_seconds() -> float:
    """``TEAM_COSTLY_WAIT_MS``: long enough for a turn to change hands when calls end in
    quick succession, short enough that a refused client hears so before it gives up."""
    return int(settings.TEAM_COSTLY_WAIT_MS) / 1000


def costly(view: View) -> View:
    """``view``, run only within its team's share (an API token's team, or a page's
    current team); refused with 429 past it. A streamed answer (an export) keeps its
    turn until the stream is closed."""
    return _shared(view, None)


def costly_when(test: Callable[[HttpRequest], bool]) -> Callable[[View], View]:
    """``costly``, for the requests ``test`` picks (a list that only searches with
    ``?q=``); the others run as they come."""
    return functools.partial(_shared, test=test)


def searching(request: HttpRequest) -> bool:
    """A list request that searches: ``?q=`` with something in it."""
    return bool(request.GET.get("q", "").strip())


def _shared(view: View, test: Callable[[HttpRequest], bool] | None) -> View:
    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        team = _team_of(request) if test is None or test(request) else None
        if team is None:  # not costly; or a page for a user in no team (nothing to do)
            return view(request, *args, **kwargs)
        if request.META.get(TURN_HELD_KEY) == str(team.pk):
            # The server's event loop waited for this turn and holds it for the call (a
            # client cannot set this key: its headers arrive as HTTP_* keys).
            return view(request, *args, **kwargs)
        loop_waits = bool(request.META.get(TURNS_KEY))
        shares = costly_shares()
        try:
            # Where the server's loop waits for turns, a thread never does.
            shares.acquire(team.pk, 0 if loop_waits else wait_seconds())
        except TeamBusy as busy:
            refused = _refused(request, busy)
            if loop_waits:
                refused[TURN_HEADER] = str(team.pk)
            return refused
        release = functools.partial(shares.release, team.pk)
        try:
            answer = view(request, *args, **kwargs)
        except BaseException:
            release()
            raise
        if isinstance(answer, StreamingHttpResponse) and not answer.is_async:
            chunks = cast(Iterator[bytes], answer.streaming_content)
            answer.streaming_content = _Releasing(chunks, release)
        else:
            release()
        return answer

    # django-ninja reads a view's parameters from its signature and resolves string
    # annotations in the function's own module: resolve them here, in the view's.
    wrapper.__signature__ = inspect.signature(view, eval_str=True)  # type: ignore[attr-defined]  # inspect reads it; functions do not declare it
    return cast(View, wrapper)


def _is_api(request: HttpRequest) -> bool:
    # django-ninja sets ``auth`` to what the bearer check answered: the token's team.
    return isinstance(getattr(request, "auth", None), Team)


def _team_of(request: HttpRequest) -> Team | None:
    if _is_api(request):
        return cast(Team, request.auth)  # type: ignore[attr-defined]  # ninja's, checked just above
    return _page_team(cast(AppRequest, request))


def _page_team(request: AppRequest) -> Team | None:
    """The team a page works in, as ``current_team`` picks it, but read only: a refused
    page must not make ``?team=`` the one remembered (a refused call changes nothing).
    A link to another team's object is counted in this one (the view switches after)."""
    teams = {team.slug: team for team in teams_of(request)}
    asked = request.GET.get("team")
    if asked is not None:
        return teams.get(asked)  # not a member: the view answers 404 as it always does
    return teams.get(request.session.get(SESSION_KEY, "")) or next(iter(teams.values()), None)


def _refused(request: HttpRequest, busy: TeamBusy) -> HttpResponse:
    if _is_api(request):
        # Imported here: the API's modules import this one.
        from web.api.error_envelope import error_response
        from web.api.root import api

        error = ApiError(429, CODE, busy_message(busy), retry_after=busy.retry_after)
        return error_response(api, request, error)  # the envelope, and Retry-After
    response = render(
        request,
        "429.html",
        {"retry_after": busy.retry_after},
        status=429,
    )
    response["Retry-After"] = str(busy.retry_after)
    return response


def busy_message(busy: TeamBusy) -> str:
    return (
        "Your team has as many costly requests running as it may at once; "
        f"try again in {busy.retry_after} second{'s' if busy.retry_after != 1 else ''}."
    )


class _Releasing:
    """A streamed answer's chunks that give back the turn once they are closed (the
    server closes every answer, read to the end or not; an iterator never started is
    closed too, unlike a generator's ``finally``)."""

    def __init__(self, chunks: Iterator[bytes], release: Callable[[], None]) -> None:
        self._chunks = chunks
        self._release: Callable[[], None] | None = release

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        return next(self._chunks)

    def close(self) -> None:
        release, self._release = self._release, None
        if release is not None:
            release()
