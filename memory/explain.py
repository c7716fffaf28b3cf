"""Gathering the facts that explain an agent's memories, from the database (SPEC §5.6, §9).

The composition says which memories are in the prompt and the routing report gives
every other one a reason code. This service gathers the facts behind each code — the
authored entry that wins, the newer memory, the characters the budget had left, who
decided and why — and hands them to ``memory.core.explain`` for the words. It reads
them in a fixed number of queries however many memories there are.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from django.conf import settings
from django.db.models import Case, F, QuerySet, When
from django.db.models.functions import Substr
from django.utils import timezone

from lens.agents import background_of, load_entry_values
from lens.core.text import value_text
from lens.models import Agent
from lens.rows import aware
from memory.core.composition import Composition
from memory.core.explain import UNREADABLE, UNROUTED, Explanation, Facts, explain
from memory.core.overlay import apply_memory_overlay, entry_cost
from memory.core.report import PromotionState, routing_report
from memory.core.routing import PlacedRecord
from memory.core.sightings import distinct_sessions
from memory.models import EventKind, MemoryEvent, MemoryRecord, Promotion, PromotionStatus
from memory.queries import (
    SNIPPET_CHARS,
    Reopening,
    latest_reopenings,
    placed_records,
    reopenings,
)
from memory.registry import get_spec
from memory.sightings import earned_sightings, sightings_of

# Up to this many ids, rows are looked up by id; past it, by agent and kept in Python
# (one long ``IN`` list costs more than reading the agent's rows). A lens page explains
# at most 100 drops of each reason (``web.pages.drop_pages``): always by id.
_BY_ID_UP_TO = 1_200
_DECIDED = (PromotionStatus.REJECTED, PromotionStatus.REVOKED)

_Address = tuple[str, str]
# A line's cost reads its key and value only; the time a cost-only record carries.
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class _Row:
    """What one promotion row says about its memory."""

    memory_id: str
    status: str
    reason: str
    section: str | None
    key: str | None
    tier: str | None
    spec_key: str
    spec_version: str
    promoted_at: datetime | None  # read for a pending row only
    decided_by: str | None
    decided_at: datetime | None  # read for a rejected or revoked row only
    note: str
    kind: str
    content: str | None  # read for an approved row only: an over-budget line's cost
    holder: str | None  # a sighting's: the earning memory it saw again
    valid_until: datetime | str | None  # unconverted: said only of an expired memory


def explain_agent(
    agent: Agent, composition: Composition, record_ids: Collection[str] | None = None
) -> dict[str, Explanation]:
    """Every memory of ``agent`` (only ``record_ids`` when given): in the prompt of
    ``composition`` (``memory.composition.compose(agent)``), or why not.

    Reads at most five queries whatever the number of memories; with ``record_ids``,
    only those memories' rows.
    """
    wanted = None if record_ids is None else set(record_ids)
    rows = _rows(agent, wanted)
    composed = _composed(composition)
    drops = {drop.memory_id: drop.reason for drop in composition.report.drops}
    reasons: dict[str, str | None] = {}
    for memory_id in rows:
        if memory_id in composed:
            reasons[memory_id] = None
        else:
            reasons[memory_id] = drops.get(memory_id, UNREADABLE)
    context = _Context(agent, composition, rows, reasons, composed, drops)
    found = {memory_id: explain(context.facts(rows[memory_id])) for memory_id in rows}
    for memory_id in (wanted or set()) - set(rows):
        found[memory_id] = explain(Facts(memory_id, reason=UNROUTED, agent=agent.slug))
    return found


def explain_memory(agent: Agent, composition: Composition, record_id: str) -> Explanation:
    """One memory of ``agent``: in the prompt, or why not."""
    return explain_agent(agent, composition, [record_id])[record_id]


def prompt_reasons(
    records: Sequence[MemoryRecord], agents: Iterable[Agent]
) -> dict[str, str | None]:
    """Why each of ``records`` is not in its agent's prompt now (None: it is).

    ``records`` come with their promotion rows (``select_related("promotion")``);
    ``agents`` hold their agents, with ``prefetch_related("sections")``. Each agent
    among the records is folded once — the overlay fold alone, which decides what the
    prompt holds, without rendering or counting tokens — and only these records' states
    are read, so a listing's page costs three queries whatever its rows and agents.
    """
    states: dict[int, list[PromotionState]] = defaultdict(list)
    for record in records:
        promotion = _promotion_of(record)
        if promotion is not None:
            states[record.agent_id].append(
                PromotionState(
                    record.pk,
                    promotion.status,
                    promotion.reason,
                    holder=promotion.corroborates_id,
                    valid_until=record.valid_until,
                )
            )
    wanted = {record.agent_id for record in records}
    shown = [agent for agent in agents if agent.pk in wanted]
    load_entry_values(shown)
    placed = placed_records([agent.pk for agent in shown])  # no query for no agents
    composed: set[str] = set()
    drops: dict[str, str] = {}
    now = timezone.now()
    for agent in shown:
        background, fold = apply_memory_overlay(
            background_of(agent),
            placed.of(agent.pk),
            get_spec(agent.routing_spec),
            settings.MEMORY_OVERLAY_BUDGET_CHARS,
            now=now,
        )
        composed.update(
            memory_id
            for section in background.sections
            for entry in section.entries
            for memory_id in entry.memory_ids
        )
        report = routing_report(states[agent.pk], fold, placed.unreadable.get(agent.pk, set()), now)
        drops.update((drop.memory_id, drop.reason) for drop in report.drops)
    found: dict[str, str | None] = {}
    for record in records:
        if record.pk in composed:
            found[record.pk] = None
        elif record.pk in drops:
            found[record.pk] = drops[record.pk]
        else:
            found[record.pk] = UNREADABLE if _promotion_of(record) else UNROUTED
    return found


def _promotion_of(record: MemoryRecord) -> Promotion | None:
    # Loaded by select_related: a missing row is cached as missing, never queried.
    return cast("Promotion | None", getattr(record, "promotion", None))


def _composed(composition: Composition) -> dict[str, tuple[str, str, str]]:
    """Each composed memory's (section id, section title, key)."""
    return {
        memory_id: (section.id, section.title, entry.key)
        for section in composition.background.sections
        for entry in section.entries
        for memory_id in entry.memory_ids
    }


