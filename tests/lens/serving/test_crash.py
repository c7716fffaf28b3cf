"""Crash safety of the production server (SPEC §13): four clients write key/value versions
and memories through ``make serve``, the whole server is killed with SIGKILL mid-stream
and started again on the same database, and every write it acknowledged reads back.
The database comes out intact too: SQLite's ``integrity_check`` (and FTS5's own check),
PostgreSQL's ``amcheck``, and on both the rows that must be written together are.
"""

from __future__ import annotations

import http.client
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.factories import memory_config
from tests.serving import (
    ON_POSTGRESQL,
    Server,
    clean_env,
    manage,
    scratch_database,
    serving,
    start_serve,
    strong_key,
)

pytestmark = pytest.mark.slow

CLIENTS = 4
TEAM = "crash"
AGENT = "scribe"
# The kill comes once every client has had at least this many writes of each kind
# acknowledged (and a second has passed), so it lands mid-stream, never at the start.
ACKED_BEFORE_KILL = 25
PAGE = 200  # the API's largest page


# --- the database ----------------------------------------------------------------------


@pytest.fixture
def database_url(tmp_path: Path) -> Iterator[str]:
    """A scratch database of the session's backend, never the test database: the server
    runs in other processes, and the crash leaves the database as a crash leaves it."""
    with scratch_database(tmp_path, "lens_crash") as url:
        yield url


# --- HTTP ------------------------------------------------------------------------------


class Api:
    """One keep-alive connection to the server, sending the team's token."""

    def __init__(self, port: int, token: str) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body)
        self.connection.request(method, path, body=data, headers=self.headers)
        response = self.connection.getresponse()
        raw = response.read()
        try:
            return response.status, json.loads(raw)
        except ValueError:  # not the API's JSON: keep the text for the failure message
            return response.status, raw.decode(errors="replace")

    def close(self) -> None:
        self.connection.close()


@dataclass
class Writer:
    """What one client sent, in order, and what the server acknowledged."""

    n: int
    kv_sent: list[str] = field(default_factory=list)
    kv_acked: dict[int, str] = field(default_factory=dict)  # version -> payload
    memories_sent: list[str] = field(default_factory=list)
    memories_acked: dict[str, str] = field(default_factory=dict)  # id -> content
    # Answers a healthy server never gives, and connections lost before the kill.
    surprises: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"crash.c{self.n}"

    def acked(self) -> int:
        return min(len(self.kv_acked), len(self.memories_acked))

    def run(self, port: int, token: str, killed: threading.Event) -> None:
        api = Api(port, token)
        seq = 0
        try:
            while not self.surprises:
                seq += 1
                payload = f"client {self.n} write {seq}\n" + f"line of client {self.n}. " * 20
                self.kv_sent.append(payload)
                status, body = api.call("PUT", f"/api/kv/{self.key}", {"payload": payload})
                if status in (200, 201):
                    self.kv_acked[body["version"]] = payload
                else:
                    self.surprises.append(f"PUT {self.key} #{seq}: {status} {body}")
                # A token of its own in each memory, so a search finds exactly that one;
                # profiles land in an auto section (approved), preferences queue (pending).
                content = f"Client {self.n} learned fact c{self.n}m{seq} today."
                kind = "profile" if seq % 2 else "preference"
                self.memories_sent.append(content)
                status, body = api.call(
                    "POST", f"/api/agents/{AGENT}/memories", {"kind": kind, "content": content}
                )
                if status == 201:
                    self.memories_acked[body["id"]] = content
                else:
                    self.surprises.append(f"POST memory #{seq}: {status} {body}")
        except (OSError, http.client.HTTPException) as exc:
            if not killed.is_set():
                self.surprises.append(f"connection lost before the kill: {exc!r}")
        finally:
            api.close()


