"""MCP over HTTP runs tool calls side by side on a bounded pool of threads (SPEC §12):
one team's slow calls hold at most its share of the threads and do not hold up another
team's call, a bad token is refused even while every tool thread is busy, the pool is as
large as ``MCP_THREADS`` says and no larger, and a process holds no more database
connections than it has threads.

Slow calls are made slow for certain, not by hoping: a test thread holds a key's write
open in a transaction, so every ``kv_store write`` of that key waits for it, holding
its pool thread (a row lock on PostgreSQL, the write lock on SQLite) until the test
lets go; reads go on meanwhile.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from types import TracebackType
from typing import Any

import anyio
import pytest
from anyio.from_thread import BlockingPortal
from django.db import connection, transaction
from mcp_types import CallToolResult

from kvstore import store
from lens.models import ApiToken, Team
from tests.event_loops import run_async
from tests.web.mcp.harness import (
    ROOT,
    TIMEOUT,
    McpTools,
    Raws,
    World,
    ensure_world,
    http_session,
    raw_post,
    start_http_server,
    stop,
    text_of,
    tools_call,
)
from web.mcp.tools import TOKEN_THREADS
from web.team_shares import TeamShares

pytestmark = pytest.mark.django_db(transaction=True)

THREADS = 4  # the server's MCP_THREADS here
SERVER_APP_NAME = "lens-mcp-under-test"
SHARE = 2  # what one team may hold of them (half, by default)
HOLD = 8.0  # seconds the held write lasts at most; a call served at once takes well under
PROMPT = HOLD / 2  # what "at once" must beat: a call queued behind the held one waits ~HOLD
KEY = "held"
UNISSUED = "cl_" + "A" * 43


@pytest.fixture(scope="module")
def pool_url(mcp_database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("mcp") / "pool.log"
    # libpq names the server's connections, so they can be told from the suite's own.
    process, url = start_http_server(
        mcp_database, log, MCP_THREADS=str(THREADS), PGAPPNAME=SERVER_APP_NAME
    )
    yield url
    stop(process)


def _client(
    portal: BlockingPortal, url: str, raw: str, raws: Raws, blocker: Any
) -> Iterator[McpTools]:
    with blocker.unblock():
        ensure_world(raws)  # connecting is a request: the token must exist
    with portal.wrap_async_context_manager(http_session(url, raw)) as client:
        yield McpTools(portal, client)


@pytest.fixture(scope="module")
def ours(
    portal: BlockingPortal, pool_url: str, raws: Raws, django_db_blocker: Any
) -> Iterator[McpTools]:
    yield from _client(portal, pool_url, raws.ours, raws, django_db_blocker)


@pytest.fixture(scope="module")
def theirs(
    portal: BlockingPortal, pool_url: str, raws: Raws, django_db_blocker: Any
) -> Iterator[McpTools]:
    yield from _client(portal, pool_url, raws.theirs, raws, django_db_blocker)


class HeldWrite:
    """A write of ``key`` for each team, held open in one transaction on a thread of its
    own (with its own connection) until ``release`` or ``hold`` seconds: every other
    write of those keys waits."""

    def __init__(self, *teams: Team, hold: float = HOLD) -> None:
        self._teams, self._hold = teams, hold
        self._held, self._release = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._run)
        self.released_at = 0.0

    def _run(self) -> None:
        try:
            with transaction.atomic():
                for team in self._teams:
                    store.write(team, KEY, "held")
                self._held.set()
                self._release.wait(self._hold)
                self.released_at = time.monotonic()
        finally:
            connection.close()

    def release(self) -> None:
        self._release.set()
        self._thread.join(TIMEOUT)

    def __enter__(self) -> HeldWrite:
        self._thread.start()
        assert self._held.wait(TIMEOUT), "the write was not held"
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def start_writes(tools: McpTools, count: int) -> list[Future[CallToolResult]]:
    """``count`` writes of the held key, in flight at once."""
    arguments = {"command": "write", "id": KEY, "payload": "queued"}
    return [
        tools.portal.start_task_soon(tools.client.call_tool, "kv_store", arguments)
        for _ in range(count)
    ]


def lock_waits() -> int:
    """How many statements wait for a lock (PostgreSQL)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
        (count,) = cursor.fetchone()
    return int(count)


def wait_until_waiting(count: int) -> None:
    """Until ``count`` writes wait for the held one. PostgreSQL shows them as lock waits;
    SQLite shows nothing, so allow them a moment to arrive."""
    if connection.vendor != "postgresql":
        time.sleep(1.5)
        return
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        if lock_waits() >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"{count} writes did not start waiting")


def timed(call: Any, *args: Any, **kwargs: Any) -> tuple[float, Any]:
    start = time.monotonic()
    found = call(*args, **kwargs)
    return time.monotonic() - start, found


def versions_written(futures: list[Future[CallToolResult]]) -> set[int]:
    results = [future.result(TIMEOUT) for future in futures]
    for result in results:
        assert not result.is_error, text_of(result)
    return {json.loads(text_of(result))["version"] for result in results}


# --- one team's slow calls do not hold up another's ----------------------------------


