"""Costly calls take turns per team (``web/costly.py``): past its share a team's
costly call gets 429 ``team_busy`` with ``Retry-After`` (the API's envelope, or the
product's 429 page), runs nothing and changes nothing, while another team's calls and
the team's cheap ones are served; a call waits for a turn only while a request thread
stays free; a streamed export keeps its turn until the stream is closed.

"A running call" of the team is its turn taken straight from the process's shares, as
a costly view takes it; the threaded test has a real call block inside the view.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client

from lens.actors import Actor
from lens.models import Agent, ApiToken, Team
from memory.deliveries.ledger import deliver
from memory.stability import stability as measure
from tests.api_calls import ApiClient, assert_error, db_snapshot
from tests.factories import create_agent, logged_in, make_user
from tests.pages import dom
from web.api import stability_routes
from web.costly import costly_shares
from web.team_shares import TeamShares

pytestmark = pytest.mark.django_db

COSTLY_API = [
    "/api/agents/wren/stability?last=200",
    "/api/agents/wren/revisions/1/diff",
    "/api/deliveries/{delivery}/diff",
    "/api/agents/wren/export",
    "/api/agents/wren/memories?q=hello",
]
CHEAP_API = [
    "/api/agents",
    "/api/agents/wren",
    "/api/agents/wren/revisions/1",
    "/api/agents/wren/memories",
    "/api/agents/wren/memories?q=",
]
COSTLY_PAGES = [
    "/agents/wren/stability/",
    "/agents/wren/revisions/1/",
    "/agents/wren/revisions/1/config.diff",
    "/agents/wren/revisions/1/restore/",
    "/deliveries/{delivery}/diff/",
    "/deliveries/{delivery}/diff/download/",
    "/deliveries/{delivery}/live/",
    "/deliveries/{delivery}/live/download/",
    "/memories/?q=hello",
]
CHEAP_PAGES = ["/", "/agents/wren/", "/memories/", "/deliveries/{delivery}/"]


@pytest.fixture(autouse=True)
def shares(monkeypatch: pytest.MonkeyPatch, settings: Any) -> Iterator[TeamShares]:
    """The process's shares as ``make serve`` sizes them (two request threads: a share of
    one per team), fresh for each test."""
    monkeypatch.setenv("SERVER_THREADS", "2")
    settings.TEAM_COSTLY_SHARE = 0
    settings.TEAM_COSTLY_WAIT_MS = 200
    costly_shares.cache_clear()
    yield costly_shares()
    costly_shares.cache_clear()


def delivered(team: Team) -> str:
    """Wren, delivered twice: the id of the second delivery."""
    agent = create_agent(team)
    deliver(agent, Actor(label="runtime"))
    return deliver(Agent.objects.get(pk=agent.pk), Actor(label="runtime")).delivery.id


def finish(response: Any) -> None:
    """Read a streamed answer to its end, which closes it (the test client's wrapper,
    as the server closes every answer)."""
    if response.streaming:
        b"".join(response.streaming_content)


@pytest.fixture
def delivery(team: Team) -> str:
    return delivered(team)


def test_a_costly_call_past_its_teams_share_gets_429_team_busy_and_retry_after(
    api: ApiClient, team: Team, delivery: str, shares: TeamShares
) -> None:
    shares.acquire(team.pk, 0)  # the team's one turn: a call of it is running

    for path in COSTLY_API:
        response = api.get(path.format(delivery=delivery))
        error = assert_error(response, 429, "team_busy")
        assert response["Retry-After"] == "1", path
        assert error["retry_after"] == 1
        assert "try again in 1 second" in error["message"]

    shares.release(team.pk)
    for path in COSTLY_API:  # once the turn is back, the same calls are answered
        response = api.get(path.format(delivery=delivery))
        assert response.status_code == 200, path
        finish(response)
    assert shares.busy_teams == 0


def test_the_teams_cheap_calls_and_another_teams_costly_ones_run_while_its_share_is_full(
    api: ApiClient, other_api: ApiClient, team: Team, other_team: Team, shares: TeamShares
) -> None:
    ours, theirs = delivered(team), delivered(other_team)
    shares.acquire(team.pk, 0)

    for path in CHEAP_API:
        assert api.get(path).status_code == 200, path
    for path in COSTLY_API:
        response = other_api.get(path.format(delivery=theirs))
        assert response.status_code == 200, path
        finish(response)
    assert api.get(f"/api/deliveries/{ours}/diff").status_code == 429

    assert (shares.running(team.pk), shares.running(other_team.pk)) == (1, 0)


def test_a_refused_call_runs_nothing_and_changes_nothing(
    api: ApiClient,
    member_client: Client,
    team: Team,
    delivery: str,
    shares: TeamShares,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ran: list[int] = []

    def counted(agent: Agent, last: int) -> Any:
        ran.append(last)
        return measure(agent, last)

    monkeypatch.setattr(stability_routes, "stability", counted)
    shares.acquire(team.pk, 0)
    before = db_snapshot()

    assert_error(api.get("/api/agents/wren/stability?last=200"), 429, "team_busy")
    for path in COSTLY_PAGES:
        # ?team= names the team to work in: a refused page does not remember it either.
        url = path.format(delivery=delivery)
        url += ("&" if "?" in url else "?") + "team=acme"
        assert member_client.get(url).status_code == 429, url

    assert ran == []
    assert db_snapshot() == before


@pytest.mark.parametrize("path", COSTLY_PAGES)
def test_a_costly_page_past_the_share_is_the_products_429_page_with_retry_after(
    member_client: Client, team: Team, delivery: str, shares: TeamShares, path: str
) -> None:
    shares.acquire(team.pk, 0)

    response = member_client.get(path.format(delivery=delivery))

    page = dom(response, 429)
    assert response["Retry-After"] == "1"
    assert "Content-Security-Policy" in response
    assert page.one("data-error-page", "429").text.count("Try again in 1 second.") == 1
    assert page.links("Try again") == [path.format(delivery=delivery)]


def test_pages_answer_as_before_for_cheap_pages_anonymous_visitors_and_strangers(
    member_client: Client, stranger: User, team: Team, delivery: str, shares: TeamShares
) -> None:
    shares.acquire(team.pk, 0)

    for path in CHEAP_PAGES:
        assert member_client.get(path.format(delivery=delivery)).status_code == 200, path
    for path in COSTLY_PAGES:
        url = path.format(delivery=delivery)
        # The login comes first; a stranger's own team has its turn: the page 404s (the
        # search searches the stranger's own team).
        assert Client().get(url).status_code == 302, url
        expected = 200 if url.startswith("/memories/") else 404
        assert logged_in(stranger).get(url).status_code == expected, url


def test_a_member_of_two_teams_is_refused_only_in_the_busy_one(
    team: Team, other_team: Team, shares: TeamShares
) -> None:
    both = make_user("kai", team, other_team)
    delivered(other_team)
    shares.acquire(team.pk, 0)
    client = logged_in(both)

    assert client.get("/agents/wren/stability/?team=acme").status_code == 429
    assert client.get("/agents/wren/stability/?team=globex").status_code == 200


def test_a_call_that_fails_gives_its_turn_back(
    api: ApiClient, team: Team, delivery: str, shares: TeamShares
) -> None:
    assert_error(api.get("/api/agents/nobody/stability"), 404, "agent_not_found")
    assert_error(api.get("/api/agents/wren/stability?last=1"), 422)

    assert shares.busy_teams == 0
    assert api.get("/api/agents/wren/stability").status_code == 200


def test_a_streamed_export_keeps_its_turn_until_the_stream_is_closed(
    api: ApiClient, team: Team, delivery: str, shares: TeamShares
) -> None:
    response = api.get("/api/agents/wren/export")

    assert response.status_code == 200
    assert shares.running(team.pk) == 1
    assert api.get("/api/agents/wren/export").status_code == 429
    assert b"".join(response.streaming_content)  # read to the end, the answer is closed
    assert shares.busy_teams == 0


def test_a_call_waits_for_a_turn_when_a_request_thread_stays_free(
    api: ApiClient, team: Team, delivery: str, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    """Four request threads, one turn per team: a second call of the team may wait (two
    of four threads taken by costly calls), and gets the turn freed within its wait."""
    monkeypatch.setenv("SERVER_THREADS", "4")
    settings.TEAM_COSTLY_SHARE = 1
    settings.TEAM_COSTLY_WAIT_MS = 10_000
    costly_shares.cache_clear()
    shares = costly_shares()
    shares.acquire(team.pk, 0)
    timer = threading.Timer(0.1, shares.release, args=(team.pk,))
    timer.start()

    started = time.monotonic()
    assert api.get("/api/agents/wren/stability").status_code == 200

    timer.join()
    assert 0.1 <= time.monotonic() - started < 10
    assert shares.busy_teams == 0


def test_no_call_waits_on_the_last_request_thread(
    api: ApiClient, team: Team, delivery: str, shares: TeamShares, settings: Any
) -> None:
    """Two request threads: with one running a costly call, a second that waited would
    hold the other, and every team would wait behind both. It is refused at once."""
    settings.TEAM_COSTLY_WAIT_MS = 10_000
    shares.acquire(team.pk, 0)

    started = time.monotonic()
    assert_error(api.get("/api/agents/wren/stability"), 429, "team_busy")

    assert time.monotonic() - started < 5


@pytest.mark.django_db(transaction=True)
def test_while_one_teams_call_runs_its_next_is_refused_and_another_team_is_served(
    monkeypatch: pytest.MonkeyPatch, shares: TeamShares
) -> None:
    """Real calls on threads: team A's stability call is held inside the view (the hook
    blocks it), A's next one is refused at once, team B's is answered meanwhile."""
    teams = [Team.objects.create(slug=slug, name=slug) for slug in ("acme", "globex")]
    tokens = [ApiToken.objects.issue(team)[1] for team in teams]
    for team in teams:
        delivered(team)
    inside, leave = threading.Event(), threading.Event()

    def held(agent: Agent, last: int) -> Any:
        if agent.team_id == teams[0].pk:
            inside.set()
            assert leave.wait(30)
        return measure(agent, last)

    monkeypatch.setattr(stability_routes, "stability", held)
    answers: list[int] = []
    first = threading.Thread(target=_in_thread(answers, tokens[0]))
    first.start()
    try:
        assert inside.wait(30)
        assert_error(ApiClient(tokens[0]).get("/api/agents/wren/stability"), 429, "team_busy")
        assert ApiClient(tokens[1]).get("/api/agents/wren/stability").status_code == 200
        assert shares.running(teams[0].pk) == 1
    finally:
        leave.set()
        first.join()
    assert answers == [200]
    assert shares.busy_teams == 0


def _in_thread(answers: list[int], token: str) -> Callable[[], None]:
    def call() -> None:
        try:
            answers.append(ApiClient(token).get("/api/agents/wren/stability").status_code)
        finally:
            connection.close()

    return call


@pytest.mark.parametrize(("threads", "wanted", "share"), [("2", 0, 1), ("8", 0, 4), ("8", 3, 3)])
def test_the_share_is_half_the_request_threads_unless_set(
    monkeypatch: pytest.MonkeyPatch, settings: Any, threads: str, wanted: int, share: int
) -> None:
    monkeypatch.setenv("SERVER_THREADS", threads)
    settings.TEAM_COSTLY_SHARE = wanted
    costly_shares.cache_clear()

    assert costly_shares().share == share
    assert costly_shares().room == int(threads) - 1
