"""Search costs the page, not the store (``memory.search``): a query of common words reads
at most ``RANKED_MAX + 1`` of its matches, however many records hold them.

Work is counted, not timed: on SQLite the virtual machine instructions the searches run
(a progress handler), on PostgreSQL the rows they read from the documents table (the
transaction's own statistics). Ranking every match, as search did, grows with the records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from lens.models import Agent
from memory import search
from memory.models import MemoryRecord, SearchDoc, new_record_id
from memory.queries import memory_page
from tests.pages import dom

pytestmark = pytest.mark.django_db

COMMON = [f"common{n}" for n in range(search.QUERY_MAX_TERMS)]
ADVERSARIAL = {
    "64 distinct common words": " ".join(COMMON),
    "those words repeated to the longest query": (
        (" ".join(COMMON) + " ") * (search.QUERY_MAX_CHARS // (len(" ".join(COMMON)) + 1))
    ),
    "one common word repeated to the longest query": "common0 " * (search.QUERY_MAX_CHARS // 8),
}


def fill(agent: Agent, start: int, count: int) -> None:
    """``count`` memories that all hold the 64 common words; the first 100 also "rare"."""
    base = timezone.now() - timedelta(days=1)
    records = [
        MemoryRecord(
            id=new_record_id(),
            agent=agent,
            kind="fact",
            content=f"Note {'rare' if n < 100 else ''} " + " ".join(COMMON),
            tags=[],
            created_at=base + timedelta(microseconds=n),
        )
        for n in range(start, start + count)
    ]
    MemoryRecord.objects.bulk_create(records)
    SearchDoc.objects.bulk_create(search.document(record) for record in records)
    if connection.vendor == "postgresql":
        # The planner's statistics, as autovacuum keeps them after a bulk load: with
        # none, it guesses every word rare and reads all the matches of common ones.
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE memory_searchdoc")


@contextmanager
def sqlite_work() -> Iterator[Callable[[], int]]:
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    raw = connection.connection
    raw.set_progress_handler(count, 10)  # one step per 10 instructions
    try:
        yield lambda: steps[0]
    finally:
        raw.set_progress_handler(None, 0)


def _rows_read() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT COALESCE(seq_tup_read, 0) + COALESCE(idx_tup_fetch, 0) "
            "FROM pg_stat_xact_user_tables WHERE relname = 'memory_searchdoc'"
        )
        return int(cursor.fetchone()[0])


@contextmanager
def postgresql_work() -> Iterator[Callable[[], int]]:
    before = _rows_read()
    yield lambda: _rows_read() - before


def work(run: Callable[[], Any]) -> int:
    connection.ensure_connection()
    counter = sqlite_work if connection.vendor == "sqlite" else postgresql_work
    with counter() as done:
        run()
        return done()


def searches(agent: Agent, query: str) -> Callable[[], None]:
    """What a reader asks of a search: the API's first page, and the memories page's
    count and first page."""

    def run() -> None:
        memory_page(agent, None, 50, 0, query=query)
        results = search.Results([agent.pk], query, None)
        results.count()
        results[0:50]

    return run


def test_a_query_of_common_words_costs_the_same_at_any_number_of_records(agent: Agent) -> None:
    fill(agent, 0, 1000)
    small = {name: work(searches(agent, query)) for name, query in ADVERSARIAL.items()}
    fill(agent, 1000, 3000)
    large = {name: work(searches(agent, query)) for name, query in ADVERSARIAL.items()}
    # A word 100 of the 4,000 hold: a full first page, every match ranked.
    rare = work(searches(agent, "rare"))
    for name in ADVERSARIAL:
        # Four times the records; ranking every match did four times the work.
        assert large[name] <= small[name] * 1.2, (name, small[name], large[name])
        assert large[name] <= rare * 3, (name, rare, large[name])


def test_a_broad_query_pages_through_every_match_newest_first(agent: Agent) -> None:
    fill(agent, 0, search.RANKED_MAX + 30)
    query = " ".join(COMMON)
    ids = [
        record_id
        for offset in range(0, search.RANKED_MAX + 100, 40)
        for record_id in search.search([agent.pk], query, None, 40, offset)
    ]
    newest_first = list(
        SearchDoc.objects.filter(agent=agent).order_by("-id").values_list("record_id", flat=True)
    )
    assert ids == newest_first
    # The page straddling RANKED_MAX reads on past what was counted.
    assert (
        search.search([agent.pk], query, None, 20, search.RANKED_MAX - 10)
        == (newest_first[search.RANKED_MAX - 10 : search.RANKED_MAX + 10])
    )


@pytest.mark.parametrize("extra", [-1, 0, 1])
def test_ranking_stops_exactly_above_ranked_max(agent: Agent, extra: int) -> None:
    fill(agent, 0, search.RANKED_MAX + extra)
    results = search.Results([agent.pk], " ".join(COMMON), None)
    assert results.broad is (extra > 0)
    assert results.count() == min(search.RANKED_MAX + extra, search.RANKED_MAX)
    shown = {record.pk for record in results[0 : search.RANKED_MAX]}
    assert len(shown) == min(search.RANKED_MAX + extra, search.RANKED_MAX)


def test_the_memories_page_says_a_broad_query_lists_the_newest(
    member_client: Client, agent: Agent
) -> None:
    fill(agent, 0, search.RANKED_MAX + 1)
    page = dom(member_client.get("/memories/?q=common7+rare"))
    assert page.one("data-memory-total").text.startswith(
        f"More than {search.RANKED_MAX} memories matching “common7 rare”: the newest"
    )
    assert len(page.all("data-memory-id")) == 50
    ranked = dom(member_client.get("/memories/?q=rare"))
    assert ranked.one("data-memory-total").text.startswith(
        "100 memories matching “rare”, best match first"
    )
