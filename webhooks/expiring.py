"""``prompt.changed`` when a validity window closes (SPEC §19.2): no change is made
then, the clock moves past a memory's ``valid_until``, so nothing wakes a check. The
sweep, which runs every minute while any worker runs, wakes one for each agent with an
approved memory whose window closed since its last check.

Bounded: one query on the ``valid_until`` index over the last ``LOOKBACK`` (a worker
stopped longer than that tells those expiries with the next change instead), at most
``BATCH`` memories, and only for teams with an endpoint that wants ``prompt.changed``.
An agent whose check ran after the window closed is left alone, so each expiry wakes
at most one check however many sweeps see it.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from django.db.models import Exists, OuterRef

from memory.models import MemoryRecord, PromotionStatus
from webhooks.core.topics import PROMPT_CHANGED, wants
from webhooks.models import Endpoint, PromptMark
from webhooks.outbox import wake_checks

LOOKBACK = timedelta(days=1)
BATCH = 2000


def wake_expired(now: datetime) -> int:
    """Wake the ``prompt.changed`` check of every agent with an approved memory whose
    window closed in ``(now - LOOKBACK, now]`` after its last check; answers how many
    agents were woken."""
    checked_since = PromptMark.objects.filter(
        agent_id=OuterRef("agent_id"), at__gte=OuterRef("valid_until")
    )
    rows = (
        MemoryRecord.objects.filter(
            valid_until__gt=now - LOOKBACK,
            valid_until__lte=now,
            promotion__status=PromotionStatus.APPROVED,
        )
        .exclude(Exists(checked_since))
        .values_list("agent__team_id", "agent__slug")[:BATCH]
    )
    by_team: dict[int, set[str]] = defaultdict(set)
    for team_id, slug in rows:
        by_team[team_id].add(slug)
    if not by_team:
        return 0
    watching = {
        team_id
        for team_id, events in Endpoint.objects.filter(team_id__in=list(by_team)).values_list(
            "team_id", "events"
        )
        if wants(events, PROMPT_CHANGED)
    }
    woken = 0
    for team_id in sorted(watching):
        slugs = sorted(by_team[team_id])
        wake_checks(team_id, slugs)
        woken += len(slugs)
    return woken
