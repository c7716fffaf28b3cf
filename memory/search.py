"""Memory search (SPEC §6.2): one meaning on SQLite and PostgreSQL.

Both backends index the same pre-tokenised terms (``memory.core.tokenizer``) and match a
query's terms exactly, any of them (OR): SQLite's FTS5 with its ``ascii`` tokenizer
(which splits on ASCII non-alphanumerics only, and terms are alphanumeric runs joined by
spaces, so it finds exactly our terms), PostgreSQL's ``array_to_tsvector`` (lexemes
taken as they are, no parser, no stemming). A query is never parsed by a backend: its
terms are quoted into the backend's syntax, and a term, being alphanumeric, can hold no
quote, operator or wildcard. So the set of matches is the same by construction; only
the ranking (bm25 / ts_rank) is the backend's own.

Ranking costs every match: both backends score each matching record before the first
page (FTS5's bm25 even reads each query term's whole posting list), so a query of common
words costs in proportion to the records (at 100,000 records a 64-word query of common
words took 2.5 s on SQLite, 6.3 s on PostgreSQL). So a search first reads at most
``RANKED_MAX + 1`` of its matches, newest first, which costs the page and not the store:
up to ``RANKED_MAX`` matches are ranked as before; a *broad* query, with more, lists its
matches newest first (by search document, the order writing gives), which both backends
read from an index as far as the page reaches. The set of matches is the same either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from django.db import connection

from lens.core.errors import DomainError
from lens.core.text import unstorable
from memory.core.tokenizer import record_terms, terms
from memory.models import MemoryRecord, SearchDoc

QUERY_MAX_CHARS = 4000
# Distinct terms a query may hold: an OR of more matches nearly everything and costs
# the backend a term lookup each, so longer queries are refused, not slowly answered.
QUERY_MAX_TERMS = 64


# A query with more matches among the searched records than this is broad (see above).
RANKED_MAX = 200
# FTS5 looks each query term up in every segment of its index before it returns a row
# (~35 µs a term at 100,000 records; newest first more: 17 ms for 64 common words), and
# reading the newest 201 documents and testing their terms costs ~1.2 ms, what ~8 terms
# cost. So on SQLite a query of more terms than this first looks at the newest documents.
WALK_TERMS = 8
WALK_CHUNKS = 2


class InvalidQuery(DomainError):
    code = "invalid_query"


def query_terms(query: str) -> list[str]:
    """The distinct terms of ``query``, in order; refuses what no search should run."""
    if len(query) > QUERY_MAX_CHARS:
        raise InvalidQuery(
            f"A query is at most {QUERY_MAX_CHARS} characters; this one has {len(query)}.",
            limit=QUERY_MAX_CHARS,
        )
    if unstorable(query):
        raise InvalidQuery("A query must not contain NUL characters or unpaired surrogates.")
    found = list(dict.fromkeys(terms(query)))
    if len(found) > QUERY_MAX_TERMS:
        raise InvalidQuery(
            f"A query is at most {QUERY_MAX_TERMS} different words; this one has {len(found)}.",
            limit=QUERY_MAX_TERMS,
        )
    return found


class Cursor(Protocol):
    def execute(self, sql: str, params: Sequence[Any] = ...) -> Any: ...
    def fetchall(self) -> list[tuple[Any, ...]]: ...


@dataclass(frozen=True)
class Backend:
    """How one database matches and ranks terms. Statements use ``%s`` placeholders."""

    vendor: str
    # The statements that make the database index ``memory_searchdoc.terms`` itself.
    ddl: tuple[str, ...]
    match: str  # the WHERE condition; its one parameter is ``query_text(terms)``
    rank: str  # ORDER BY expression, best first (a parameter, if any: ``query_text``)
    source: str  # FROM clause, aliasing the documents as ``d``
    # ORDER BY expression, newest document first, that the backend reads from an index
    # as far as the LIMIT reaches (the full-text index's own order on SQLite, the
    # primary key on PostgreSQL: by ``created_at`` it would sort every match of a
    # query over several agents).
    newest: str
    # Whether a query of more than WALK_TERMS terms first reads the newest documents.
    walks: bool
    # Whether the few matches of a ranked query are ranked by their ids, without asking
    # the full-text index again (PostgreSQL: a GIN search reads the index's pending list
    # each time, ~4 ms after a bulk load; FTS5's bm25 needs its MATCH).
    ranks_by_id: bool
    # Statements that leave no trace of a document's old terms in the index once it is
    # updated (an erasure, SPEC §15), run in the updating transaction.
    purge: tuple[str, ...] = ()

    def query_text(self, found: Sequence[str]) -> str:
        # Terms are alphanumeric: they can hold no quote, so quoting cannot be escaped.
        if self.vendor == "sqlite":
            return " OR ".join(f'"{t}"' for t in found)
        return " | ".join(f"'{t}'" for t in found)

    def _matching(self, agents: int, kind: bool) -> str:
        """FROM and WHERE: documents of ``agents`` agents (and one kind) that match.
        Parameters: the query text, the agent ids, the kind."""
        where = [self.match, f"d.agent_id IN ({', '.join(['%s'] * agents)})"]
        if kind:
            where.append("d.kind = %s")
        return f"FROM {self.source} WHERE {' AND '.join(where)}"

    def search_sql(self, agents: int, kind: bool) -> str:
        return (
            f"SELECT d.record_id {self._matching(agents, kind)} "
            f"ORDER BY {self.rank}, d.created_at DESC, d.record_id LIMIT %s OFFSET %s"
        )

    def newest_sql(self, agents: int, kind: bool) -> str:
        return (
            f"SELECT d.id, d.record_id {self._matching(agents, kind)} "
            f"ORDER BY {self.newest} LIMIT %s OFFSET %s"
        )

    def ranked_among_sql(self, records: int) -> str:
        return (
            f"SELECT d.record_id FROM {self.source} "
            f"WHERE d.record_id IN ({', '.join(['%s'] * records)}) "
            f"ORDER BY {self.rank}, d.created_at DESC, d.record_id LIMIT %s OFFSET %s"
        )

    def recent_sql(self, agents: int, kind: bool) -> str:
        """The newest documents of the agents (and kind), matching or not. The unary
        ``+`` keeps SQLite off the agent index, which would sort all of them by id."""
        where = [f"+d.agent_id IN ({', '.join(['%s'] * agents)})"]
        if kind:
            where.append("+d.kind = %s")
        return (
            f"SELECT d.id, d.record_id, d.terms FROM memory_searchdoc d "
            f"WHERE {' AND '.join(where)} AND d.id < %s ORDER BY d.id DESC LIMIT %s"
        )

    def matches_up_to_sql(self, agents: int) -> str:
        """How many records of the agents hold one term, counting no further than a cap:
        the cost is bounded by the cap, however common the term is."""
        return f"SELECT COUNT(*) FROM (SELECT 1 {self._matching(agents, False)} LIMIT %s) AS capped"

    def params(
        self,
        found: Sequence[str],
        agent_ids: Sequence[int],
        kind: str | None,
        limit: int,
        offset: int,
    ) -> list[Any]:
        text = self.query_text(found)
        ranked = [text] if "%s" in self.rank else []
        return [text, *agent_ids, *([kind] if kind else []), *ranked, limit, offset]


SQLITE = Backend(
    vendor="sqlite",
    ddl=(
        # External content: the terms live once, in memory_searchdoc.
        "CREATE VIRTUAL TABLE memory_fts USING fts5("
        "terms, content='memory_searchdoc', content_rowid='id', tokenize='ascii')",
        "CREATE TRIGGER memory_searchdoc_ai AFTER INSERT ON memory_searchdoc BEGIN "
        "INSERT INTO memory_fts(rowid, terms) VALUES (new.id, new.terms); END",
        "CREATE TRIGGER memory_searchdoc_ad AFTER DELETE ON memory_searchdoc BEGIN "
        "INSERT INTO memory_fts(memory_fts, rowid, terms) VALUES ('delete', old.id, old.terms); "
        "END",
        "CREATE TRIGGER memory_searchdoc_au AFTER UPDATE ON memory_searchdoc BEGIN "
        "INSERT INTO memory_fts(memory_fts, rowid, terms) VALUES ('delete', old.id, old.terms); "
        "INSERT INTO memory_fts(rowid, terms) VALUES (new.id, new.terms); END",
    ),
    match="memory_fts MATCH %s",
    rank="bm25(memory_fts)",
    newest="memory_fts.rowid DESC",
    walks=True,
    ranks_by_id=False,
    # FTS5 deletes by adding a "delete" marker in a newer segment: the old terms stay in
    # their segment until it is merged. "optimize" merges every segment into one, which
    # drops deleted entries, and secure_delete (lens/settings.py) zeroes the pages freed.
    # It rewrites the whole index (measured in docs/erasure.md); SQLite 3.42's FTS5
    # "secure-delete" option would remove the entries in place instead.
    purge=("INSERT INTO memory_fts(memory_fts) VALUES ('optimize')",),
    # CROSS JOIN fixes the order: the full-text match drives, each match then looks
    # its document up by primary key. (Left to itself the planner may walk the agent's
    # documents and test the match on each: 20 s instead of 2 ms at 100,000 records.)
    source="memory_fts CROSS JOIN memory_searchdoc d ON d.id = memory_fts.rowid",
)

POSTGRESQL = Backend(
    vendor="postgresql",
    ddl=(
        # array_to_tsvector takes each term as a lexeme, untouched by any parser.
        "ALTER TABLE memory_searchdoc ADD COLUMN vector tsvector GENERATED ALWAYS AS "
        "(array_to_tsvector(string_to_array(terms, ' '))) STORED",
        "CREATE INDEX memory_searchdoc_vector ON memory_searchdoc USING GIN (vector)",
    ),
    match="d.vector @@ %s::tsquery",
    rank="ts_rank(d.vector, %s::tsquery) DESC",
    newest="d.id DESC",
    walks=False,
    ranks_by_id=True,
    source="memory_searchdoc d",
)

BACKENDS = {backend.vendor: backend for backend in (SQLITE, POSTGRESQL)}


def backend() -> Backend:
    return BACKENDS[connection.vendor]


def search_ids(
    cursor: Cursor,
    engine: Backend,
    agent_ids: Sequence[int],
    found: Sequence[str],
    kind: str | None,
    limit: int,
    offset: int,
) -> list[str]:
    """Ids of the records of ``agent_ids`` that hold any of the terms ``found``: best
    match first (ties newest first, then by id), or, for a broad query, newest first.
    No terms: nothing matches.
    """
    if not found or not agent_ids:
        return []
    newest = newest_matches(cursor, engine, agent_ids, found, kind)
    return _page(cursor, engine, agent_ids, found, kind, newest, limit, offset)


def newest_matches(
    cursor: Cursor,
    engine: Backend,
    agent_ids: Sequence[int],
    found: Sequence[str],
    kind: str | None,
) -> list[str]:
    """Up to ``RANKED_MAX + 1`` of the matches, newest first: all of them when that is
    at most ``RANKED_MAX``."""
    wanted = RANKED_MAX + 1
    if engine.walks and len(found) > WALK_TERMS:
        walked = _walk(cursor, engine, agent_ids, set(found), kind, wanted)
        if walked is not None:
            return walked
    cursor.execute(
        engine.newest_sql(len(agent_ids), bool(kind)),
        [engine.query_text(found), *agent_ids, *([kind] if kind else []), wanted, 0],
    )
    return [row[1] for row in cursor.fetchall()]


def _walk(
    cursor: Cursor,
    engine: Backend,
    agent_ids: Sequence[int],
    wanted_terms: set[str],
    kind: str | None,
    wanted: int,
) -> list[str] | None:
    """The first ``wanted`` matches, newest first, found by reading the newest documents
    and testing their terms (at most WALK_CHUNKS reads of ``wanted`` documents); None
    when those documents hold too few matches to tell."""
    matches: list[str] = []
    below = 2**63 - 1
    for _ in range(WALK_CHUNKS):
        cursor.execute(
            engine.recent_sql(len(agent_ids), bool(kind)),
            [*agent_ids, *([kind] if kind else []), below, wanted],
        )
        rows = cursor.fetchall()
        matches += [rid for _, rid, terms in rows if not wanted_terms.isdisjoint(terms.split(" "))]
        if len(matches) >= wanted:
            return matches[:wanted]
        if len(rows) < wanted:
            return matches  # every document read: these are all the matches
        below = rows[-1][0]
    return None


def _page(
    cursor: Cursor,
    engine: Backend,
    agent_ids: Sequence[int],
    found: Sequence[str],
    kind: str | None,
    newest: Sequence[str],
    limit: int,
    offset: int,
) -> list[str]:
    """One page of the matches, given ``newest_matches``: ranked when they are few,
    else newest first (read from ``newest`` while it reaches, then from the index)."""
    if len(newest) <= RANKED_MAX:
        if offset >= len(newest):
            return []
        if engine.ranks_by_id:
            cursor.execute(
                engine.ranked_among_sql(len(newest)),
                [*newest, engine.query_text(found), limit, offset],
            )
            return [row[0] for row in cursor.fetchall()]
        return ranked_ids(cursor, engine, agent_ids, found, kind, limit, offset)
    if offset + limit <= len(newest):
        return list(newest[offset : offset + limit])
    cursor.execute(
        engine.newest_sql(len(agent_ids), bool(kind)),
        [engine.query_text(found), *agent_ids, *([kind] if kind else []), limit, offset],
    )
    return [row[1] for row in cursor.fetchall()]


def ranked_ids(
    cursor: Cursor,
    engine: Backend,
    agent_ids: Sequence[int],
    found: Sequence[str],
    kind: str | None,
    limit: int,
    offset: int,
) -> list[str]:
    """Every match ranked, best first: costs every match, so only for a query known to
    have few (``search_ids``) or terms already kept selective (recall)."""
    if not found or not agent_ids:
        return []
    cursor.execute(
        engine.search_sql(len(agent_ids), bool(kind)),
        engine.params(found, agent_ids, kind, limit, offset),
    )
    return [row[0] for row in cursor.fetchall()]


def search(
    agent_ids: Sequence[int], query: str, kind: str | None, limit: int, offset: int
) -> list[str]:
    """``search_ids`` on the application's database, for a query as a person typed it."""
    found = query_terms(query)
    with connection.cursor() as cursor:
        return search_ids(cursor, backend(), agent_ids, found, kind, limit, offset)


