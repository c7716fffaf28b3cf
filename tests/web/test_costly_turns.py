"""Under the production server's front (``lens/serving/buffered.py`` with the turns of
``web.costly``), a costly call past its team's share waits on the event loop,
holding no request thread: with a pool of ONE thread, another team is answered while
it waits; it runs once its team's turn is free, or is refused with the 429 as usual
when none comes in time; the loop's marker never reaches the client.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.db import connections

from lens.actors import Actor
from lens.models import ApiToken, Team
from lens.serving.buffered import TURN_HEADER, BufferedWsgi, Message
from memory.deliveries.ledger import deliver
from tests.event_loops import run_async
from tests.factories import create_agent
from web.costly import costly_shares, loop_turn
from web.team_shares import TeamShares

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def shares(monkeypatch: pytest.MonkeyPatch, settings: Any) -> Iterator[TeamShares]:
    monkeypatch.setenv("SERVER_THREADS", "1")
    settings.TEAM_COSTLY_SHARE = 0
    settings.TEAM_COSTLY_WAIT_MS = 5_000
    costly_shares.cache_clear()
    yield costly_shares()
    costly_shares.cache_clear()


@pytest.fixture
def served() -> Iterator[BufferedWsgi]:
    """Django behind the front, with one request thread; its thread's connections are
    closed afterwards (the test database is dropped at the end)."""
    app = BufferedWsgi(WSGIHandler(), threads=1, max_body=1 << 20, body_seconds=5, turns=loop_turn)
    yield app
    app.executor.submit(connections.close_all).result()
    app.executor.shutdown()


def teams() -> tuple[Team, str, Team, str]:
    acme = Team.objects.create(slug="acme", name="Acme")
    globex = Team.objects.create(slug="globex", name="Globex")
    agent = create_agent(acme)
    deliver(agent, Actor(label="runtime"))
    return acme, ApiToken.objects.issue(acme)[1], globex, ApiToken.objects.issue(globex)[1]


async def get(app: BufferedWsgi, path: str, token: str) -> tuple[int, dict[str, str], bytes]:
    sent: list[Message] = []
    scope = {
        "type": "http",
        "method": "GET",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1"), (b"authorization", f"Bearer {token}".encode())],
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 5555),
        "scheme": "http",
        "http_version": "1.1",
    }

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    headers = {k.decode().lower(): v.decode() for k, v in sent[0]["headers"]}
    return sent[0]["status"], headers, b"".join(m.get("body", b"") for m in sent[1:])


def test_a_call_waits_for_its_turn_on_the_loop_while_another_team_has_the_one_thread(
    served: BufferedWsgi, shares: TeamShares
) -> None:
    acme, ours, _globex, theirs = teams()
    shares.acquire(acme.pk, 0)  # acme's one turn: a call of acme is running

    async def scenario() -> tuple[Any, ...]:
        waiting = asyncio.create_task(get(served, "/api/agents/wren/stability", ours))
        while shares.waiting(acme.pk) == 0:  # its refusal came back; the loop waits
            await asyncio.sleep(0.01)
        other = await get(served, "/api/agents", theirs)  # the one thread is free
        assert not waiting.done()
        shares.release(acme.pk)
        return other, await waiting

    other, answered = run_async(scenario)

    assert other[0] == 200
    status, headers, _body = answered
    assert status == 200
    assert TURN_HEADER.lower() not in headers
    assert shares.busy_teams == 0


def test_a_call_whose_turn_never_comes_is_refused_as_usual_without_the_marker(
    served: BufferedWsgi, shares: TeamShares, settings: Any
) -> None:
    settings.TEAM_COSTLY_WAIT_MS = 100
    acme, ours, _globex, _theirs = teams()
    shares.acquire(acme.pk, 0)

    status, headers, body = run_async(get, served, "/api/agents/wren/stability", ours)

    assert status == 429
    assert headers["retry-after"] == "1"
    assert TURN_HEADER.lower() not in headers
    assert json.loads(body)["error"]["code"] == "team_busy"
    assert (shares.running(acme.pk), shares.waiting(acme.pk)) == (1, 0)
    shares.release(acme.pk)
    assert shares.busy_teams == 0
