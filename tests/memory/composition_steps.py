"""Changes of every kind an agent's composition is made of, and a check that the
composition kept for the agent's stamp (``memory.composed``) is the one composing
afresh gives: run by the test process and by a peer process alike
(``tests.memory.composition_peer``), so each sees the other's changes only through the
database."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import User
from django.utils import timezone

from lens.actors import SYSTEM, Actor
from lens.agents import with_config
from lens.core.config import AgentConfig
from lens.models import Agent, Team
from memory.composed import current, stamped_agent
from memory.composition import compose
from memory.configuring import restore_revision, store_config
from memory.core.records import MemoryInput
from memory.decisions import decide, revoke
from memory.erasure import erase_memory
from memory.models import Promotion, PromotionStatus
from memory.saving import save_memory
from memory.validity import change_validity
from tests.factories import memory_config

REVIEWER = "mira"
CONTENTS = ("Lives in Lyon", "Prefers tea", "Works nights", "Has a cat", "Reads Rilke")
# What a preferences section can be: each a new revision of the declarations.
PREFERENCES = ("guarded", "auto", None)


def check(team: Team, slug: str) -> str:
    """The composition kept for ``slug``'s stamp, byte for byte the one composing afresh
    gives (asserted); its SHA-256."""
    kept = current(stamped_agent(team, slug)).canonical_json()
    fresh = compose(with_config(Agent.objects.filter(team=team, slug=slug)).get())
    assert kept == fresh.canonical_json(), f"{slug}: the kept composition is stale"
    return hashlib.sha256(kept.encode()).hexdigest()


def _ids(agent: Agent, *statuses: str) -> list[str]:
    rows = Promotion.objects.filter(agent=agent, status__in=statuses).order_by("record_id")
    return list(rows.values_list("record_id", flat=True))


def _pick(ids: list[str], pick: int) -> str | None:
    return ids[pick % len(ids)] if ids else None


def apply(team: Team, slug: str, step: list[Any]) -> None:
    """Make the change ``step`` names to ``team``'s agent ``slug``; one that does not
    apply now (nothing pending to decide) changes nothing."""
    agent = with_config(Agent.objects.filter(team=team, slug=slug)).select_related("team").get()
    reviewer = Actor.for_user(User.objects.get(username=REVIEWER))
    match step:
        case ["save", kind, content, label]:
            data = MemoryInput(kind=kind, content=CONTENTS[content], label=label)
            save_memory(agent, data, SYSTEM)
        case ["decide", pick, approve]:
            if (found := _pick(_ids(agent, PromotionStatus.PENDING), pick)) is not None:
                decide(found, approve, reviewer)
        case ["revoke", pick]:
            if (found := _pick(_ids(agent, PromotionStatus.APPROVED), pick)) is not None:
                revoke(found, reviewer)
        case ["erase", pick]:
            live = _ids(agent, PromotionStatus.APPROVED, PromotionStatus.PENDING)
            if (found := _pick(live, pick)) is not None:
                erase_memory(found, reviewer, "The user asked for it to be forgotten.")
        case ["validity", pick, hours]:
            if (found := _pick(_ids(agent, PromotionStatus.APPROVED), pick)) is not None:
                until = None if hours is None else timezone.now() + timedelta(hours=hours)
                change_validity(found, until, reviewer)
        case ["declare", preferences, timezone_name]:
            config = memory_config(PREFERENCES[preferences])
            config["background"]["sections"][0]["entries"][0]["value"] = timezone_name
            store_config(team, slug, AgentConfig.model_validate(config), actor=reviewer)
        case ["restore"]:
            restore_revision(agent, 1, reviewer)
        case _:
            raise AssertionError(f"no such step: {step!r}")