def search_terms(
    agent_ids: Sequence[int], found: Sequence[str], kind: str | None, limit: int, offset: int
) -> list[str]:
    """``ranked_ids`` on the application's database, for terms already kept selective
    (recall keeps only terms few records hold, which bounds the matches it ranks)."""
    with connection.cursor() as cursor:
        return ranked_ids(cursor, backend(), agent_ids, found, kind, limit, offset)


class Results:
    """The records of ``agent_ids`` matching ``query``, for a Paginator: best first, or
    for a broad query the newest ``RANKED_MAX`` of them, newest first (``broad`` says
    which). Counting reads at most ``RANKED_MAX + 1`` matches, and a page reads only its
    records (with their agent and promotion), so a page costs the same whatever the
    number of matches.
    """

    def __init__(self, agent_ids: Sequence[int], query: str, kind: str | None) -> None:
        self.agent_ids = list(agent_ids)
        self.terms = query_terms(query)
        self.kind = kind or None
        self._newest: list[str] | None = None

    def newest(self) -> list[str]:
        if self._newest is None:
            if not self.terms or not self.agent_ids:
                self._newest = []
            else:
                with connection.cursor() as cursor:
                    self._newest = newest_matches(
                        cursor, backend(), self.agent_ids, self.terms, self.kind
                    )
        return self._newest

    @property
    def broad(self) -> bool:
        """More than ``RANKED_MAX`` matches: the page lists the newest of them."""
        return len(self.newest()) > RANKED_MAX

    def count(self) -> int:
        return min(len(self.newest()), RANKED_MAX)

    def __getitem__(self, page: slice) -> list[MemoryRecord]:
        start, stop = page.start or 0, page.stop
        stop = min(stop if stop is not None else RANKED_MAX, RANKED_MAX)
        if start >= stop:
            return []
        with connection.cursor() as cursor:
            ids = _page(
                cursor,
                backend(),
                self.agent_ids,
                self.terms,
                self.kind,
                self.newest(),
                stop - start,
                start,
            )
        found = MemoryRecord.objects.select_related("agent", "promotion").in_bulk(ids)
        return [found[record_id] for record_id in ids if record_id in found]


