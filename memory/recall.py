"""Recall for a message (SPEC §6.4, §19.3): read the four tiers, let the pure core
assemble them.

Every read is bounded: at most ``CANDIDATES`` records per tier, and of each only as
much content as could ever fit the budget.
"""

from __future__ import annotations

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
from memory.models import MemoryRecord, PromotionStatus

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
        "id", Substr("content", 1, budget + 1), Length("content"), "kind", "tags", "label"
    )[:CANDIDATES]
    return [
        Candidate(record_id, head)
        for record_id, head, length, kind, tags, label in rows
        if stored_problem(kind, length, tags or [], label) is None
    ]


def recall(agent: Agent, message: str) -> Recall:
    """What ``agent`` recalls for ``message``: profile memories, pinned candidates (when
    the agent opts in), approved memories the Background's budget left out (spilled),
    then the memories the message's words find.
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
    return assemble_recall(
        profile,
        pinned,
        hits,
        fold.composed_ids,
        settings.MEMORY_RECALL_BUDGET_CHARS,
        spilled=spilled,
        spill_budget_chars=settings.MEMORY_RECALL_SPILL_CHARS,
    )
