"""When sending to an endpoint pauses (a circuit breaker): after ``threshold`` failed
tries in a row — an error status, a refused address, no answer in time — the endpoint is
skipped for a cool-down, then one message is tried (the probe). A probe that fails
pauses it again for twice as long, up to a cap; one that succeeds ends the pause, and the
endpoint's waiting messages go out again, oldest first.

A receiver that hangs costs a worker thread one deadline per try; paused, it costs none,
so the threads stay free for the endpoints that answer.

Each pause is stretched or shrunk by up to a fifth at random, as the retry schedule's
delays are, so endpoints that failed together are not probed in the same second.
"""

from __future__ import annotations

JITTER = 0.2
# The longest pause between probes: a receiver back after an outage hears again within
# about an hour, whatever the outage's length.
PAUSE_MAX = 3600.0


def pause(failures: int, threshold: int, first: float, spread: float) -> float | None:
    """Seconds to skip an endpoint after its ``failures``-th failed try in a row, or None
    while fewer than ``threshold`` failed (it is not paused). ``first``: the first pause,
    in seconds; ``spread``: a number in [-1, 1] (random in production, fixed in tests)."""
    if threshold < 1 or first <= 0:
        raise ValueError("the breaker needs a threshold of at least 1 and a pause over 0 s")
    if failures < threshold:
        return None
    # Doubling from the first pause; the exponent is bounded so a long outage's count
    # never makes a huge number.
    doublings = min(failures - threshold, 32)
    base = min(first * 2.0**doublings, PAUSE_MAX)
    return base * (1 + JITTER * max(-1.0, min(1.0, spread)))