def selective_terms(agent_ids: Sequence[int], found: Sequence[str], cap: int) -> list[str]:
    """The terms of ``found`` that at most ``cap`` of the agents' records hold.

    Recall searches a message, which is prose: its common words ("and", "the") match
    nearly every record, tell nothing, and would make the backend rank them all. One
    bounded count per term keeps the words that select.
    """
    if not found or not agent_ids:
        return []
    engine = backend()
    sql = engine.matches_up_to_sql(len(agent_ids))
    kept = []
    with connection.cursor() as cursor:
        for term in found:
            cursor.execute(sql, [engine.query_text([term]), *agent_ids, cap + 1])
            if int(cursor.fetchone()[0]) <= cap:
                kept.append(term)
    return kept


def document(record: MemoryRecord) -> SearchDoc:
    """The (unsaved) search document of ``record``."""
    return SearchDoc(
        record=record,
        agent_id=record.agent_id,
        kind=record.kind,
        created_at=record.created_at,
        terms=" ".join(record_terms(record.content, record.label, record.tags or ())),
    )


def forget(record_id: str) -> None:
    """Empty the search document of an erased record, leaving no trace of its terms in
    the index (the row stays, so every record keeps its document: ``index_health``).
    PostgreSQL's generated vector follows the row; its old versions wait for VACUUM."""
    SearchDoc.objects.filter(record_id=record_id).update(terms="")
    with connection.cursor() as cursor:
        for statement in backend().purge:
            cursor.execute(statement)


def reindex(chunk: int = 2000) -> int:
    """Rebuild every search document from the records (``manage.py reindex_memories``).
    Returns how many records were indexed.
    """
    SearchDoc.objects.all().delete()
    count = 0
    batch: list[SearchDoc] = []
    for record in MemoryRecord.objects.order_by("pk").iterator(chunk_size=chunk):
        batch.append(document(record))
        if len(batch) >= chunk:
            SearchDoc.objects.bulk_create(batch)
            count += len(batch)
            batch = []
    SearchDoc.objects.bulk_create(batch)
    return count + len(batch)


def index_health() -> tuple[int, int]:
    """(records, search documents): equal when the index is complete."""
    return MemoryRecord.objects.count(), SearchDoc.objects.count()