def write_until_killed(server: Server, token: str) -> list[Writer]:
    """Four clients write until the server is killed under them; returns what they saw."""
    writers = [Writer(n) for n in range(CLIENTS)]
    killed = threading.Event()
    threads = [
        threading.Thread(target=writer.run, args=(server.port, token, killed), daemon=True)
        for writer in writers
    ]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    deadline = started + 30
    while time.monotonic() - started < 1 or min(w.acked() for w in writers) < ACKED_BEFORE_KILL:
        assert not any(w.surprises for w in writers), [w.surprises for w in writers]
        assert all(t.is_alive() for t in threads), "a client stopped before the kill"
        assert time.monotonic() < deadline, f"acknowledged in 30 s: {[w.acked() for w in writers]}"
        time.sleep(0.02)
    # Set first: any connection error a client sees from here on is the kill's.
    killed.set()
    server.kill()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(t.is_alive() for t in threads)
    assert not any(w.surprises for w in writers), [w.surprises for w in writers]
    return writers


# --- reading back ------------------------------------------------------------------------


def pages(api: Api, path: str, items: str) -> list[Any]:
    """Every item of a paged listing (``limit``/``offset``), first page first."""
    found: list[Any] = []
    while True:
        separator = "&" if "?" in path else "?"
        status, body = api.call("GET", f"{path}{separator}limit={PAGE}&offset={len(found)}")
        assert status == 200, body
        found.extend(body[items])
        if len(body[items]) < PAGE:
            return found


def check_key(api: Api, writer: Writer) -> int:
    """The writer's key holds versions 1..latest, each the payload sent for it; returns
    the latest version."""
    # One writer per key, one write at a time: version v is its v-th write, and at most
    # the write in flight at the kill may have landed without an answer.
    acked = max(writer.kv_acked)
    assert sorted(writer.kv_acked) == list(range(1, acked + 1))
    assert all(writer.kv_acked[v] == writer.kv_sent[v - 1] for v in writer.kv_acked)
    status, latest = api.call("GET", f"/api/kv/{writer.key}")
    assert status == 200, latest
    top: int = latest["version"]
    assert acked <= top <= len(writer.kv_sent), (acked, top, len(writer.kv_sent))
    history = pages(api, f"/api/kv/{writer.key}/history", "versions")
    assert [row["version"] for row in history] == list(range(top, 0, -1))
    for version in range(1, top + 1):
        status, body = api.call("GET", f"/api/kv/{writer.key}?version={version}")
        assert status == 200, (writer.key, version, body)
        assert body["payload"] == writer.kv_sent[version - 1], (writer.key, version)
    return top


def check_memories(api: Api, writers: list[Writer]) -> int:
    """Every acknowledged memory is listed and found by search; nothing unsent appears.
    Returns how many memories the agent holds."""
    listed = pages(api, f"/api/agents/{AGENT}/memories", "memories")
    contents = {memory["id"]: memory["content"] for memory in listed}
    assert len(contents) == len(listed), "a memory is listed twice"
    acked = {id_: content for w in writers for id_, content in w.memories_acked.items()}
    missing = {id_: content for id_, content in acked.items() if contents.get(id_) != content}
    assert missing == {}, f"{len(missing)} acknowledged memories are missing"
    sent = {content for w in writers for content in w.memories_sent}
    assert set(contents.values()) <= sent
    # Beyond the acknowledged ones, at most the save each client had in flight.
    assert len(contents) <= len(acked) + CLIENTS
    for id_, content in acked.items():
        token = content.split()[4]  # c<n>m<seq>
        status, body = api.call("GET", f"/api/agents/{AGENT}/memories?q={token}")
        assert status == 200, body
        assert [memory["id"] for memory in body["memories"]] == [id_], (token, body)
    return len(contents)


# --- the database's own checks -----------------------------------------------------------

KEYS = """
    SELECT k.key, k.latest_version, COUNT(*), COUNT(DISTINCT v.version),
           MIN(v.version), MAX(v.version)
    FROM kvstore_key k JOIN kvstore_version v ON v.key_id = k.id
    GROUP BY k.id, k.key, k.latest_version ORDER BY k.key
"""
# A memory is saved with its promotion row, its search terms and its "saved" event in one
# transaction: a crash leaves all of them or none.
MEMORIES = """
    SELECT COUNT(*),
           (SELECT COUNT(*) FROM memory_promotion),
           (SELECT COUNT(*) FROM memory_searchdoc),
           (SELECT COUNT(DISTINCT record_id) FROM memory_memoryevent WHERE kind = 'saved')
    FROM memory_memoryrecord
"""


