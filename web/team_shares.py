"""Per-team shares of a process's threads: at most ``share`` calls of one team hold one
at once, so a team that keeps them all busy still leaves threads for every other team.

One mechanism for both places that need it. The MCP server's tool calls wait their turn
in the event loop (``turn``), taking no thread while they wait, as long as it takes.
The web server's costly views (``web.costly``) run on one of the few request
threads: refused there at once, they wait briefly in the server's event loop instead
(``acquire_async`` under a timeout); under a server without one, they wait on their
thread (``hold``), and only while a thread is left for other work, else they are
refused with ``TeamBusy``.

Turns are fair: within a team, calls get a freed turn in the order they asked for one,
and a freed turn goes straight to the oldest waiter (no newcomer can overtake it).
A team has an entry only while it has calls running or waiting, so however many teams
call, the state is bounded by the calls in flight (tested).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field


def share_of(threads: int, wanted: int) -> int:
    """How many of ``threads`` one team's calls may hold at once: ``wanted`` (0: half,
    rounded up, so a second team always finds one when there are two or more), at most
    all of them."""
    return min(threads, wanted or (threads + 1) // 2)


# What a refused call is told to wait before it asks again (Retry-After): about as long
# as one costly call takes, so the turn has likely changed hands by then.
RETRY_AFTER_SECONDS = 1


class TeamBusy(Exception):
    """The team's share was full for longer than the call could wait; nothing ran. Ask
    again in ``retry_after`` seconds."""

    def __init__(self, retry_after: int = RETRY_AFTER_SECONDS) -> None:
        super().__init__(f"the team's share is in use; retry in {retry_after} s")
        self.retry_after = retry_after


class _Waiter:
    """One call waiting for a turn: a thread's event, or a coroutine's future."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.granted = False
        # A thread that waits holds it (the room counts it); a coroutine holds none.
        self.holds_thread = loop is None
        self._loop = loop
        self._event = threading.Event() if loop is None else None
        self._future: asyncio.Future[None] | None = loop.create_future() if loop else None

    def wake(self) -> None:
        """Called under the shares' lock, from any thread."""
        if self._event is not None:
            self._event.set()
        elif self._loop is not None and self._future is not None:
            self._loop.call_soon_threadsafe(self._resolve)

    def _resolve(self) -> None:
        if self._future is not None and not self._future.done():
            self._future.set_result(None)

    def wait(self, seconds: float) -> None:
        assert self._event is not None
        self._event.wait(seconds)

    async def wait_async(self) -> None:
        assert self._future is not None
        await self._future


@dataclass
class _Team:
    running: int = 0
    waiting: deque[_Waiter] = field(default_factory=deque)


class TeamShares:
    """At most ``share`` calls of one team running at once.

    ``room``: how many calls (running or waiting, all teams together) may be in here
    before a call that would have to wait is refused at once instead; None: no bound
    (calls that wait cost nothing, as in the event loop).
    """

    def __init__(self, share: int, *, room: int | None = None) -> None:
        self.share = share
        self.room = room
        self._lock = threading.Lock()
        self._teams: dict[int, _Team] = {}
        self._inside = 0  # running and waiting, every team

    @property
    def busy_teams(self) -> int:
        """How many teams have calls running or waiting (an entry each)."""
        with self._lock:
            return len(self._teams)

    def running(self, team_id: int) -> int:
        """How many of the team's calls have a turn now."""
        with self._lock:
            entry = self._teams.get(team_id)
            return entry.running if entry else 0

    def waiting(self, team_id: int) -> int:
        """How many of the team's calls wait for one."""
        with self._lock:
            entry = self._teams.get(team_id)
            return len(entry.waiting) if entry else 0

    # --- the bookkeeping both kinds of call share, under the lock ----------------------

    def _enter(self, team_id: int, waiter: _Waiter | None) -> _Waiter | None:
        """A turn now (None), or the waiter queued for one; with ``waiter`` None, a call
        that cannot wait: refused (``TeamBusy``) when it would have to."""
        entry = self._teams.get(team_id)
        if entry is None:
            entry = self._teams[team_id] = _Team()
        if entry.running < self.share and not entry.waiting:
            entry.running += 1
            self._inside += 1
            return None
        if waiter is None:
            raise TeamBusy
        if waiter.holds_thread:
            if self.room is not None and self._inside + 1 > self.room:
                raise TeamBusy
            self._inside += 1
        entry.waiting.append(waiter)
        return waiter

    def _leave(self, team_id: int) -> None:
        """A running call is done: its turn goes to the team's oldest waiter, if any."""
        entry = self._teams[team_id]
        if entry.waiting:
            waiter = entry.waiting.popleft()
            waiter.granted = True  # running stays the same: the turn changes hands
            if not waiter.holds_thread:
                self._inside += 1  # its call is about to run on a thread
            waiter.wake()
        else:
            entry.running -= 1
            if entry.running == 0:
                del self._teams[team_id]
        self._inside -= 1

    def _give_up(self, team_id: int, waiter: _Waiter) -> bool:
        """A waiter stops waiting; True when the turn had reached it meanwhile (it is
        then the caller's, to use or to leave)."""
        if waiter.granted:
            return True
        entry = self._teams[team_id]
        entry.waiting.remove(waiter)
        if waiter.holds_thread:
            self._inside -= 1
        if entry.running == 0 and not entry.waiting:
            del self._teams[team_id]
        return False

    # --- on a thread ----------------------------------------------------------------

    def acquire(self, team_id: int, wait: float) -> None:
        """Take a turn, waiting up to ``wait`` seconds (only if the room allows);
        ``TeamBusy`` if none came. Every acquire that returns needs one ``release``."""
        with self._lock:
            waiter = self._enter(team_id, _Waiter() if wait > 0 else None)
        if waiter is None:
            return
        deadline = time.monotonic() + wait
        while not waiter.granted:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            waiter.wait(left)
        with self._lock:
            if not self._give_up(team_id, waiter):
                raise TeamBusy

    def release(self, team_id: int) -> None:
        with self._lock:
            self._leave(team_id)

    @contextlib.contextmanager
    def hold(self, team_id: int, wait: float) -> Iterator[None]:
        """A turn for the block (``acquire``), given back however the block ends."""
        self.acquire(team_id, wait)
        try:
            yield
        finally:
            self.release(team_id)

    # --- in an event loop -------------------------------------------------------------

    async def acquire_async(self, team_id: int) -> None:
        """Take a turn, waited for in the event loop, holding no thread, for as long as
        it takes: bound it with a timeout (a cancelled wait takes its place out of the
        queue, or hands on a turn that reached it meanwhile). Needs one ``release``."""
        with self._lock:
            waiter = self._enter(team_id, _Waiter(asyncio.get_running_loop()))
        if waiter is None:
            return
        try:
            await waiter.wait_async()
        except BaseException:
            with self._lock:
                if self._give_up(team_id, waiter):
                    self._leave(team_id)
            raise

    @contextlib.asynccontextmanager
    async def turn(self, team_id: int) -> AsyncIterator[None]:
        """A turn for the block (``acquire_async``), given back however it ends."""
        await self.acquire_async(team_id)
        try:
            yield
        finally:
            self.release(team_id)
