"""The login throttle (SPEC §13): after ``MAX_FAILURES`` failed sign-ins for one username
within ``WINDOW``, sign-ins for it are refused until ``WINDOW`` after the last of them,
even with the right password. Other usernames are unaffected; a success starts afresh.

Failures live in the database, so every server process counts the same ones. Rows older
than twice the window can no longer matter and are pruned as new attempts arrive.

An attempt is counted before its password is checked (``reserve``), one username at a
time, so parallel attempts cannot all pass the check before any of them is counted: with
the count taken after the check, 20 parallel wrong passwords had 11 to 15 of them checked;
now at most ``MAX_FAILURES`` are. A reserved attempt stays counted as a failure unless the
sign-in works (``record_success``) or fails for another reason than the password
(``release``).
"""

from __future__ import annotations

import hashlib
import math
from datetime import datetime, timedelta

from django.db import connection, transaction
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


class Throttled(Exception):
    """Sign-ins for the username are refused until ``until``."""

    def __init__(self, until: datetime) -> None:
        super().__init__(f"refused until {until.isoformat()}")
        self.until = until


def reserve(username: str) -> int:
    """Count a sign-in attempt for ``username`` before its password is checked, and
    return the attempt's id; raise ``Throttled`` (counting nothing) when it is refused.

    The check and the count happen in one transaction that holds the username's lock, so
    each attempt sees every attempt reserved before it, finished or not.
    """
    key = _key(username)
    with transaction.atomic():
        _lock(key)
        now = timezone.now()  # read under the lock: no attempt counted before is later
        until = refused_until(key, now)
        if until is not None:
            raise Throttled(until)
        attempt = LoginFailure.objects.create(username=key, at=now)
        LoginFailure.objects.filter(at__lt=now - 2 * WINDOW).delete()
    return attempt.pk


def _lock(key: str) -> None:
    """Hold ``key``'s lock until the transaction ends.

    PostgreSQL: an advisory lock on a 64-bit hash of the key (a collision only makes two
    usernames queue behind each other). SQLite: nothing to do, the transaction took the
    database's write lock at BEGIN (``transaction_mode`` IMMEDIATE, lens/settings.py).
    """
    if connection.vendor == "postgresql":
        digest = hashlib.blake2b(f"lens.serving.throttle:{key}".encode(), digest_size=8).digest()
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(%s)", [int.from_bytes(digest, signed=True)]
            )


def release(attempt: int) -> None:
    """Forget a reserved attempt that failed for another reason than the password (for
    example a non-staff user with the right password at the admin's door)."""
    LoginFailure.objects.filter(pk=attempt).delete()


def record_success(username: str) -> None:
    """A successful sign-in clears the username's failures."""
    LoginFailure.objects.filter(username=_key(username)).delete()