def check_rows(query: Callable[[str], list[Any]], latest: dict[str, int], memories: int) -> None:
    """Each key's index row agrees with its versions, which run 1..latest without a gap
    or a duplicate; each memory has its promotion, search terms and event."""
    assert [tuple(row) for row in query(KEYS)] == [
        (key, top, top, top, 1, top) for key, top in sorted(latest.items())
    ]
    assert [tuple(row) for row in query(MEMORIES)] == [(memories,) * 4]


def check_sqlite(path: Path, latest: dict[str, int], memories: int) -> None:
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        # FTS5's own check, against its external content table too (rank 1); it raises
        # when the index and memory_searchdoc disagree.
        db.execute("INSERT INTO memory_fts(memory_fts, rank) VALUES ('integrity-check', 1)")
        db.rollback()
        check_rows(lambda q: db.execute(q).fetchall(), latest, memories)


# Every B-tree index against its table (heapallindexed) and every table's heap and TOAST:
# bt_index_parent_check raises on corruption, verify_heapam returns a row per problem.
AMCHECK_INDEXES = """
    SELECT bt_index_parent_check(c.oid, true)
    FROM pg_class c JOIN pg_am am ON am.oid = c.relam
    WHERE c.relkind = 'i' AND am.amname = 'btree' AND c.relnamespace = 'public'::regnamespace
"""
AMCHECK_TABLES = """
    SELECT c.relname, v.blkno, v.offnum, v.msg
    FROM pg_class c, verify_heapam(c.oid, check_toast => true) v
    WHERE c.relkind = 'r' AND c.relnamespace = 'public'::regnamespace
"""


def check_postgresql(url: str, latest: dict[str, int], memories: int) -> None:
    with psycopg.connect(url, autocommit=True) as db:
        db.execute("CREATE EXTENSION IF NOT EXISTS amcheck")
        assert db.execute(AMCHECK_INDEXES).fetchall()
        assert db.execute(AMCHECK_TABLES).fetchall() == []
        check_rows(lambda q: db.execute(q).fetchall(), latest, memories)


# --- the test ----------------------------------------------------------------------------


def test_every_acknowledged_write_survives_a_sigkill_of_the_server(
    tmp_path: Path, database_url: str
) -> None:
    env = clean_env(
        DEBUG="0",
        SECRET_KEY=strong_key(),
        ALLOWED_HOSTS="127.0.0.1",
        DATABASE_URL=database_url,
        STATIC_ROOT=str(tmp_path / "static"),
    )
    first = start_serve(env, tmp_path / "serve-1.log")
    try:
        manage(env, "create_team", TEAM)
        token = manage(env, "issue_token", TEAM).splitlines()[-1]
        setup = Api(first.port, token)
        status, body = setup.call("PUT", f"/api/agents/{AGENT}", memory_config(name="Scribe"))
        setup.close()
        assert status == 201, body
        writers = write_until_killed(first, token)
    finally:
        first.kill()
    acked_memories = sum(len(w.memories_acked) for w in writers)
    print(
        "acknowledged (versions, memories):",
        [(len(w.kv_acked), len(w.memories_acked)) for w in writers],
    )

    with serving(env, tmp_path / "serve-2.log") as second:
        api = Api(second.port, token)
        latest = {writer.key: check_key(api, writer) for writer in writers}
        memories = check_memories(api, writers)
        print(
            "held after the restart: versions",
            latest,
            f"memories {memories} of {acked_memories} acknowledged",
        )
        # The store goes on from where the crash left it.
        status, body = api.call("PUT", f"/api/kv/{writers[0].key}", {"payload": "after"})
        assert (status, body["version"]) == (200, latest[writers[0].key] + 1)
        latest[writers[0].key] += 1
        api.close()

    if ON_POSTGRESQL:
        check_postgresql(database_url, latest, memories)
    else:
        check_sqlite(Path(database_url.removeprefix("sqlite:///")), latest, memories)
