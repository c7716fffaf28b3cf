"""The routing report: every memory that did not reach the prompt, and why.

Pure: ids and reasons only, never memory content.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from operator import attrgetter
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

# In order of precedence (SPEC §5.6): when several apply, the first is reported.
DropReason = Literal[
    "erased",
    "superseded",
    "expired",
    "spec-declined",
    "undeclared-section",
    "locked-section",
    "earning",
    "corroborating",
    "awaiting-approval",
    "rejected",
    "revoked",
    "authored-wins",
    "reconciled",
    "over-budget",
]
DROP_REASONS: tuple[DropReason, ...] = get_args(DropReason)

# The outcomes decided when a memory is saved that keep it out of every section.
DeclineReason = Literal["spec-declined", "undeclared-section", "locked-section"]
# As a lookup that keeps the reason's type (a set membership test would not).
_DECLINED: dict[str, DeclineReason] = {reason: reason for reason in get_args(DeclineReason)}

# What each reason means, in words, for one memory; the words that name the authored
# entry, the newer memory, the budget or the reviewer are ``memory.core.explain``'s.
DROP_REASON_HELP: dict[str, str] = {
    "erased": "It was erased on request: its content, label and tags are gone for good.",
    "superseded": "A newer memory replaced it.",
    "expired": "Its validity window has closed: it was saved as true until a moment now past.",
    "spec-declined": "The routing spec does not place this kind of memory, so it stays "
    "recall-only.",
    "undeclared-section": "It was routed to a section this agent does not declare.",
    "locked-section": "Its section is locked: memory never fills it.",
    "earning": "Its section is earned: it enters the prompt once the same memory has been "
    "saved in enough distinct sessions.",
    "corroborating": "It saw again a memory that is not in the prompt (still earning its "
    "place, or left out for a reason of its own); it joins that memory's line once it "
    "composes.",
    "awaiting-approval": "Its section is guarded: a person approves each memory before it "
    "enters the prompt.",
    "rejected": "A reviewer rejected it.",
    "revoked": "A reviewer took it out of the prompt after approving it.",
    "authored-wins": "An authored entry holds the same key, and authored entries always win.",
    "reconciled": "Another memory at the same place won.",
    "over-budget": "Its line does not fit in what is left of the memory budget; recall "
    "may still bring it, as spilled.",
}


@dataclass(frozen=True, slots=True)
class Drop:
    # A dataclass, not a model: a report can hold tens of thousands of these, and
    # building a validated model per drop would dominate the fold's time.
    memory_id: str
    reason: DropReason


class ReportStats(BaseModel):
    model_config = ConfigDict(frozen=True)

    placed: int = 0
    composed: int = 0
    # Stored rows that no longer read as records: skipped by every reader (SPEC §6.3).
    unreadable: int = 0
    drops_by_reason: dict[str, int] = Field(default_factory=dict)
    chars_used: dict[str, int] = Field(default_factory=lambda: {"background": 0})


class RoutingReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    drops: tuple[Drop, ...] = ()
    stats: ReportStats = ReportStats()


@dataclass(frozen=True, slots=True)
class PromotionState:
    """What the report needs of one record's promotion row: its id, status and reason."""

    memory_id: str
    # A promotion row's status: pending, approved, rejected, revoked, declined,
    # superseded or erased.
    status: str
    # The save-time outcome for a declined row (spec-declined, undeclared-section, ...),
    # ``earning`` for a pending row of an earned section.
    reason: str = ""
    # A sighting (status ``corroborates``): the earning memory it saw again.
    holder: str | None = None
    # The record's validity window (SPEC §19.2): expired from this moment; None: never.
    valid_until: datetime | None = None


def expired(valid_until: datetime | None, now: datetime | None) -> bool:
    """Whether a window closing at ``valid_until`` has closed at ``now`` (SPEC §19.2):
    at its very moment it has. No ``now``: validity is not judged."""
    if valid_until is None or now is None:
        return False
    return _aware(valid_until) <= _aware(now)


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def routing_report(
    states: Iterable[PromotionState],
    fold: RoutingReport,
    unreadable: frozenset[str] | set[str] = frozenset(),
    now: datetime | None = None,
) -> RoutingReport:
    """Every record not composed, with exactly one reason (SPEC §5.6 precedence).

    Erased first (nothing of it is left to compose, whatever else became of it), then
    superseded; then expired (its ``valid_until`` at or before ``now``, the time the
    fold was given, whatever its promotion's status); then the promotion's own outcome
    (declined at save time, earning or corroborating while earning, awaiting approval,
    rejected, revoked); then the fold's reason for an approved record.
    """
    fold_reasons = {drop.memory_id: drop.reason for drop in fold.drops}
    states = list(states)
    # A sighting composes with its holder's line: only when the holder was given to the
    # fold (approved, readable) and the fold did not drop the sighting.
    folded = {
        s.memory_id for s in states if s.status == "approved" and s.memory_id not in unreadable
    }
    drops: list[Drop] = []
    for state in states:
        if state.memory_id in unreadable:
            continue  # skipped and counted, never reported as if it had been read
        reason: DropReason | None
        if state.status == "erased":
            reason = "erased"
        elif state.status == "superseded":
            reason = "superseded"
        elif expired(state.valid_until, now):
            reason = "expired"
        elif state.status == "declined":
            reason = _DECLINED.get(state.reason, "spec-declined")
        elif state.status == "corroborates":
            composed = state.holder in folded and state.memory_id not in fold_reasons
            reason = None if composed else "corroborating"
        elif state.status == "pending":
            reason = "earning" if state.reason == "earning" else "awaiting-approval"
        elif state.status == "rejected":
            reason = "rejected"
        elif state.status == "revoked":
            reason = "revoked"
        else:
            reason = fold_reasons.get(state.memory_id)
        if reason is not None:
            drops.append(Drop(memory_id=state.memory_id, reason=reason))
    drops.sort(key=attrgetter("memory_id"))  # one drop per record at most
    stats = fold.stats.model_copy(
        update={
            "drops_by_reason": dict(sorted(Counter(d.reason for d in drops).items())),
            "unreadable": len(unreadable),
        }
    )
    # Every part is already validated; skip re-validating thousands of drops.
    return RoutingReport.model_construct(drops=tuple(drops), stats=stats)
