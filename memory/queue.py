"""The approval queue as pages read it: pending promotions with who saved them, where
each would land, what it would replace and what approving it would do to the prompt.
A read model: it decides nothing.

A page of rows costs a fixed number of queries whatever its length, and one fold per
agent on the page plus one per row (``memory.core.impact``). Its word diffs share one
step budget (``PAGE_WORD_BUDGET``), so rows of long memories that differ everywhere cannot
slow the page down however many there are.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC
from typing import Literal

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.text import Truncator

from lens.agents import background_of, load_entry_values
from lens.core.background import Background, BackgroundSection
from lens.core.diffs import WordOp, word_diff
from lens.core.text import value_text
from lens.models import Agent, SectionDeclaration, Team
from memory.core.impact import Baseline, Impact, Withdrawal, record_words
from memory.core.routing import PlacedRecord
from memory.core.sightings import Sighting, counted, distinct_sessions
from memory.models import EventKind, MemoryEvent, MemoryRecord, Promotion, PromotionStatus
from memory.queries import Reopening, latest_reopenings, placed_records
from memory.registry import get_spec
from memory.sightings import EARNING, earned_sightings, sightings_of

# Steps every word diff on one page may spend together (``lens.core.diffs.word_diff``):
# about 20 ms of pure Python on a loaded core. A row that finds it spent still shows a
# correct diff: the common leading and trailing words, everything between replaced.
PAGE_WORD_BUDGET = 100_000


# The queue's views: what waits for a person (the default), or the memories of earned
# sections still earning their place on sightings (SPEC §19.1), which a person may
# approve or reject too but need not.
EARNING_VIEW = "earning"


def pending(team: Team, agent: str = "", section: str = "", show: str = "") -> QuerySet[Promotion]:
    """``team``'s pending promotions, oldest first, optionally of one agent or section:
    those waiting for a person, or with ``show="earning"`` those earning their place."""
    rows = Promotion.objects.filter(agent__team=team, status=PromotionStatus.PENDING)
    rows = rows.filter(reason=EARNING) if show == EARNING_VIEW else rows.exclude(reason=EARNING)
    if agent:
        rows = rows.filter(agent__slug=agent)
    if section:
        rows = rows.filter(section=section)
    return with_row_relations(rows).order_by("promoted_at", "record_id")


def with_row_relations(rows: QuerySet[Promotion]) -> QuerySet[Promotion]:
    """What a queue row reads with its promotion, in the same query."""
    return rows.select_related("record", "record__supersedes", "agent")


@dataclass(frozen=True)
class SectionChoice:
    """A guarded section in the queue's filter: its id (what the filter sends) and what
    the option says."""

    id: str
    label: str


# An option longer than this is cut (titles may have 200 characters; a select as wide as
# its longest option would push a phone's page sideways).
SECTION_LABEL_MAX = 60


def guarded_sections(team: Team) -> list[SectionChoice]:
    """Every guarded section any of ``team``'s agents declares (the queue's filter), by
    title: one query."""
    pairs = SectionDeclaration.objects.filter(agent__team=team, promotion="guarded").values_list(
        "section_id", "title"
    )
    return section_choices(pairs)


def section_choices(pairs: Iterable[tuple[str, str]]) -> list[SectionChoice]:
    """One choice per section id, labelled by its title; agents that title one id
    differently show every title ("Likes / Preferences"), and a label two ids share
    names its id ("Preferences (prefs)"), whatever their case, so no two options read
    the same. Sorted by label, ignoring case."""
    titles: dict[str, set[str]] = {}
    for section_id, title in pairs:
        titles.setdefault(section_id, set()).add(title)
    labels = {
        section_id: Truncator(" / ".join(sorted(found, key=str.casefold))).chars(SECTION_LABEL_MAX)
        for section_id, found in titles.items()
    }
    shared = Counter(label.casefold() for label in labels.values())
    choices = [
        SectionChoice(
            section_id, f"{label} ({section_id})" if shared[label.casefold()] > 1 else label
        )
        for section_id, label in labels.items()
    ]
    return sorted(choices, key=lambda choice: (choice.label.casefold(), choice.id))


def team_agents(team: Team) -> list[Agent]:
    return list(Agent.objects.filter(team=team).order_by("name"))


@dataclass(frozen=True)
class Replaces:
    """What approving a row would replace: an authored entry (which keeps winning) or
    the memory the row supersedes at the same address, as a word diff.
    """

    kind: Literal["authored", "memory"]
    diff: list[tuple[WordOp, str]]
    id: str | None = None
    label: str | None = None
    content: str = ""


@dataclass(frozen=True)
class QueueRow:
    promotion: Promotion
    record: MemoryRecord
    saver: str | None  # who saved it, as a memory's events name actors
    section: BackgroundSection | None  # its section as declared now (None: undeclared)
    replaces: Replaces | None
    impact: Impact | None  # None for a row without a placement
    # Who put it back in the queue, when and why (None: it waits since it was saved).
    reopened: Reopening | None = None
    # An earning memory's distinct sessions so far, and how many earn it its place.
    seen: int | None = None
    needed: int | None = None
    # The sessions that count, oldest first, as the row names them: the session, or
    # "day 2026-05-01" for a save that named none (its UTC day is its session).
    sessions: tuple[str, ...] = ()

    @property
    def section_title(self) -> str | None:
        return self.section.title if self.section is not None else None

    @property
    def sessions_shown(self) -> tuple[str, ...]:
        """The first few sessions, for a short line; ``sessions_more`` says the rest."""
        return self.sessions[:SESSIONS_SHOWN]

    @property
    def sessions_more(self) -> int:
        return max(0, len(self.sessions) - SESSIONS_SHOWN)


# A queue row names at most this many of an earning memory's sessions, then "+N more".
SESSIONS_SHOWN = 3


def session_names(sightings: list[Sighting]) -> tuple[str, ...]:
    """The counted sightings' sessions, oldest first, as a row names them."""
    return tuple(
        s.session if s.session is not None else f"day {s.created_at.astimezone(UTC).date()}"
        for s in counted(sightings)
    )


