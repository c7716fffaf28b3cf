"""Routing preview (SPEC §5.7): what saving a memory would do, without saving it.

It routes and gates exactly as ``memory_save`` does (the same functions), then asks the
fold whether the memory would reach the prompt now. It writes nothing: no record,
promotion row or event. Its answer is for people and tools that configure agents;
``memory_save`` itself never reveals routing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from lens.agents import config_of
from lens.core.background import Tier
from lens.models import Agent
from memory.core.outcome import (
    INSTRUCTION_SHAPED,
    HoldReason,
    PendingReason,
    route_outcome,
    screened,
    system_may_approve,
)
from memory.core.overlay import apply_memory_overlay, entry_cost
from memory.core.records import MemoryInput
from memory.core.report import DeclineReason, DropReason
from memory.core.routing import KeySource, PlacedRecord, Placement, spec_key_source
from memory.core.screening import Screen, screen
from memory.core.sightings import Sighting, distinct_sessions
from memory.models import MemoryRecord, Promotion, PromotionStatus
from memory.queries import placed_of, placed_records
from memory.saving import Conflict, Routed, gate, next_timestamp, route
from memory.sightings import EARNING, earned_sightings, sightings_of

# Sorts after every real id ([0-9a-z]), so it never wins a tie it should not.
CANDIDATE_ID = "~candidate"

# A sighting that earns its holder its place: the holder is approved by the system.
EarnedReason = Literal["earned"]


@dataclass(frozen=True)
class Preview:
    outcome: Literal["approved", "pending", "declined", "conflict"]
    placement: Placement | None
    key_source: KeySource | None
    tier: Tier | None
    reason: DeclineReason | PendingReason | HoldReason | EarnedReason | None
    existing: MemoryRecord | None  # the holder, when the gate would answer conflict
    would_compose: bool  # approved, and the fold would render it now
    # Why the fold would leave a placed memory out now (authored-wins, over-budget).
    fold_reason: DropReason | None
    # For people (the lens): over-budget's characters needed and left of the budget.
    needed: int | None = None
    left: int | None = None
    budget: int = 0
    # The screen (SPEC §19.4): does the content read as an instruction to the model?
    screen: Screen = Screen("fact")
    # A sighting (SPEC §19.1): the memory it would see again, and the distinct sessions
    # that memory would then have been seen in, of the ``needed_sessions`` that earn it
    # its place. The outcome, reason and fold are the holder's line's, as the save
    # leaves it: ``approved`` with reason ``earned`` when this save earns it its place.
    corroborates: str | None = None
    sessions: int | None = None
    needed_sessions: int | None = None


def preview_save(agent: Agent, data: MemoryInput) -> Preview:
    """What ``save_memory(agent, data, ...)`` would decide, and whether the result would
    be composed now. Raises the same errors as a save (UnknownSupersedes).
    """
    routed = route(agent, data)
    placement, spec = routed.placement, routed.spec
    key_source = spec_key_source(spec, routed.routable) if placement and spec else None
    screened_as = screen(data.content)
    outcome = screened(route_outcome(placement, routed.ctx), data.content, screened_as)
    found = gate(agent, routed, data.supersedes)
    if isinstance(found, Conflict):
        return Preview(
            "conflict",
            placement,
            key_source,
            outcome.tier,
            None,
            found.existing,
            False,
            None,
            screen=screened_as,
        )
    if found is not None:
        return _sighting(agent, data, routed, found.holder, key_source, screened_as)
    fold = Fold(None, None, None)
    if placement is not None and outcome.status != "declined":
        fold = _fold(agent, routed, placement, key_source or "content", data.valid_until)
    return Preview(
        outcome=outcome.status,
        placement=placement,
        key_source=key_source,
        tier=outcome.tier,
        reason=outcome.reason,
        existing=None,
        would_compose=outcome.status == "approved" and fold.reason is None,
        fold_reason=fold.reason,
        needed=fold.needed,
        left=fold.left,
        budget=settings.MEMORY_OVERLAY_BUDGET_CHARS,
        screen=screened_as,
    )


def _sighting(
    agent: Agent,
    data: MemoryInput,
    routed: Routed,
    holder_id: str,
    key_source: KeySource | None,
    screened_as: Screen,
) -> Preview:
    """A save that would be a sighting of ``holder_id`` (SPEC §19.1), judged as the save
    judges it: what becomes of the holder's line once this save is counted."""
    row = Promotion.objects.select_related("record").get(record_id=holder_id)
    at = next_timestamp(agent)
    seen = [*sightings_of([holder_id])[holder_id], Sighting(CANDIDATE_ID, data.session, at)]
    sessions, needed = distinct_sessions(seen), earned_sightings()
    tier: Tier | None = "earned" if row.tier == "earned" else None
    reason: PendingReason | HoldReason | EarnedReason | None
    if row.status == PromotionStatus.APPROVED:
        status: Literal["approved", "pending"] = "approved"
        reason = None
    elif row.reason == EARNING and sessions >= needed:
        if system_may_approve(screen(row.record.content)):
            status, reason = "approved", "earned"
        else:
            status, reason = "pending", INSTRUCTION_SHAPED
    else:
        status = "pending"
        reason = INSTRUCTION_SHAPED if row.reason == INSTRUCTION_SHAPED else "earning"
    fold = Fold(None, None, None)
    if status == "approved" or reason == INSTRUCTION_SHAPED:
        # What the holder's line would meet in the fold, approved, with this sighting.
        fold = _fold_holder(agent, routed, holder_id)
    return Preview(
        outcome=status,
        placement=routed.placement,
        key_source=key_source,
        tier=tier,
        reason=reason,
        existing=None,
        would_compose=status == "approved" and fold.reason is None,
        fold_reason=fold.reason,
        needed=fold.needed,
        left=fold.left,
        budget=settings.MEMORY_OVERLAY_BUDGET_CHARS,
        screen=screened_as,
        corroborates=holder_id,
        sessions=sessions,
        needed_sessions=needed,
    )


