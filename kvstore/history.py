"""What a key's page shows about its versions: the choices of the version pickers, and
what each version of a history page changed compared with the one before.

History stays metadata-first: the pickers read no payload, and the previews read the
payloads of one history page (plus the version just before it) in a single query, one
at a time, keeping only the previous one in memory. Each preview's comparison has a
step budget and the page has one too, so a page of 50 versions of 36,000 characters
costs a known amount.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q

from kvstore.models import Key, Version
from lens.core.line_diffs import Change, change

# The pickers list this many of the newest versions (plus any version asked for).
PICKER_MAX = 100
# Steps for one version's preview, and for a whole history page.
VERSION_BUDGET = 30_000
PAGE_BUDGET = 150_000
# Payloads fetched from the database at a time while previews are computed.
_CHUNK = 4


@dataclass(frozen=True)
class Choice:
    version: int
    written_at: datetime
    runes: int


def choices(row: Key, *asked: int) -> list[Choice]:
    """The newest PICKER_MAX versions, newest first, plus the ``asked`` ones if older.

    One query: versions run 1..latest without gaps, so the newest are a range.
    """
    newest = Q(version__gt=row.latest_version - PICKER_MAX)
    rows = (
        Version.objects.filter(newest | Q(version__in=asked), key=row)
        .order_by("-version")
        .values_list("version", "written_at", "runes")
    )
    return [Choice(*values) for values in rows]


def changes(row: Key, numbers: Iterable[int]) -> dict[int, Change]:
    """For each version in ``numbers``, what it changed from the one before (the first
    version: from nothing)."""
    wanted = set(numbers)
    if not wanted:
        return {}
    payloads = (
        Version.objects.filter(key=row, version__gte=min(wanted) - 1, version__lte=max(wanted))
        .order_by("version")
        .values_list("version", "payload")
        .iterator(chunk_size=_CHUNK)
    )
    left = PAGE_BUDGET
    found: dict[int, Change] = {}
    previous: tuple[int, str] | None = None
    for number, payload in payloads:
        # The first version changed everything from nothing.
        before = (
            "" if number == 1 else previous[1] if previous and previous[0] == number - 1 else None
        )
        if number in wanted and before is not None:
            budget = [min(VERSION_BUDGET, left)]
            found[number] = change(before, payload, budget)
            left -= min(VERSION_BUDGET, left) - budget[0]
        previous = (number, payload)
    return found