def queue_rows(promotions: list[Promotion]) -> list[QueueRow]:
    """Queue rows with their savers, sections, replacements and impacts.

    ``promotions`` come with their records, superseded records and agents
    (``with_row_relations``); this reads six more queries for any number of rows.
    """
    agent_ids = {p.agent_id for p in promotions}
    backgrounds = _backgrounds(agent_ids)  # 3 queries
    placed = placed_records(agent_ids)  # 1 query
    baselines = {
        agent.pk: Baseline.of(
            backgrounds[agent.pk],
            placed.of(agent.pk),
            get_spec(agent.routing_spec),
            settings.MEMORY_OVERLAY_BUDGET_CHARS,
            timezone.now(),
        )
        for agent in {p.agent for p in promotions}
        if agent.pk in backgrounds
    }
    savers, reopened = _stories(p.record_id for p in promotions)  # 1 query
    older_places = _older_places(promotions)  # 1 query
    # Earning rows' sessions so far (1 query, none when no row is earning).
    seen = sightings_of([p.record_id for p in promotions if p.reason == EARNING])
    word_budget = [PAGE_WORD_BUDGET]
    rows = []
    for promotion in promotions:
        record = promotion.record
        background = backgrounds.get(promotion.agent_id, Background())
        section = next((s for s in background.sections if s.id == promotion.section), None)
        baseline = baselines.get(promotion.agent_id)
        impact = None
        if baseline is not None and promotion.section is not None and promotion.key is not None:
            impact = baseline.impact(_candidate(promotion))
        rows.append(
            QueueRow(
                promotion=promotion,
                record=record,
                saver=savers.get(record.pk),
                section=section,
                replaces=_replaces(promotion, section, older_places, word_budget),
                impact=impact,
                reopened=reopened.get(record.pk),
                seen=distinct_sessions(seen[record.pk]) if record.pk in seen else None,
                needed=earned_sightings() if record.pk in seen else None,
                sessions=session_names(seen[record.pk]) if record.pk in seen else (),
            )
        )
    return rows


