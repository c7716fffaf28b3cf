"""Validity windows (SPEC §19.2): a reviewer sets, moves or clears when a memory stops
being true. Nothing else of the record changes; each change is one ``validity`` event
and one ``memory.validity_changed`` audit event, in the change's transaction.

The window is judged where memories are composed (the fold takes the time) and recalled;
this module only changes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from lens.actors import Actor
from lens.core.errors import DomainError
from lens.models import Team
from memory.events import write_events
from memory.models import EventKind, MemoryRecord, new_event
from memory.saving import check_valid_until


class ErasedMemory(DomainError):
    """An erased memory has nothing left to be valid or not."""

    code = "memory_erased"


@dataclass(frozen=True)
class ValidityChanged:
    record_id: str
    before: datetime | None
    after: datetime | None
    # False when the window already was ``after``: nothing was written.
    changed: bool


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def change_validity(
    record_id: str, valid_until: datetime | None, actor: Actor, *, team: Team | None = None
) -> ValidityChanged | None:
    """Set ``record_id``'s ``valid_until`` (None clears it); None when there is no such
    memory (of ``team``, when given). Raises InvalidValidUntil when ``valid_until`` is
    not after now, ErasedMemory for an erased memory. Setting the window it already has
    writes nothing."""
    rows = MemoryRecord.objects.filter(pk=record_id)
    if team is not None:
        rows = rows.filter(agent__team=team)
    with transaction.atomic():
        # Locked, so two reviewers' changes are told in the order they land.
        record = rows.select_for_update().select_related("agent").first()
        if record is None:
            return None
        if record.erased:
            raise ErasedMemory(f"Memory {record_id} was erased: it has no window to change.")
        at = timezone.now()
        check_valid_until(valid_until, at)
        before = record.valid_until
        if before == valid_until:
            return ValidityChanged(record.pk, before, valid_until, changed=False)
        MemoryRecord.objects.filter(pk=record.pk).update(valid_until=valid_until)
        detail = {"from": _iso(before), "to": _iso(valid_until)}
        write_events(
            [new_event(record.pk, record.agent_id, EventKind.VALIDITY, actor, at, **detail)],
            agent=record.agent,
        )
    return ValidityChanged(record.pk, before, valid_until, changed=True)
