"""When a failed message is tried again (SPEC §16): about 5 s, 30 s, 2 min, 10 min and
1 h after the failures before, then every 6 h, for 3 days from the message's first try.

Each delay is stretched or shrunk by up to a fifth at random (jitter), so endpoints that
failed together do not all come back at the same second.
"""

from __future__ import annotations

from datetime import datetime, timedelta

FIRST_DELAYS = (5.0, 30.0, 120.0, 600.0, 3600.0)
LATER_DELAY = 6 * 3600.0
GIVE_UP_AFTER = timedelta(days=3)
JITTER = 0.2


def delay(failures: int, spread: float) -> float:
    """Seconds to wait after the ``failures``-th failed try (1, 2, …); ``spread`` is a
    number in [-1, 1] (random in production, fixed in tests)."""
    if failures < 1:
        raise ValueError("a delay follows at least one failure")
    base = FIRST_DELAYS[failures - 1] if failures <= len(FIRST_DELAYS) else LATER_DELAY
    return base * (1 + JITTER * max(-1.0, min(1.0, spread)))


def next_try(first_try: datetime, now: datetime, failures: int, spread: float) -> datetime | None:
    """When to try again after ``failures`` failed tries, or None: the message has been
    tried for three days and is given up."""
    when = now + timedelta(seconds=delay(failures, spread))
    if when - first_try > GIVE_UP_AFTER:
        return None
    return when
