"""``prompt.changed`` (SPEC §16): after a change that may recompose an agent, the worker
composes it and compares with the last composition it saw (``PromptMark``). When the
prompt differs, every endpoint that wants the event gets ``{"agent", "from_sha256",
"to_sha256", "causes"}``, the causes being the revisions and memory events since the
mark, as a delivery diff lists them (SPEC §14).

This runs in the worker, after the commit, so a change never waits for a composition.
Changes that land close together may be told as one event with all their causes; a
change that leaves the prompt as it was is told by no event.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from lens.agents import with_config
from lens.audit import stamp
from lens.models import Agent
from lens.revisions import current_number
from memory.as_of import compose_as_of, revision_at
from memory.composed import current_composition
from memory.deliveries.causes import causes_since
from webhooks.core.topics import PROMPT_CHANGED, wants
from webhooks.models import Endpoint, PromptMark
from webhooks.outbox import queue_message


def prompt_sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def check(team_id: int, slug: str) -> bool:
    """Compare ``slug``'s prompt with its mark; queue ``prompt.changed`` when it differs.

    ``waking`` is cleared first, in its own commit: a change after that wakes another
    check, and one before is seen by the composition below (on PostgreSQL the clearing
    waits for the change's lock on the mark). The agent is composed before the mark is
    locked (on SQLite the lock is the database's one writer, which no composition should
    hold); a check that composed earlier than the mark's time was overtaken by a later
    one and leaves it alone.
    """
    agent = with_config(Agent.objects.filter(team_id=team_id, slug=slug)).first()
    if agent is None:  # deleted since: its deletion is its own event
        return False
    PromptMark.objects.filter(agent=agent).update(waking=False)
    since = _watched_since(agent)
    if since is None:  # no endpoint wants the event any more
        return False
    now = timezone.now()
    revision = current_number(agent)
    current = prompt_sha256(current_composition(agent).prompt.text)
    _first_mark(agent, max(since, agent.created_at))
    with transaction.atomic():
        mark = PromptMark.objects.select_for_update().get(agent=agent)
        if mark.at is not None and mark.at >= now:
            return False
        changed = current != mark.prompt_sha256
        if changed:
            _queue(agent, mark, current, revision, now)
        PromptMark.objects.filter(pk=mark.pk).update(
            prompt_sha256=current, revision=revision, at=now
        )
    return changed


def _watched_since(agent: Agent) -> datetime | None:
    """When the team's first endpoint that wants ``prompt.changed`` was made (a team
    keeps at most ``ENDPOINTS_MAX``: they are all read)."""
    made = Endpoint.objects.filter(team_id=agent.team_id).values_list("created_at", "events")
    since = [at for at, subscribed in made if wants(subscribed, PROMPT_CHANGED)]
    return min(since) if since else None


def _first_mark(agent: Agent, moment: datetime) -> None:
    """The agent's first comparison point, when it has none: its prompt as it stood at
    ``moment`` (when the team's first endpoint to want ``prompt.changed`` was made, or
    the agent, if later). Exact however late the check runs: a composition can be
    recomposed as of any moment (SPEC §14)."""
    if PromptMark.objects.filter(agent=agent).exclude(prompt_sha256="").exists():
        return
    baseline = {
        "prompt_sha256": prompt_sha256(compose_as_of(agent, moment).prompt.text),
        "revision": _revision_at(agent, moment),
        "at": moment,
    }
    made = PromptMark.objects.filter(agent=agent, prompt_sha256="").update(**baseline)
    if not made:
        PromptMark.objects.bulk_create([PromptMark(agent=agent, **baseline)], ignore_conflicts=True)


def _revision_at(agent: Agent, moment: datetime) -> int:
    found = revision_at(agent, moment)
    return found.number if found is not None else 0


def _queue(agent: Agent, mark: PromptMark, current: str, revision: int, now: datetime) -> None:
    # Every mark has its time once its first comparison point is set (``_first_mark``).
    since = mark.at or agent.created_at
    causes = causes_since(agent.pk, (mark.revision, revision), since, now)
    data: dict[str, Any] = {
        "agent": agent.slug,
        "from_sha256": mark.prompt_sha256,
        "to_sha256": current,
        "causes": [_stamped(item) for item in causes.items],
        "causes_total": causes.total,
    }
    queue_message(agent.team_id, PROMPT_CHANGED, stamp(now), data, now)


def _stamped(item: dict[str, Any]) -> dict[str, Any]:
    return {
        key: stamp(value) if isinstance(value, datetime) else value for key, value in item.items()
    }
