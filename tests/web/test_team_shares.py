"""TeamShares (``web/team_shares.py``), alone: per team at most its share at once,
turns handed on first come first served, given back however a call ends, a wait that
ends in ``TeamBusy`` when no turn came, the room that keeps one thread free, and state
only for the teams with calls in flight, however many teams call."""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections.abc import Callable

import pytest

from tests.event_loops import run_async
from web.team_shares import TeamBusy, TeamShares, share_of

LONG = 10.0  # a wait that never runs out in these tests: a turn comes first


def start(target: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def until(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    """Wait for another thread to reach a state (it polls: nothing here can signal it)."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the state was never reached"
        time.sleep(0.001)


def test_a_team_never_runs_more_than_its_share_and_another_team_runs_beside_it() -> None:
    shares = TeamShares(2)
    lock = threading.Lock()
    running = {1: 0, 2: 0}
    most = {1: 0, 2: 0}

    def call(team: int) -> None:
        with shares.hold(team, LONG):
            with lock:
                running[team] += 1
                most[team] = max(most[team], running[team])
            time.sleep(0.005)
            with lock:
                running[team] -= 1

    threads = [start(functools.partial(call, team)) for team in (1, 1, 1, 1, 1, 1, 2, 2)]
    for thread in threads:
        thread.join()

    assert most == {1: 2, 2: 2}
    assert shares.busy_teams == 0


def test_waiting_calls_get_their_turns_in_the_order_they_asked() -> None:
    shares = TeamShares(1)
    shares.acquire(7, 0)  # the running call
    order: list[int] = []

    def call(n: int) -> None:
        with shares.hold(7, LONG):
            order.append(n)

    def queued(count: int) -> bool:
        return shares.waiting(7) == count

    threads = []
    for n in range(6):
        threads.append(start(functools.partial(call, n)))
        until(functools.partial(queued, n + 1))  # queued before the next one asks
    shares.release(7)
    for thread in threads:
        thread.join()

    assert order == [0, 1, 2, 3, 4, 5]
    assert shares.busy_teams == 0


def test_a_freed_turn_goes_to_the_waiter_not_to_a_newcomer() -> None:
    shares = TeamShares(1)
    shares.acquire(7, 0)
    got: list[str] = []

    def wait_for_it() -> None:
        shares.acquire(7, LONG)
        got.append("waiter")

    waiter = start(wait_for_it)
    until(lambda: shares.waiting(7) == 1)

    shares.release(7)
    with pytest.raises(TeamBusy):  # the turn changed hands at once: none is free
        shares.acquire(7, 0)
    waiter.join()

    assert got == ["waiter"]
    assert shares.running(7) == 1
    shares.release(7)
    assert shares.busy_teams == 0


def test_a_turn_is_given_back_when_the_call_raises() -> None:
    shares = TeamShares(1)

    with pytest.raises(ZeroDivisionError), shares.hold(3, 0):
        _ = 1 / 0

    assert shares.busy_teams == 0
    with shares.hold(3, 0):  # and the next call has it at once
        assert shares.running(3) == 1


def test_a_call_that_waits_in_vain_is_refused_and_leaves_no_trace() -> None:
    shares = TeamShares(1)
    shares.acquire(5, 0)

    started = time.monotonic()
    with pytest.raises(TeamBusy) as refused:
        shares.acquire(5, 0.05)
    waited = time.monotonic() - started

    assert waited >= 0.05
    assert refused.value.retry_after == 1
    assert (shares.running(5), shares.waiting(5)) == (1, 0)
    shares.release(5)
    assert shares.busy_teams == 0


def test_a_call_waits_for_a_turn_freed_within_its_wait() -> None:
    shares = TeamShares(1)
    shares.acquire(5, 0)
    timer = threading.Timer(0.05, shares.release, args=(5,))
    timer.start()

    shares.acquire(5, LONG)  # no TeamBusy: the turn came

    timer.join()
    assert shares.running(5) == 1
    shares.release(5)
    assert shares.busy_teams == 0


def test_no_call_waits_when_waiting_would_fill_the_room() -> None:
    """With room 1 (two request threads, one kept free), the running call fills it: a
    call that would wait is refused at once, however long it may wait."""
    shares = TeamShares(1, room=1)
    shares.acquire(5, 0)

    started = time.monotonic()
    with pytest.raises(TeamBusy):
        shares.acquire(5, LONG)

    assert time.monotonic() - started < 1.0
    with shares.hold(6, 0):  # another team still runs: its first call needs no wait
        assert shares.busy_teams == 2
    shares.release(5)
    assert shares.busy_teams == 0


def test_the_state_is_bounded_by_the_calls_in_flight_however_many_teams_call() -> None:
    shares = TeamShares(1)
    most = 0
    lock = threading.Lock()

    def calls(first: int) -> None:
        nonlocal most
        for team in range(first, first + 2_500):
            with shares.hold(team, 0), lock:
                most = max(most, shares.busy_teams)

    threads = [start(functools.partial(calls, n * 2_500)) for n in range(4)]
    for thread in threads:
        thread.join()

    assert 1 <= most <= 4  # one entry per call in flight, never one per team seen
    assert shares.busy_teams == 0


def test_turns_in_the_event_loop_are_shared_the_same_way() -> None:
    """MCP's calls wait in the event loop: a cancelled waiter leaves the queue, and the
    turn a finished call frees goes to the next waiter."""

    async def scenario() -> list[str]:
        shares = TeamShares(1)
        done: list[str] = []
        release = asyncio.Event()

        async def call(name: str) -> None:
            async with shares.turn(9):
                done.append(name)
                if name == "first":
                    await release.wait()

        first = asyncio.create_task(call("first"))
        await asyncio.sleep(0)
        cancelled = asyncio.create_task(call("cancelled"))
        third = asyncio.create_task(call("third"))
        await asyncio.sleep(0)
        assert shares.waiting(9) == 2
        cancelled.cancel()
        await asyncio.sleep(0)
        assert shares.waiting(9) == 1
        release.set()
        await asyncio.gather(first, third)
        assert shares.busy_teams == 0
        return done

    assert run_async(scenario) == ["first", "third"]


@pytest.mark.parametrize(
    ("threads", "wanted", "share"),
    [(1, 0, 1), (2, 0, 1), (3, 0, 2), (4, 0, 2), (8, 0, 4), (4, 3, 3), (2, 9, 2)],
)
def test_the_share_is_half_the_threads_unless_set_and_never_more_than_all(
    threads: int, wanted: int, share: int
) -> None:
    assert share_of(threads, wanted) == share
