"""gunicorn's threaded worker, answering a kept-alive connection's next request on the
thread that answered the last one when it arrives within a moment.

In plain ``gthread`` every request on a kept-alive connection takes three wake-ups in
the server: the finished thread hands the connection back to the main thread, the main
thread waits for the socket to turn readable, then hands it to a pool thread again. On
a virtual machine each wake-up of an idle core costs tens to hundreds of microseconds,
which is more than a key/value read costs the application. An agent sends its calls
back to back, so here the thread that answered waits up to ``linger`` seconds for the
next request on the same socket and answers it itself; only a connection that stays
quiet that long goes back to the poller, exactly as before. A thread lingers only on a
connection that just announced keep-alive, never while the worker stops, never while
another connection waits for a thread (so a busy client cannot starve the others), and
at most ``linger`` each time, so a quiet client holds a thread for that long at the most.
"""

from __future__ import annotations

import os
import select
from typing import Any

from gunicorn.workers.gthread import ThreadWorker  # type: ignore[import-untyped]  # no stubs

# Seconds a thread waits for the next request on its connection. Agents' calls follow
# each other within a millisecond or two; a browser's next click comes much later and
# goes to the poller as in plain gthread.
DEFAULT_LINGER = 0.002


def linger_seconds() -> float:
    return float(os.environ.get("GUNICORN_LINGER_MS", DEFAULT_LINGER * 1000)) / 1000


class LingeringThreadWorker(ThreadWorker):
    linger = linger_seconds()

    def handle(self, conn: Any) -> Any:
        result = super().handle(conn)
        while result is True and self.alive and self._next_request_soon(conn):
            result = super().handle(conn)
        return result

    def _next_request_soon(self, conn: Any) -> bool:
        if self.linger <= 0 or self._others_waiting():
            return False
        if conn.parser is not None and conn.parser.unreader.buf.getvalue():
            return True  # the next request is already read, partly or whole
        poller = select.poll()
        poller.register(conn.sock, select.POLLIN)
        return bool(poller.poll(self.linger * 1000)) and not self._others_waiting()

    def _others_waiting(self) -> bool:
        # Connections the main thread has handed to the pool and no thread has taken yet
        # (the executor's queue is private, but it is the one place that knows).
        return not self.tpool._work_queue.empty()
