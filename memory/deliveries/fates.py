"""What has happened to each memory of a delivered prompt since it was delivered: still
in the prompt, erased, superseded, revoked or rejected (by whom, when), pending, out,
deleted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from memory.core.explain import short_words
from memory.models import EventKind, MemoryEvent, MemoryRecord, Promotion, PromotionStatus


@dataclass(frozen=True)
class Fate:
    """A delivered memory's state now: ``in-prompt``, ``erased``, ``superseded``, ``revoked``,
    ``rejected``, ``pending``, ``out`` (not composed, for a reason the lens shows) or
    ``deleted``; ``by``/``at`` say who and when where known; ``newer`` is the
    superseding memory's id.
    """

    state: str
    by: str = ""
    at: datetime | None = None
    newer: str = ""

    @property
    def words(self) -> str:
        """One line for people: "revoked by mira", "superseded by 0hon…"."""
        if self.state == "in-prompt":
            return "still in the prompt"
        if self.state == "erased":
            return f"erased by {self.by}" if self.by else "erased"
        if self.state == "superseded":
            return f"superseded by {self.newer}"
        if self.state in ("revoked", "rejected") and self.by:
            return f"{self.state} by {self.by}"
        if self.state == "pending":
            return short_words("awaiting-approval")  # the words every page uses
        if self.state == "out":
            return "no longer in the prompt"
        if self.state == "deleted":
            return "deleted since"
        return self.state


def fates(memory_ids: Iterable[str], live: frozenset[str]) -> dict[str, Fate]:
    """What has happened to each of ``memory_ids`` since it was delivered, given the
    memories the live prompt holds (three queries whatever the number of ids).
    """
    ids = list(memory_ids)
    statuses: dict[str, str] = {}
    erasures: dict[str, tuple[str, datetime]] = {}
    for record_id, status, erased_by, erased_at in Promotion.objects.filter(
        record_id__in=ids
    ).values_list("record_id", "status", "record__erased_by", "record__erased_at"):
        statuses[record_id] = status
        if erased_at is not None:
            erasures[record_id] = (erased_by, erased_at)
    newer = {
        old: (new, at)
        for new, old, at in MemoryRecord.objects.filter(supersedes_id__in=ids)
        .order_by("created_at")
        .values_list("id", "supersedes_id", "created_at")
    }
    decided = {
        event.record_id: event
        for event in MemoryEvent.objects.filter(
            record_id__in=ids, kind__in=(EventKind.REVOKED, EventKind.REJECTED)
        ).order_by("at", "id")
    }
    found: dict[str, Fate] = {}
    for memory_id in ids:
        event = decided.get(memory_id)
        if memory_id in erasures:
            by, at = erasures[memory_id]
            found[memory_id] = Fate("erased", by=by, at=at)
        elif memory_id not in statuses:
            found[memory_id] = Fate("deleted")
        elif memory_id in live:
            found[memory_id] = Fate("in-prompt")
        elif memory_id in newer:
            found[memory_id] = Fate("superseded", at=newer[memory_id][1], newer=newer[memory_id][0])
        elif event is not None and statuses[memory_id] in (
            PromotionStatus.REJECTED,
            PromotionStatus.REVOKED,
        ):
            found[memory_id] = Fate(event.kind, by=event.actor, at=event.at)
        elif statuses[memory_id] == PromotionStatus.PENDING:
            found[memory_id] = Fate("pending")
        else:
            found[memory_id] = Fate("out")
    return found
