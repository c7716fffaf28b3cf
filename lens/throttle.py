"""The login throttle (SPEC §13): after ``MAX_FAILURES`` failed sign-ins for one username
within ``WINDOW``, sign-ins for it are refused until ``WINDOW`` after the last of them,
even with the right password. Other usernames are unaffected; a success starts afresh.

Failures live in the database, so every server process counts the same ones. Rows older
than twice the window can no longer matter and are pruned as new failures arrive.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from lens.models import LoginFailure

MAX_FAILURES = 5
WINDOW = timedelta(minutes=15)
# LoginFailure.username's length: longer names are cut (they still count as one name).
USERNAME_MAX = 150


def _key(username: str) -> str:
    # Case-folded, so that "Mira" and "mira" share one count.
    return username.casefold()[:USERNAME_MAX]


def refused_until(username: str, now: datetime | None = None) -> datetime | None:
    """When sign-ins for ``username`` are allowed again, or None if they are now."""
    now = now or timezone.now()
    latest = list(
        LoginFailure.objects.filter(username=_key(username), at__gt=now - 2 * WINDOW)
        .order_by("-at")
        .values_list("at", flat=True)[:MAX_FAILURES]
    )
    if len(latest) < MAX_FAILURES or latest[0] - latest[-1] > WINDOW:
        return None
    until = latest[0] + WINDOW
    return until if until > now else None


def refusal_message(until: datetime, now: datetime | None = None) -> str:
    minutes = max(1, math.ceil((until - (now or timezone.now())).total_seconds() / 60))
    return (
        "Too many failed sign-ins for this username; "
        f"try again in {minutes} minute{'s' if minutes != 1 else ''}."
    )


def record_failure(username: str) -> None:
    """Count a failed sign-in for ``username``, and forget failures too old to matter."""
    now = timezone.now()
    with transaction.atomic():
        LoginFailure.objects.create(username=_key(username), at=now)
        LoginFailure.objects.filter(at__lt=now - 2 * WINDOW).delete()


def record_success(username: str) -> None:
    """A successful sign-in clears the username's failures."""
    LoginFailure.objects.filter(username=_key(username)).delete()