def _backgrounds(agent_ids: Iterable[int]) -> dict[int, Background]:
    """Each agent's authored Background as declared now."""
    agents = list(Agent.objects.filter(pk__in=list(agent_ids)).prefetch_related("sections"))
    load_entry_values(agents)
    return {agent.pk: background_of(agent) for agent in agents}


def _stories(record_ids: Iterable[str]) -> tuple[dict[str, str], dict[str, Reopening]]:
    """Who saved each record (its ``saved`` event's actor: a user, a token, the system)
    and, for a record a reviewer reopened, its latest reopening (one query)."""
    events = MemoryEvent.objects.filter(
        record_id__in=list(record_ids), kind__in=(EventKind.SAVED, EventKind.REOPENED)
    ).order_by("at", "id")
    savers: dict[str, str] = {}
    reopens = []
    for record_id, kind, actor, at, detail in events.values_list(
        "record_id", "kind", "actor", "at", "detail"
    ):
        if kind == EventKind.SAVED:
            savers[record_id] = actor
        else:
            reopens.append((record_id, actor, at, detail))
    return savers, latest_reopenings(reopens)


def _candidate(promotion: Promotion) -> PlacedRecord:
    """The pending record as the fold would see it once approved."""
    record = promotion.record
    return PlacedRecord(
        id=record.pk,
        kind=record.kind,
        content=record.content,
        created_at=record.created_at,
        section=promotion.section or "",
        key=promotion.key or "",
        tags=tuple(record.tags or ()),
        label=record.label,
        key_source="label" if promotion.key_source == "label" else "content",
    )


def _older_places(promotions: list[Promotion]) -> dict[str, tuple[str | None, str | None]]:
    """Where each superseded record was placed (one query)."""
    older_ids = [p.record.supersedes_id for p in promotions if p.record.supersedes_id]
    return {
        record_id: (section, key)
        for record_id, section, key in Promotion.objects.filter(
            record_id__in=older_ids
        ).values_list("record_id", "section", "key")
    }


def _replaces(
    promotion: Promotion,
    section: BackgroundSection | None,
    older_places: dict[str, tuple[str | None, str | None]],
    word_budget: list[int],
) -> Replaces | None:
    record = promotion.record
    # The fold's own comparison: an authored entry of the same name wins (look-alikes too).
    authored = section.entry(promotion.key or "") if section is not None else None
    if authored is not None:
        return Replaces(
            "authored", word_diff(value_text(authored.value), record.content, word_budget)
        )
    older = record.supersedes
    # Superseding a memory held elsewhere replaces nothing at this address.
    if older is not None and older_places.get(older.pk) == (promotion.section, promotion.key):
        return Replaces(
            "memory",
            word_diff(older.content, record.content, word_budget),
            older.pk,
            older.label,
            older.content,
        )
    return None


@dataclass(frozen=True)
class RevokePreview:
    """What revoking a memory would do, for its confirmation page and the words after."""

    withdrawal: Withdrawal
    older: str | None  # the memory it replaced at the same address, named (stays out)

    @property
    def sentences(self) -> list[str]:
        return self.withdrawal.sentences(self.older)


def revoke_preview(record: MemoryRecord) -> RevokePreview:
    """What revoking ``record`` would do to its agent's prompt now (a handful of queries
    and one fold of the agent's approved memories, as composing the prompt costs)."""
    agent = record.agent
    background = _backgrounds([agent.pk]).get(agent.pk, Background())
    baseline = Baseline.of(
        background,
        placed_records([agent.pk]).of(agent.pk),
        get_spec(agent.routing_spec),
        settings.MEMORY_OVERLAY_BUDGET_CHARS,
        timezone.now(),
    )
    withdrawal = baseline.withdrawal(record.pk)
    gone, older = withdrawal.record, record.supersedes
    if gone is None or older is None:
        return RevokePreview(withdrawal, None)
    place = Promotion.objects.filter(record_id=older.pk).values_list("section", "key").first()
    if place != (gone.section, gone.key):
        return RevokePreview(withdrawal, None)  # it replaced a memory held elsewhere
    named = PlacedRecord(
        older.pk,
        older.kind,
        older.content,
        older.created_at,
        gone.section,
        gone.key,
        label=older.label,
    )
    return RevokePreview(withdrawal, record_words(named))
