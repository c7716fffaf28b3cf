"""Recall for a message (SPEC §6.4, §19.3): read the four tiers, let the pure core
assemble them.

Every read is bounded: at most ``CANDIDATES`` records per tier, and of each only as
much content as could ever fit the budget.

Each candidate says whether a person approved it (``Candidate.vouched``): the core holds
back, in every tier, a memory that reads as an instruction to the model unless one did
(SPEC §19.4).
"""

from __future__ import annotations

from dataclasses import replace

from django.conf import settings
from django.db.models import QuerySet
from django.db.models.functions import Length, Substr
from django.utils import timezone

from lens.core.errors import DomainError
from lens.core.text import unstorable
from lens.models import Agent
from memory import search
from memory.composition import recall_fold
from memory.core.recall import Candidate, Recall, assemble_recall
from memory.core.records import stored_problem
from memory.core.tokenizer import terms
from memory.models import MemoryRecord, Promotion, PromotionStatus

MESSAGE_MAX_CHARS = 4000
# More candidates than could ever fit: each line costs at least 4 code points.
CANDIDATES = 200
# A message word held by more of the agent's records than this is too common to recall by.
COMMON_WORD_RECORDS = 1000


# Never recalled: a superseded record (replaced), an erased one (nothing left of it);
# nor one whose validity window has closed.
_GONE = (PromotionStatus.SUPERSEDED, PromotionStatus.ERASED)


class InvalidMessage(DomainError):
    code = "invalid_message"


def _candidates(records: QuerySet[MemoryRecord]) -> list[Candidate]:
    """Up to CANDIDATES records, with no more content than could fit; a row that no
    longer reads as a record is skipped (SPEC §6.3)."""
    budget = settings.MEMORY_RECALL_BUDGET_CHARS
    rows = records.values_list(
        "id",
        Substr("content", 1, budget + 1),
        Length("content"),
        "kind",
        "tags",
        "label",
        "promotion__status",
        "promotion__decided_by",
    )[:CANDIDATES]
    return [
        Candidate(record_id, head, vouched=_by_a_person(status, decider))
        for record_id, head, length, kind, tags, label, status, decider in rows
        if stored_problem(kind, length, tags or [], label) is None
    ]


def _by_a_person(status: str | None, decider: int | None) -> bool:
    """Whether a promotion is approved by a person: the row names who decided. The
    system's approvals (an auto section, an earned section's sightings, a migration's
    move into an auto section) name nobody."""
    return status == PromotionStatus.APPROVED and decider is not None


def _approved_by_a_person(record_ids: list[str]) -> set[str]:
    """Which of ``record_ids`` a person approved (one query by primary key)."""
    return set(
        Promotion.objects.filter(
            record_id__in=record_ids,
            status=PromotionStatus.APPROVED,
            decided_by__isnull=False,
        ).values_list("record_id", flat=True)
    )


def recall(agent: Agent, message: str) -> Recall:
    """What ``agent`` recalls for ``message``: profile memories, pinned candidates (when
    the agent opts in), approved memories the Background's budget left out (spilled),
    then the memories the message's words find; in none of them a memory that reads as
    an instruction to the model and that no person approved (``Recall.held`` names them).
    """
    if len(message) > MESSAGE_MAX_CHARS:
        raise InvalidMessage(
            f"A message is at most {MESSAGE_MAX_CHARS} characters; this one has {len(message)}.",
            limit=MESSAGE_MAX_CHARS,
        )
    if unstorable(message):
        raise InvalidMessage("A message must not contain NUL characters or unpaired surrogates.")
    # A message is prose, not a query: its first distinct words are searched, however
    # many it has, leaving out those so common that they select nothing.
    words = list(dict.fromkeys(terms(message)))[: search.QUERY_MAX_TERMS]
    selective = search.selective_terms([agent.pk], words, COMMON_WORD_RECORDS)
    hit_ids = search.search_terms([agent.pk], selective, None, CANDIDATES, 0)
    # Expired memories leave recall as they leave the prompt (SPEC §19.2).
    now = timezone.now()
    current = (
        MemoryRecord.objects.filter(agent=agent, erased_at__isnull=True)
        .exclude(promotion__status__in=_GONE)
        .exclude(valid_until__lte=now)
    )
    profile = _candidates(current.filter(kind="profile").order_by("-created_at", "id"))
    # One fold gives both what the prompt holds (never recalled) and what its budget
    # left out (spilled).
    fold = recall_fold(agent, CANDIDATES, now)
    # The fold does not read who approved a memory: a spilled one is first taken as
    # approved by the system, and asked about only if it is held (below).
    spilled = [Candidate(record.id, record.content) for record in fold.spilled]
    pinned: list[Candidate] = []
    if agent.recall_pinned_candidates:
        placed = current.filter(
            promotion__section__isnull=False,
            promotion__status__in=(PromotionStatus.PENDING, PromotionStatus.APPROVED),
        )
        # A spilled memory is placed and not composed too, but recalled as spilled: the
        # tier that says why, within the sub-budget that keeps room for hits.
        over_budget = {candidate.id for candidate in spilled}
        pinned = [
            candidate
            for candidate in _candidates(placed.order_by("-created_at", "id"))
            if candidate.id not in over_budget
        ]
    # Looked up by primary key alone: filtered by agent too, the planner would rather
    # walk all the agent's records (search already kept to this agent).
    hit_rows = (
        MemoryRecord.objects.filter(pk__in=hit_ids, erased_at__isnull=True)
        .exclude(promotion__status__in=_GONE)
        .exclude(valid_until__lte=now)
        .order_by()
    )
    by_id = {c.id: c for c in _candidates(hit_rows)}
    hits = [by_id[record_id] for record_id in hit_ids if record_id in by_id]

    def assemble(spilled: list[Candidate]) -> Recall:
        return assemble_recall(
            profile,
            pinned,
            hits,
            fold.composed_ids,
            settings.MEMORY_RECALL_BUDGET_CHARS,
            spilled=spilled,
            spill_budget_chars=settings.MEMORY_RECALL_SPILL_CHARS,
        )

    found = assemble(spilled)
    # A spilled memory held as an instruction may be one a person approved: asked then
    # (one query, none on the usual path), and the block assembled again with it.
    held = [line.memory_id for line in found.held if line.tier == "spilled"]
    if held and (vouched := _approved_by_a_person(held)):
        found = assemble([replace(c, vouched=c.id in vouched) for c in spilled])
    return found