def _fold_holder(agent: Agent, routed: Routed, holder_id: str) -> Fold:
    """The fold's reason to leave ``holder_id``'s line out if it were approved now with
    the candidate among its sightings (None: it would be composed)."""
    placed = [p for p in placed_records([agent.pk]).of(agent.pk) if p.id != holder_id]
    rows = Promotion.objects.filter(
        Q(record_id=holder_id) | Q(corroborates_id=holder_id, status=PromotionStatus.CORROBORATES)
    )
    found = placed_of(rows).of(agent.pk)
    if not found:
        return Fold(None, None, None)  # pragma: no cover - a holder that no longer reads
    holder = replace(found[0], sightings=(*found[0].sightings, CANDIDATE_ID))
    return _judged(agent, routed, placed, holder)


@dataclass(frozen=True)
class Fold:
    reason: DropReason | None
    needed: int | None  # over-budget: the candidate's line
    left: int | None  # over-budget: what the composed memories leave of the budget


def _fold(
    agent: Agent,
    routed: Routed,
    placement: Placement,
    key_source: KeySource,
    valid_until: datetime | None,
) -> Fold:
    """The fold's reason to leave the candidate out if it were approved now (None: it
    would be composed), with the characters it needs and those left when over budget."""
    superseded = routed.older.pk if routed.older is not None else None
    placed = [p for p in placed_records([agent.pk]).of(agent.pk) if p.id != superseded]
    candidate = PlacedRecord(
        id=CANDIDATE_ID,
        kind=routed.routable.kind,
        content=routed.routable.content,
        created_at=next_timestamp(agent),
        section=placement.section,
        key=placement.key,
        tags=routed.routable.tags,
        label=routed.routable.label,
        key_source=key_source,
        valid_until=valid_until,
    )
    return _judged(agent, routed, placed, candidate)


def _judged(agent: Agent, routed: Routed, placed: list[PlacedRecord], judged: PlacedRecord) -> Fold:
    """Fold ``judged`` in among the agent's ``placed`` memories now, and say why it
    stays out (None: it composes), with what it needs and what is left when over budget."""
    budget = settings.MEMORY_OVERLAY_BUDGET_CHARS
    _background, report = apply_memory_overlay(
        config_of(agent).background, [*placed, judged], routed.spec, budget, now=timezone.now()
    )
    reason = next((d.reason for d in report.drops if d.memory_id == judged.id), None)
    if reason != "over-budget":
        return Fold(reason, None, None)
    left = budget - report.stats.chars_used["background"]
    return Fold(reason, entry_cost(judged, routed.spec), left)