def _rows(agent: Agent, wanted: set[str] | None) -> dict[str, _Row]:
    """The promotion rows of ``agent``'s memories (``wanted`` ones only), one query."""
    rows = Promotion.objects.filter(agent=agent)
    if wanted is not None and len(wanted) <= _BY_ID_UP_TO:
        rows = rows.filter(record_id__in=list(wanted))
    # Only the times a sentence says are read: converting every row's two timestamps
    # costs more than the rest of the row.
    values = rows.annotate(
        since=Case(When(status=PromotionStatus.PENDING, then=F("promoted_at"))),
        decided=Case(When(status__in=_DECIDED, then=F("decided_at"))),
        line=Case(When(status=PromotionStatus.APPROVED, then=F("record__content"))),
    ).values_list(
        "record_id",
        "status",
        "reason",
        "section",
        "key",
        "tier",
        "spec_key",
        "spec_version",
        "since",
        "decided_by__username",
        "decided",
        "decision_note",
        "record__kind",
        "line",
        "corroborates_id",
        "record__valid_until",
    )
    found = {}
    for value in values:
        row = _Row(*value)
        if wanted is None or row.memory_id in wanted:
            found[row.memory_id] = row
    return found


class _Context:
    """What the sentences of one agent's memories draw on, read once for all of them."""

    def __init__(
        self,
        agent: Agent,
        composition: Composition,
        rows: dict[str, _Row],
        reasons: dict[str, str | None],
        composed: dict[str, tuple[str, str, str]],
        drops: Mapping[str, str],
    ) -> None:
        self.agent = agent
        self.rows = rows
        # Every drop's reason: a sighting's sentence says why the memory it saw is out.
        self.drops = drops
        self.reasons = reasons
        self.composed = composed
        background = composition.background
        self.sections = {section.id: section for section in background.sections}
        self.authored = self._authored()
        self.budget: int = settings.MEMORY_OVERLAY_BUDGET_CHARS
        self.left = self.budget - composition.report.stats.chars_used.get("background", 0)
        self.winners = self._winners()
        self.newer = self._newer()
        self.briefs = self._briefs(self.winners.values())
        self.costs = self._costs()
        self.reopened = self._reopened()
        self.erasures = self._erasures()
        self.seen = self._seen()

    def _of(self, reason: str) -> list[str]:
        return [memory_id for memory_id, r in self.reasons.items() if r == reason]

    def _authored(self) -> dict[_Address, str]:
        """The authored value at each address an authored-wins memory names: authored
        entries are the ones no memory produced. Only those are put in words (a
        Background can hold thousands of entries)."""
        rows = [self.rows[memory_id] for memory_id in self._of("authored-wins")]
        wanted = {(row.section or "", row.key or "") for row in rows}
        if not wanted:
            return {}
        return {
            (section.id, entry.key): value_text(entry.value)
            for section in self.sections.values()
            for entry in section.entries
            if not entry.memory_ids and (section.id, entry.key) in wanted
        }

    def _winners(self) -> dict[str, str]:
        """For each reconciled memory, the memory holding its address now."""
        losers = self._of("reconciled")
        if not losers:
            return {}
        holders: dict[_Address, list[str]] = defaultdict(list)
        for memory_id, (section, _title, key) in self.composed.items():
            holders[(section, key)].append(memory_id)
        found = {}
        for memory_id in losers:
            row = self.rows[memory_id]
            holding = holders.get((row.section or "", row.key or ""))
            if holding:
                found[memory_id] = sorted(holding)[0]
        return found

    def _newer(self) -> dict[str, tuple[str, str]]:
        """For each superseded memory, the first memory that superseded it and its
        words (one query, skipped when none is superseded)."""
        superseded = self._of("superseded")
        if not superseded:
            return {}
        records = MemoryRecord.objects.filter(agent=self.agent, supersedes__isnull=False)
        if len(superseded) <= _BY_ID_UP_TO:
            records = records.filter(supersedes_id__in=superseded)
        wanted = set(superseded)
        found: dict[str, tuple[str, str]] = {}
        for newer, older, label, head in _brief_rows(
            records.order_by("created_at", "id"), "supersedes_id"
        ):
            if older in wanted and older not in found:
                found[older] = (newer, _words(label, head))
        return found

    def _briefs(self, memory_ids: Iterable[str]) -> dict[str, str]:
        """The words naming each of ``memory_ids`` (one query, skipped for none)."""
        ids = list(memory_ids)
        if not ids:
            return {}
        records = MemoryRecord.objects.filter(agent=self.agent, pk__in=ids)
        return {pk: _words(label, head) for pk, _pk, label, head in _brief_rows(records, "pk")}

    def _reopened(self) -> dict[str, Reopening]:
        """Who reopened each waiting memory that a reviewer put back in the queue (one
        query, skipped when none waits)."""
        waiting = self._of("awaiting-approval")
        if len(waiting) <= _BY_ID_UP_TO:
            return reopenings(waiting)
        events = MemoryEvent.objects.filter(agent=self.agent, kind=EventKind.REOPENED)
        found = latest_reopenings(
            events.order_by("at", "id").values_list("record_id", "actor", "at", "detail")
        )
        wanted = set(waiting)
        return {memory_id: found[memory_id] for memory_id in found.keys() & wanted}

    def _seen(self) -> dict[str, int]:
        """The distinct sessions that saved each earning memory so far, for its own
        sentence and its sightings' (one query, skipped when none is earning)."""
        seen_again = {
            holder
            for memory_id in self._of("corroborating")
            if (holder := self.rows[memory_id].holder) is not None
        }
        holders = set(self._of("earning")) | seen_again
        if not holders:
            return {}
        # A sighting's sentence names the memory it saw (one query more, only then).
        self.briefs.update(self._briefs(seen_again - self.briefs.keys()))
        return {holder: distinct_sessions(found) for holder, found in sightings_of(holders).items()}

    def _erasures(self) -> dict[str, tuple[str, datetime | None, str]]:
        """Who erased each erased memory, when and why (one query, skipped when none
        is erased)."""
        erased = self._of("erased")
        if not erased:
            return {}
        records = MemoryRecord.objects.filter(agent=self.agent, erased_at__isnull=False)
        if len(erased) <= _BY_ID_UP_TO:
            records = records.filter(pk__in=erased)
        return {
            pk: (by, at, why)
            for pk, by, at, why in records.values_list(
                "pk", "erased_by", "erased_at", "erase_reason"
            )
        }

    def _costs(self) -> dict[str, int]:
        """The characters each over-budget memory's line needs: the overlay's own
        measure (no query unless the spec renders lines from whole records)."""
        over = set(self._of("over-budget"))
        if not over:
            return {}
        spec = get_spec(self.agent.routing_spec)
        if getattr(spec, "render_entry", None) is not None:
            # The spec renders the line from the whole record: read it whole.
            placed = placed_records([self.agent.pk]).of(self.agent.pk)
            return {p.id: entry_cost(p, spec) for p in placed if p.id in over}
        # Otherwise a line is its key and content, read with the promotion rows (an
        # approved row's only: one decided since the fold has no line to measure).
        found = {}
        for memory_id in over:
            row = self.rows[memory_id]
            if row.content is not None:
                line = PlacedRecord(
                    memory_id, "", row.content, _EPOCH, row.section or "", row.key or ""
                )
                found[memory_id] = entry_cost(line, spec)
        return found

    def facts(self, row: _Row) -> Facts:
        reason = self.reasons[row.memory_id]
        section, title, key, tier = row.section, None, row.key, row.tier
        if reason is None:
            section, title, key = self.composed[row.memory_id]
        declared = self.sections.get(section or "")
        if declared is not None:
            title = declared.title
            if row.status != PromotionStatus.DECLINED:
                tier = declared.promotion  # the fold re-checks today's tier
        # Positional: this runs once per memory, thousands of times on a big lens.
        return Facts(
            row.memory_id,
            reason,
            row.kind,
            self.agent.slug,
            section,
            title,
            key,
            tier,
            **(self._detail(reason, row) if reason is not None else {}),
        )

    def _detail(self, reason: str, row: _Row) -> dict[str, Any]:
        """The facts only ``reason``'s sentence needs."""
        match reason:
            case "superseded":
                newer = self.newer.get(row.memory_id)
                return {} if newer is None else {"other_id": newer[0], "other_words": newer[1]}
            case "reconciled":
                winner = self.winners.get(row.memory_id)
                if winner is None:
                    return {}
                return {"other_id": winner, "other_words": self.briefs.get(winner)}
            case "authored-wins":
                return {"authored_value": self.authored.get((row.section or "", row.key or ""))}
            case "expired":
                return {"valid_until": aware(row.valid_until) if row.valid_until else None}
            case "over-budget":
                return {
                    "needed": self.costs.get(row.memory_id),
                    "left": self.left,
                    "budget": self.budget,
                }
            case "spec-declined":
                return {"spec_key": row.spec_key, "spec_version": row.spec_version}
            case "awaiting-approval":
                again = self.reopened.get(row.memory_id)
                if again is None:
                    # "instruction-shaped": why a memory of an auto section waits.
                    return {"since": row.promoted_at, "held": row.reason}
                return {
                    "since": again.at,
                    "reopened_by": again.by,
                    "reopened_at": again.at,
                    "note": again.note,
                }
            case "earning":
                return {"seen": self.seen.get(row.memory_id), "needed_sessions": earned_sightings()}
            case "corroborating":
                holder = row.holder
                return {
                    "other_id": holder,
                    "other_words": self.briefs.get(holder) if holder else None,
                    "seen": self.seen.get(holder) if holder else None,
                    "needed_sessions": earned_sightings(),
                    "other_reason": self.drops.get(holder) if holder else None,
                }
            case "erased":
                by, at, why = self.erasures.get(row.memory_id, ("", None, ""))
                return {"decided_by": by or None, "decided_at": at, "note": why}
            case "rejected" | "revoked":
                return {
                    "decided_by": row.decided_by,
                    "decided_at": row.decided_at,
                    "note": row.note,
                }
        return {}


def _brief_rows(records: QuerySet[MemoryRecord], other: str) -> Iterable[tuple[str, str, Any, str]]:
    """(id, ``other`` column, label, start of content) of ``records``."""
    return cast(
        "Iterable[tuple[str, str, Any, str]]",
        records.values_list("pk", other, "label", Substr("content", 1, SNIPPET_CHARS + 1)),
    )


def _words(label: str | None, head: str) -> str:
    """What names a memory in a sentence: the start of its content (what it says),
    else its label."""
    return head.strip() or label or ""
