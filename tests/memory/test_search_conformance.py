"""Search means the same on every backend (SPEC §6.2): one suite, run against SQLite's
FTS5 and PostgreSQL's full-text search in the same run.

Each backend gets a scratch database of its own (an in-memory SQLite, a throwaway
PostgreSQL schema) holding the search table exactly as the migration builds it, and is
asked through ``memory.search.search_ids``, the function the application calls.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory.core.tokenizer import record_terms, tokenize
from memory.search import (
    POSTGRESQL,
    QUERY_MAX_TERMS,
    RANKED_MAX,
    SQLITE,
    WALK_TERMS,
    Backend,
    InvalidQuery,
    query_terms,
    search_ids,
)

PG_URL = os.environ.get("SEARCH_CONFORMANCE_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
AGENT = 1
OTHER_AGENT = 2
BASE_TIME = datetime(2026, 1, 1, tzinfo=UTC)

TABLE = {
    "sqlite": "CREATE TABLE memory_searchdoc (id INTEGER PRIMARY KEY AUTOINCREMENT, "
    "record_id TEXT UNIQUE, agent_id BIGINT, kind TEXT, created_at TEXT, terms TEXT)",
    "postgresql": "CREATE TABLE memory_searchdoc (id BIGSERIAL PRIMARY KEY, "
    "record_id TEXT UNIQUE, agent_id BIGINT, kind TEXT, created_at TIMESTAMPTZ, terms TEXT)",
}


class Engine:
    """One backend's scratch search table and the application's query function."""

    def __init__(self, backend: Backend, connection: Any) -> None:
        self.backend = backend
        self.connection = connection
        self.cursor = connection.cursor()
        self.serial = 0

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        if self.backend.vendor == "sqlite":
            sql = sql.replace("%s", "?")
        return self.cursor.execute(sql, params)

    def fetchall(self) -> list[tuple[Any, ...]]:
        return list(self.cursor.fetchall())

    def create(self) -> None:
        for statement in (TABLE[self.backend.vendor], *self.backend.ddl):
            self.execute(statement)

    def clear(self) -> None:
        self.execute("DELETE FROM memory_searchdoc")

    def add(
        self,
        content: str,
        label: str | None = None,
        tags: Sequence[str] = (),
        kind: str = "fact",
        agent: int = AGENT,
        at: datetime | None = None,
        record_id: str | None = None,
    ) -> str:
        self.serial += 1
        record_id = record_id or f"r{self.serial:06d}"
        when = at or BASE_TIME + timedelta(seconds=self.serial)
        self.execute(
            "INSERT INTO memory_searchdoc (record_id, agent_id, kind, created_at, terms) "
            "VALUES (%s, %s, %s, %s, %s)",
            [
                record_id,
                agent,
                kind,
                when.isoformat() if self.backend.vendor == "sqlite" else when,
                " ".join(record_terms(content, label, tuple(tags))),
            ],
        )
        return record_id

    def search(
        self, query: str, kind: str | None = None, limit: int = 200, offset: int = 0
    ) -> list[str]:
        return search_ids(self, self.backend, [AGENT], query_terms(query), kind, limit, offset)


def _sqlite() -> Iterator[Engine]:
    connection = sqlite3.connect(":memory:", isolation_level=None)
    engine = Engine(SQLITE, connection)
    engine.create()
    yield engine
    connection.close()


def _postgresql() -> Iterator[Engine]:
    psycopg = pytest.importorskip("psycopg")
    try:
        connection = psycopg.connect(PG_URL, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:  # pragma: no cover - CI always has one
        pytest.skip(f"no PostgreSQL at {PG_URL}: {exc}")
    schema = f"search_conformance_{uuid.uuid4().hex[:12]}"
    connection.execute(f"CREATE SCHEMA {schema}")
    connection.execute(f"SET search_path TO {schema}")
    engine = Engine(POSTGRESQL, connection)
    engine.create()
    yield engine
    connection.execute(f"DROP SCHEMA {schema} CASCADE")
    connection.close()


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest) -> Iterator[Engine]:
    yield from (_sqlite() if request.param == "sqlite" else _postgresql())


@pytest.fixture
def fresh(engine: Engine) -> Engine:
    engine.clear()
    return engine


# --- the cases ---------------------------------------------------------------------------


def test_whole_tokens_only(fresh: Engine) -> None:
    doug = fresh.add("My name is Doug.")
    assert fresh.search("am") == []
    assert fresh.search("nam") == []
    assert fresh.search("name") == [doug]
    assert fresh.search("doug") == [doug]


def test_no_stemming(fresh: Engine) -> None:
    tea = fresh.add("Prefers tea.")
    assert fresh.search("prefer") == []
    assert fresh.search("preferred") == []
    assert fresh.search("Prefers") == [tea]


@pytest.mark.parametrize("query", ["cafe", "Café", "CAFÉ", "café", "CAFE"])
def test_case_and_diacritics_fold(fresh: Engine, query: str) -> None:
    cafe = fresh.add("Meets friends at the Café every Friday.")
    assert fresh.search(query) == [cafe]


def test_any_query_word_matches_even_words_that_never_meet(fresh: Engine) -> None:
    apples = fresh.add("Likes apples.")
    oranges = fresh.add("Likes oranges.")
    fresh.add("Likes pears.")
    assert set(fresh.search("apples oranges")) == {apples, oranges}
    assert set(fresh.search("bananas oranges")) == {oranges}


def test_labels_and_tags_are_searched(fresh: Engine) -> None:
    labelled = fresh.add("UTC+1", label="Timezone")
    tagged = fresh.add("Runs at six.", tags=["work-life", "health"])
    assert fresh.search("timezone") == [labelled]
    assert fresh.search("health") == [tagged]
    assert fresh.search("life") == [tagged]


@pytest.mark.parametrize(
    ("content", "query", "matches"),
    [
        ("Καλημέρα κόσμε", "καλημερα", True),
        ("Καλημέρα κόσμε", "ΚΌΣΜΕ", True),
        ("Привет, мир", "ПРИВЕТ", True),
        ("Привет, мир", "при", False),
        ("東京タワーに行った", "東京タワーに行った", True),
        ("東京タワーに行った", "東京", False),  # one run of letters is one token
        ("hi😀there", "there", True),
        ("hi😀there", "hi", True),
        ("hi😀there", "😀", False),  # an emoji is no word
        ("ﬁnance report", "finance", True),  # NFKD unfolds the ligature
        ("straße", "STRASSE", True),  # casefold
    ],
)
def test_other_scripts(fresh: Engine, content: str, query: str, matches: bool) -> None:
    record = fresh.add(content)
    assert fresh.search(query) == ([record] if matches else [])


@pytest.mark.parametrize(
    "query",
    ['"', '""', "*", "-", ":", "^", "(", ")", "%", "_", "\\", "'", "|", "&", "!", "<->", "{}"],
)
def test_query_syntax_alone_is_no_query(fresh: Engine, query: str) -> None:
    fresh.add("Anything at all: * - ( ) % _ \\ ' \" |")
    assert fresh.search(query) == []


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("NEAR", {"near"}),
        ("AND", {"and"}),
        ("OR", {"or"}),
        ("NOT", {"not"}),
        ("tea*", {"tea"}),
        ("-tea", {"tea"}),
        ("title:tea", {"tea", "title"}),
        ("^tea", {"tea"}),
        ('"tea', {"tea"}),
        ("(tea OR coffee)", {"tea", "coffee", "or"}),
        ("tea%", {"tea"}),
        ("t_a", set()),
        ("tea\\", {"tea"}),
        ("o'clock", {"o"}),
    ],
)
def test_query_syntax_is_text_never_an_operator(
    fresh: Engine, query: str, expected: set[str]
) -> None:
    words = ["near", "and", "or", "not", "tea", "teapot", "coffee", "title", "o", "ta"]
    ids = {word: fresh.add(f"Just {word} here.") for word in words}
    assert set(fresh.search(query)) == {ids[word] for word in expected}


def test_a_query_without_words_finds_nothing(fresh: Engine) -> None:
    fresh.add("Something.")
    for query in ("", "   ", "...", "😀😀"):
        assert fresh.search(query) == []


def test_search_stays_inside_the_agent_and_the_kind(fresh: Engine) -> None:
    mine = fresh.add("Likes tea.", kind="preference")
    fresh.add("Likes tea.", agent=OTHER_AGENT)
    fact = fresh.add("Tea is a plant.", kind="fact")
    assert set(fresh.search("tea")) == {mine, fact}
    assert fresh.search("tea", kind="preference") == [mine]


def test_pages_of_a_search_add_up_to_the_whole(fresh: Engine) -> None:
    ids = {fresh.add(f"Tea note {n}.") for n in range(7)}
    pages = [fresh.search("tea", limit=3, offset=offset) for offset in (0, 3, 6)]
    assert [len(page) for page in pages] == [3, 3, 1]
    assert set().union(*pages) == ids


def test_very_long_words_match_whole(fresh: Engine) -> None:
    long_word = "a" * 70 + "b"
    record = fresh.add(f"The word is {long_word}.")
    assert fresh.search(long_word.upper()) == [record]
    assert fresh.search("a" * 71) == []
    assert fresh.search("a" * 70) == []


def test_equal_matches_come_newest_first(fresh: Engine) -> None:
    first = fresh.add("tea")
    second = fresh.add("tea")
    third = fresh.add("tea")
    assert fresh.search("tea") == [third, second, first]


def test_a_long_query_is_answered_and_one_of_too_many_words_is_refused(fresh: Engine) -> None:
    record = fresh.add("word63")
    many = " ".join(f"word{n}" for n in range(QUERY_MAX_TERMS))
    assert fresh.search(many) == [record]
    assert fresh.search("tea " * 1000) == []  # repeated words are one word
    with pytest.raises(InvalidQuery):
        fresh.search(many + " another")
    with pytest.raises(InvalidQuery):
        fresh.search("x" * 4001)


MANY = [f"word{n}" for n in range(QUERY_MAX_TERMS)]


@pytest.mark.parametrize(
    ("matching", "others", "terms"),
    [
        (RANKED_MAX + 30, 0, QUERY_MAX_TERMS),  # broad, found among the newest documents
        (RANKED_MAX + 30, 2 * (RANKED_MAX + 1), QUERY_MAX_TERMS),  # broad, found by the index
        (RANKED_MAX + 30, 0, WALK_TERMS),  # broad, few terms: the index alone
        (RANKED_MAX, 0, QUERY_MAX_TERMS),  # ranked: every document read
        (RANKED_MAX, 2 * (RANKED_MAX + 1), QUERY_MAX_TERMS),  # ranked, asked of the index
        (RANKED_MAX + 1, 0, WALK_TERMS + 1),  # broad by one
    ],
)
def test_pages_add_up_to_every_match_ranked_or_broad(
    fresh: Engine, matching: int, others: int, terms: int
) -> None:
    # The matches are the oldest; each holds one of the query's words, in turn.
    wanted = {fresh.add(f"note {MANY[n % terms]}") for n in range(matching)}
    for _ in range(others):
        fresh.add("note elsewhere")
    fresh.add("word0 of another agent", agent=OTHER_AGENT)
    query = " ".join(MANY[:terms])
    pages = [fresh.search(query, limit=40, offset=offset) for offset in range(0, matching + 40, 40)]
    found = [record_id for page in pages for record_id in page]
    assert len(found) == len(set(found))
    assert set(found) == wanted
    if matching > RANKED_MAX:  # broad: newest first, on every backend
        assert found == sorted(wanted, reverse=True)


@pytest.mark.parametrize("every", [2, 3, 5])
def test_a_broad_query_among_other_documents_pages_newest_first(fresh: Engine, every: int) -> None:
    # One document in ``every`` does not match: the newest documents are read in turn.
    ids = [
        fresh.add("note elsewhere" if n % every == 0 else f"note {MANY[n % QUERY_MAX_TERMS]}")
        for n in range(3 * (RANKED_MAX + 1))
    ]
    wanted = [record_id for n, record_id in enumerate(ids) if n % every]
    query = " ".join(MANY)
    found = [
        record_id
        for offset in range(0, len(wanted) + 50, 50)
        for record_id in fresh.search(query, limit=50, offset=offset)
    ]
    assert found == wanted[::-1]


def test_the_listing_order_is_newest_first_then_by_id_even_in_a_shared_instant(
    fresh: Engine,
) -> None:
    # The query-less listing's ORDER BY (memory.queries.listed), on each backend: a batch
    # of records can share one timestamp, and then plain id order decides.
    moment = BASE_TIME + timedelta(days=1)
    ids = ["0z", "0a", "1b", "0b", "a0", "9z"]
    for record_id in ids:
        fresh.add("x", at=moment, record_id=record_id)
    fresh.add("x", at=moment + timedelta(microseconds=1), record_id="zz")
    fresh.add("x", at=moment - timedelta(microseconds=1), record_id="00")
    fresh.execute(
        "SELECT record_id FROM memory_searchdoc WHERE agent_id = %s "
        "ORDER BY created_at DESC, record_id",
        [AGENT],
    )
    assert [row[0] for row in fresh.fetchall()] == ["zz", *sorted(ids), "00"]


# --- the property: every backend returns exactly the reference's set -----------------------

WORDS = ["tea", "Tea", "TÉA", "téa", "coffee", "café", "Cafe", "name", "am", "Ωmega", "ωμέγα"]
WORDS += ["東京", "мир", "Мир", "x" * 65, "X" * 65, "a1", "1a", "42"]
TEXT = st.lists(
    st.one_of(st.sampled_from(WORDS), st.sampled_from([" ", "-", "*", '"', ":", "😀", "\n"])),
    max_size=8,
).map("".join)


def reference(records: list[tuple[str, str | None, list[str]]], query: str) -> set[int]:
    """SPEC §6.2 in plain Python: a record matches when any query token equals any of
    its tokens (content, label and tags)."""
    wanted = set(tokenize(query))
    return {
        index
        for index, (content, label, tags) in enumerate(records)
        if wanted & set(tokenize(" ".join([content, label or "", *tags])))
    }


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    records=st.lists(
        st.tuples(TEXT.filter(bool), st.none() | TEXT, st.lists(TEXT.filter(bool), max_size=2)),
        max_size=8,
    ),
    query=TEXT,
)
def test_every_backend_returns_exactly_the_reference_set(
    engine: Engine, records: list[tuple[str, str | None, list[str]]], query: str
) -> None:
    engine.clear()
    ids = [engine.add(content, label, tags) for content, label, tags in records]
    expected = {ids[index] for index in reference(records, query)}
    assert set(engine.search(query)) == expected