def test_another_teams_call_is_served_while_one_team_keeps_every_thread_asked_for(
    ours: McpTools, theirs: McpTools, world: World
) -> None:
    store.write(world.other_team, "mine", "theirs")
    with HeldWrite(world.team):
        writes = start_writes(ours, THREADS)  # as many as there are threads
        wait_until_waiting(SHARE)
        if connection.vendor == "postgresql":
            time.sleep(0.5)
            assert lock_waits() == SHARE  # its share of threads, no more
        elapsed, read = timed(theirs.ok, "kv_store", command="read", id="mine")
        assert read["payload"] == "theirs"
        assert elapsed < PROMPT, f"served after {elapsed:.2f} s, behind the held writes"
        # (Not kv_bootstrap: its snapshot is a transaction, which on SQLite waits for
        # the write lock as any transaction does there.)
        elapsed, listed = timed(theirs.ok, "kv_store", command="list", id="")
        assert [key["id"] for key in listed["keys"]] == ["mine"]
        assert elapsed < PROMPT
        assert not any(write.done() for write in writes)  # they were in flight throughout
    # Let go: the waiting writes land, each with its own version after the held one.
    assert versions_written(writes) == set(range(2, 2 + THREADS))


def test_the_pool_has_mcp_threads_threads_and_a_bad_token_never_waits_for_one(
    portal: BlockingPortal, ours: McpTools, theirs: McpTools, world: World, pool_url: str
) -> None:
    third = Team.objects.create(slug="initech", name="Initech")
    _token, raw = ApiToken.objects.issue(third)
    store.write(third, "mine", "third")
    with HeldWrite(world.team, world.other_team) as held:
        # Two teams, each its share: every tool thread waits.
        writes = start_writes(ours, SHARE) + start_writes(theirs, SHARE)
        wait_until_waiting(THREADS)
        # Token checks have their own lane: refused at once, busy pool or not.
        for authorization in (f"Bearer {UNISSUED}", "Bearer not-a-token", "Bearer "):
            elapsed, (status, _) = timed(
                raw_post, pool_url, tools_call("kv_bootstrap", {}), authorization
            )
            assert status == 401
            assert elapsed < PROMPT, f"refused after {elapsed:.2f} s"
        # A third team's call gets past its token check, then waits for a thread: the
        # pool is bounded (THREADS calls at once, so at most THREADS connections).
        with portal.wrap_async_context_manager(http_session(pool_url, raw)) as client:
            victim = portal.start_task_soon(
                client.call_tool, "kv_store", {"command": "read", "id": "mine"}
            )
            time.sleep(1.0)
            assert not victim.done()
            held.release()
            result = victim.result(TIMEOUT)
            assert not result.is_error
            assert time.monotonic() >= held.released_at
    assert versions_written(writes) == {2, 3}  # each team's key: 1 held, then 2 and 3


def test_one_teams_calls_take_turns_within_its_share() -> None:
    """TeamShares alone: one team never has more than its share running, another team
    runs beside it, and nothing is left behind once they are done."""
    shares = TeamShares(2)
    running: dict[int, int] = {1: 0, 2: 0}
    most: dict[int, int] = {1: 0, 2: 0}

    async def call(team: int) -> None:
        async with shares.turn(team):
            running[team] += 1
            most[team] = max(most[team], running[team])
            await anyio.sleep(0.01)
            running[team] -= 1

    async def main() -> None:
        async with anyio.create_task_group() as group:
            for _ in range(7):
                group.start_soon(call, 1)
            group.start_soon(call, 2)

    run_async(main)
    assert most == {1: 2, 2: 1}
    assert shares.busy_teams == 0


def test_calls_beyond_the_pool_all_complete(ours: McpTools, world: World) -> None:
    store.write(world.team, "k", "v")
    calls = [
        ours.portal.start_task_soon(
            ours.client.call_tool, "kv_store", {"command": "read", "id": "k"}
        )
        for _ in range(4 * THREADS)
    ]
    for call in calls:
        assert json.loads(text_of(call.result(TIMEOUT)))["payload"] == "v"


@pytest.mark.skipif("connection.vendor != 'postgresql'")
def test_the_server_holds_no_more_connections_than_threads(ours: McpTools, world: World) -> None:
    store.write(world.team, "k", "v")
    for _ in range(3):  # waves of calls, more than the threads at once
        calls = [
            ours.portal.start_task_soon(
                ours.client.call_tool, "kv_store", {"command": "read", "id": "k"}
            )
            for _ in range(4 * THREADS)
        ]
        for call in calls:
            assert not call.result(TIMEOUT).is_error
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND application_name = %s",
            [SERVER_APP_NAME],
        )
        (others,) = cursor.fetchone()
    assert 1 <= others <= THREADS + TOKEN_THREADS


# --- a flood of bad tokens ------------------------------------------------------------


def victim_latencies(tools: McpTools, count: int) -> list[float]:
    return [timed(tools.ok, "kv_bootstrap")[0] for _ in range(count)]


def test_a_flood_of_bad_tokens_barely_slows_a_valid_client(
    theirs: McpTools, world: World, pool_url: str
) -> None:
    store.write(world.other_team, "root", "Read me first.")
    victim_latencies(theirs, 5)  # warm
    quiet = statistics.median(victim_latencies(theirs, 30))
    flood = subprocess.Popen(
        [sys.executable, "-m", "tests.web.mcp.flood", pool_url, "20", "8"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(1.0)  # the flood is under way
        flooded = statistics.median(victim_latencies(theirs, 30))
    finally:
        out, _ = flood.communicate(timeout=TIMEOUT)
    counts = json.loads(out)
    assert counts["sent"] > 0
    assert counts["refused"] == counts["sent"]
    print(f"victim p50 {quiet * 1000:.1f} ms quiet, {flooded * 1000:.1f} ms flooded; {counts}")
    # The flood's own HTTP handling shares the server's event loop, so some slowing is
    # expected; its token checks take no tool thread.
    assert flooded < 4 * quiet + 0.05
