"""Process-level tuning applied once the application is loaded (WSGI, ASGI, bench)."""

from __future__ import annotations

import gc

from lens.core.token_counts import warm_up
from lens.envconf import env_int

# Collect the youngest generation after this many net allocations instead of 700:
# a composition of an agent with thousands of memories allocates tens of thousands of
# short-lived objects, none of them cyclic, and reference counting frees them all.
YOUNG_THRESHOLD = 50_000


# Threads per server process that run Django (``SERVER_THREADS``): a second one
# overlaps waits on the database (lens/serving/server.py).
DEFAULT_REQUEST_THREADS = 2


def request_threads() -> int:
    """How many threads of this server process run requests."""
    return env_int("SERVER_THREADS", DEFAULT_REQUEST_THREADS, minimum=1)


def tune_gc() -> None:
    """Move everything loaded so far (it lives as long as the process) out of the
    cyclic collector's sight, and collect less eagerly, so requests do not keep
    rescanning the framework's objects.
    """
    gc.collect()
    gc.freeze()
    _young, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)


def prepare_process() -> None:
    """Once the application is loaded (WSGI, ASGI): load the o200k_base ranks now
    (about half a second) rather than in the first request that counts tokens, then
    tune the collector."""
    warm_up()
    tune_gc()
