"""The audit log: every change, appended to its team's log in the change's own
transaction, each event sealing the one before it (SPEC §15).

``append`` is the one function that writes events; every operation that changes
something calls it (directly, or through the one writer of its kind of change:
``lens.revisions.record_revision``, ``memory.events.write_events``, …). A change that is
refused or rolled back takes its events with it: they are rows of the same transaction.

An event's ``sha256`` is the SHA-256 of its canonical JSON without ``sha256`` — keys
sorted, no spaces, UTF-8 — exactly as the API answers it; that JSON holds
``prev_sha256``, the hash of the team's event before (64 zeros for the first). Changing,
removing or reordering any event breaks the chain from there on, and ``verify`` names
the first event that no longer fits.

Numbers have no gaps however many write at once: appending first moves the team's
chain head (``AuditHead``) forward in one statement, which holds the head's row lock
(PostgreSQL) or the database's write lock (SQLite) until the transaction ends.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson
from django.db import connection, transaction
from django.utils import timezone

from lens.actors import Actor
from lens.core.audit_actions import ACTIONS
from lens.inserts import insert_unless_taken
from lens.models import Agent, AuditEvent, AuditHead, AuditPurge, Team
from lens.sql import statement_cursor

GENESIS = "0" * 64

# Called with a team's id, its events just appended (each as the API answers it) and
# the rows its ``reads`` found, in the appending transaction: how events leave the
# product (``webhooks.outbox``) without the base layer knowing of it.
Listener = Callable[[int, list[dict[str, Any]], list[tuple[Any, ...]]], None]


@dataclass(frozen=True)
class _Listening:
    listener: Listener
    reads: str


_listeners: list[_Listening] = []


def listen(listener: Listener, *, reads: str = "") -> None:
    """Have ``listener`` called after every append (once, however often it is asked).

    ``reads``: a SELECT of what the listener needs to know of the team (its one
    parameter is the team's id; an empty string reads nothing). On PostgreSQL it runs in
    the append's last statement, one round trip for both; elsewhere alone, right after.
    """
    if all(listening.listener is not listener for listening in _listeners):
        _listeners.append(_Listening(listener, reads))


# Events read at a time when the whole log is checked: memory stays flat however long.
_VERIFY_CHUNK = 2000


@dataclass(frozen=True)
class Entry:
    """One event to append: what happened to which object. ``details`` holds ids,
    sizes, hashes and counts: never content."""

    action: str
    object_type: str
    object_id: str
    agent: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    actor: str | None = None  # who, when not the one actor ``append`` is given


def stamp(at: datetime) -> str:
    """An event's time as the API writes it and the hash covers it: UTC, microseconds."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def canonical(data: Mapping[str, Any]) -> str:
    """Keys sorted, no spaces, UTF-8: the text of ``json.dumps(..., sort_keys=True,
    separators=(",", ":"), ensure_ascii=False)``, written by orjson when it can (events
    hold strings, integers, booleans and nulls, which both write alike; a lone
    surrogate, which orjson refuses, falls back)."""
    try:
        return orjson.dumps(data, option=orjson.OPT_SORT_KEYS).decode()
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _shape(
    seq: int,
    at: str,
    actor: str,
    action: str,
    object_type: str,
    object_id: str,
    agent: str | None,
    details: Mapping[str, Any],
    prev_sha256: str,
) -> dict[str, Any]:
    """An event as the API answers it and its hash covers it (without ``sha256``): the
    one definition both the writer and the readers use."""
    return {
        "seq": seq,
        "at": at,
        "actor": actor,
        "action": action,
        "object": {"type": object_type, "id": object_id},
        "agent": agent,
        "details": details,
        "prev_sha256": prev_sha256,
    }


def event_data(row: AuditEvent) -> dict[str, Any]:
    """The event as the API answers it, ``sha256`` included."""
    data = _shape(
        row.seq,
        stamp(row.at),
        row.actor,
        row.action,
        row.object_type,
        row.object_id,
        row.agent,
        row.details,
        row.prev_sha256,
    )
    data["sha256"] = row.sha256
    return data


def seal(data: Mapping[str, Any]) -> str:
    """The hash of an event: of its canonical JSON without ``sha256``."""
    unsealed = {name: value for name, value in data.items() if name != "sha256"}
    return _hash(unsealed)


def _hash(unsealed: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical(unsealed).encode()).hexdigest()


# Creates the head at N events, or moves it N forward; answers the new number and the
# hash of the event before the first new one (the head's hash is set after).
_HEAD = AuditHead._meta.db_table
_EVENTS = AuditEvent._meta.db_table
_BUMP = (
    f"INSERT INTO {_HEAD} (team_id, seq, sha256) VALUES (%s, %s, %s) "
    f"ON CONFLICT (team_id) DO UPDATE SET seq = {_HEAD}.seq + %s "
    "RETURNING seq, sha256"
)
# PostgreSQL: the agents named locked first, then the bump, in one statement (the
# uncorrelated subquery runs before the row it guards is inserted).
_LOCK_AND_BUMP = (
    f"WITH named AS (SELECT 1 FROM {Agent._meta.db_table} WHERE team_id = %s "
    "AND slug = ANY(%s) ORDER BY id FOR KEY SHARE) "
    f"INSERT INTO {_HEAD} (team_id, seq, sha256) SELECT %s, %s, %s "
    "WHERE (SELECT count(*) FROM named) >= 0 "
    f"ON CONFLICT (team_id) DO UPDATE SET seq = {_HEAD}.seq + %s "
    "RETURNING seq, sha256"
)
# PostgreSQL: a change's own row inserted first (``first``), in the same statement, and
# the head bumped only when it was: the agents' lock, then the row, then the head.
_FIRST_LOCK_AND_BUMP = (
    "WITH named AS (SELECT 1 FROM {agents} WHERE team_id = %s "
    "AND slug = ANY(%s) ORDER BY id FOR KEY SHARE), "
    "written AS ({first} ON CONFLICT DO NOTHING RETURNING 1) "
    "INSERT INTO {head} (team_id, seq, sha256) SELECT %s, %s, %s "
    "WHERE (SELECT count(*) FROM named) >= 0 AND EXISTS (SELECT 1 FROM written) "
    "ON CONFLICT (team_id) DO UPDATE SET seq = {head}.seq + %s "
    "RETURNING seq, sha256"
)
_SET_HEAD = f"UPDATE {_HEAD} SET sha256 = %s WHERE team_id = %s"
_COLUMNS = (
    "team_id, seq, at, actor, action, object_type, object_id, agent, details, prev_sha256, sha256"
)
# Rows per INSERT statement: a bulk decision of thousands of memories stays within every
# database's limit on parameters.
_ROWS_PER_INSERT = 500


def _insert(vendor: str, rows: int) -> str:
    details = "%s::jsonb" if vendor == "postgresql" else "%s"
    row = f"(%s, %s, %s, %s, %s, %s, %s, %s, {details}, %s, %s)"
    return f"INSERT INTO {_EVENTS} ({_COLUMNS}) VALUES " + ", ".join([row] * rows)


def append(
    team_id: int,
    actor: Actor | str,
    entries: Sequence[Entry],
    *,
    first: tuple[str, Sequence[Any]] | None = None,
) -> bool:
    """Append ``entries`` to the log of team ``team_id``, in order, in the caller's
    transaction.

    ``first``: the change's own row, a plain ``INSERT`` and its parameters, to write
    before the events unless a row already has one of its unique values (then nothing
    is written or appended, and the answer is False). On PostgreSQL it goes in the same
    statement as the head's bump, one round trip for both; elsewhere alone, just before.

    Plain SQL, as the key/value writes: it rides on every write an agent makes, and the
    ORM's insert cost several times the statements themselves. Three statements (two on
    PostgreSQL, where the insert, the head's hash and the listeners' reads are one, and
    the agents' lock and the bump another) whatever the count.

    On PostgreSQL the agents the events name are locked (FOR KEY SHARE) before the head.
    Django defers foreign-key checks to the commit, and the check of a delivery's or a
    saved memory's row locks its agent so: taken then, after the head, it would wait for
    a change of the agent that holds the agent's row and waits for the head — a
    deadlock. Taken here, every transaction locks the agent before the head, as a
    change of the agent does (``lens.revisions.record_revision``).
    """
    if not entries:
        if first is not None:
            raise ValueError("a change's own row is written with its events")
        return True
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("audit events are appended in the transaction of their change")
    unknown = [entry.action for entry in entries if entry.action not in ACTIONS]
    if unknown:
        raise ValueError(f"unknown audit action {unknown[0]!r}")
    label = actor if isinstance(actor, str) else actor.label
    count = len(entries)
    with statement_cursor() as cursor:
        agents = sorted({entry.agent for entry in entries if entry.agent is not None})
        postgresql = connection.vendor == "postgresql"
        if first is not None and not postgresql and not insert_unless_taken(first):
            return False
        if first is not None and postgresql:
            cursor.execute(
                _first_lock_and_bump(first[0]),
                [team_id, agents, *first[1], team_id, count, GENESIS, count],
            )
        elif agents and postgresql:
            cursor.execute(_LOCK_AND_BUMP, [team_id, agents, team_id, count, GENESIS, count])
        else:
            cursor.execute(_BUMP, [team_id, count, GENESIS, count])
        bumped = cursor.fetchone()
        if bumped is None:  # ``first``'s row was not written
            return False
        last, prev = bumped
        at = timezone.now()
        when, stored_at = stamp(at), connection.ops.adapt_datetimefield_value(at)
        params: list[Any] = []
        appended: list[dict[str, Any]] = []
        for seq, entry in enumerate(entries, start=last - count + 1):
            who = (entry.actor or label)[:200]
            ident = entry.object_id[:300]
            details = dict(entry.details)
            shaped = _shape(
                seq, when, who, entry.action, entry.object_type, ident, entry.agent, details, prev
            )
            sha = _hash(shaped)
            params += [team_id, seq, stored_at, who, entry.action, entry.object_type, ident]
            params += [entry.agent, canonical(details), prev, sha]
            if _listeners:
                shaped["sha256"] = sha
                appended.append(shaped)
            prev = sha
        found = _write(cursor, team_id, params, count, prev)
    for listening, rows in zip(_listeners, found, strict=True):
        listening.listener(team_id, appended, rows)
    return True


def _first_lock_and_bump(first: str) -> str:
    return _FIRST_LOCK_AND_BUMP.format(agents=Agent._meta.db_table, first=first, head=_HEAD)


def _write(
    cursor: Any, team_id: int, params: list[Any], count: int, head: str
) -> list[list[tuple[Any, ...]]]:
    """Insert the events and set the head's hash; answer each listener's rows."""
    per_row = 11
    reading = [listening.reads for listening in _listeners]
    for start in range(0, count, _ROWS_PER_INSERT):
        chunk = params[start * per_row : (start + _ROWS_PER_INSERT) * per_row]
        rows = len(chunk) // per_row
        last_chunk = start + _ROWS_PER_INSERT >= count
        if last_chunk and connection.vendor == "postgresql":
            # The insert, the head's new hash and a listener's read: one round trip.
            first = next((n for n, reads in enumerate(reading) if reads), None)
            main = reading[first] if first is not None else "SELECT 1"
            cursor.execute(
                f"WITH added AS ({_insert('postgresql', rows)} RETURNING 1), "
                f"head AS (UPDATE {_HEAD} SET sha256 = %s WHERE team_id = %s RETURNING 1) "
                f"{main}",
                [*chunk, head, team_id, *([team_id] if first is not None else [])],
            )
            found = cursor.fetchall() if first is not None else []
            return [
                found if n == first else _read(cursor, reads, team_id)
                for n, reads in enumerate(reading)
            ]
        cursor.execute(_insert(connection.vendor, rows), chunk)
    cursor.execute(_SET_HEAD, [head, team_id])
    return [_read(cursor, reads, team_id) for reads in reading]


def _read(cursor: Any, reads: str, team_id: int) -> list[tuple[Any, ...]]:
    if not reads:
        return []
    cursor.execute(reads, [team_id])
    return list(cursor.fetchall())


def append_one(
    team_id: int,
    actor: Actor | str,
    entry: Entry,
    *,
    first: tuple[str, Sequence[Any]] | None = None,
) -> bool:
    return append(team_id, actor, [entry], first=first)


def events_after(
    team: Team, after: int, limit: int, *, agent: str = "", action: str = ""
) -> list[AuditEvent]:
    """Up to ``limit`` + 1 of ``team``'s events with ``seq`` above ``after``, oldest
    first (the one more tells the caller whether a next page exists). Each filter is
    an index range: (team, agent, seq) or (team, action, seq)."""
    rows = AuditEvent.objects.filter(team=team, seq__gt=after)
    if agent:
        rows = rows.filter(agent=agent)
    if action:
        rows = rows.filter(action=action)
    return list(rows.order_by("seq")[: limit + 1])


# --- checking the chain --------------------------------------------------------------


@dataclass(frozen=True)
class Verified:
    team: str
    events: int  # how many were checked before the first problem (all, when none)
    head: str  # the hash of the newest event (64 zeros: an empty log)
    first_bad: int | None = None  # the first ``seq`` that was changed, removed or reordered
    problem: str = ""


def verify(team: Team) -> Verified:
    """Check ``team``'s whole log, oldest first, in bounded memory."""
    expected, prev = 1, GENESIS
    rows = AuditEvent.objects.filter(team=team).order_by("seq").iterator(chunk_size=_VERIFY_CHUNK)
    for row in rows:
        problem = _misfit(row, expected, prev)
        if problem is not None:
            return Verified(team.slug, expected - 1, prev, expected, problem)
        expected, prev = expected + 1, row.sha256
    head = AuditHead.objects.filter(team=team).values_list("seq", "sha256").first()
    if (head or (0, GENESIS)) != (expected - 1, prev):
        return Verified(
            team.slug,
            expected - 1,
            prev,
            expected,
            f"event {expected} and after were removed: the chain head says "
            f"{head[0] if head else 0} events",
        )
    return Verified(team.slug, expected - 1, prev)


def _misfit(row: AuditEvent, expected: int, prev: str) -> str | None:
    if row.seq != expected:
        return f"event {expected} was removed (the next event is {row.seq})"
    if seal(event_data(row)) != row.sha256:
        return f"event {row.seq} was changed: its hash does not match its content"
    if row.prev_sha256 != prev:
        return f"event {row.seq} does not follow event {row.seq - 1}: removed or reordered"
    return None


# --- a head kept elsewhere --------------------------------------------------------------

_HEX = frozenset("0123456789abcdef")


def kept_head(found: Verified) -> str:
    """The head ``found`` ended at, as ``verify_audit --expect`` takes it: ``SEQ:SHA256``."""
    return f"{found.events}:{found.head}"


def parse_kept_head(text: str) -> tuple[int, str]:
    """``SEQ:SHA256`` as ``kept_head`` writes it; ValueError saying what is wrong."""
    seq, colon, sha = text.strip().partition(":")
    sha = sha.lower()
    if not colon or not seq.isdecimal() or len(sha) != 64 or not set(sha) <= _HEX:
        raise ValueError(
            f"--expect takes SEQ:SHA256 as doctor prints it (an event number, a colon and "
            f"64 hex digits), not {text[:100]!r}"
        )
    if int(seq) == 0 and sha != GENESIS:
        raise ValueError("--expect 0: an empty log's head is 64 zeros")
    return int(seq), sha


def missing_head(team: Team, seq: int, sha256: str) -> str | None:
    """What is wrong when ``team``'s log no longer holds event ``seq`` with hash
    ``sha256`` (a head printed earlier and kept elsewhere); None when it does.

    Run after ``verify`` passed, so the events it reaches are a whole chain: a kept
    event gone means the log was cut back past it (with its head moved back, or
    ``verify`` would have said so), and another hash at its number means the chain was
    rewritten there or before. One index lookup."""
    if seq == 0:
        return None  # every log began at the empty one
    stored = AuditEvent.objects.filter(team=team, seq=seq).values_list("sha256", flat=True)
    found = stored.first()
    if found is None:
        last = AuditEvent.objects.filter(team=team).order_by("-seq").values_list("seq", flat=True)
        return f"event {seq} is gone: the log was cut back to {last.first() or 0} events"
    if found != sha256:
        return (
            f"event {seq} now has hash {found}, not {sha256}: the log was rewritten at or "
            f"before event {seq}"
        )
    return None


def verify_all(slug: str | None = None) -> Iterator[Verified]:
    teams = Team.objects.order_by("slug")
    if slug is not None:
        teams = teams.filter(slug=slug)
    for team in teams:
        yield verify(team)


# --- deleting a team deletes its log --------------------------------------------------


def allow_purge(team_id: int) -> None:
    """Let the database delete ``team_id``'s events and chain head within this
    transaction (the team is being deleted: ``lens.signals``). On PostgreSQL only the
    tables' owner may (``lens.audit_guard``): another login's team deletion stops here."""
    AuditPurge.objects.get_or_create(team_id=team_id)


def end_purge(team_id: int) -> None:
    AuditPurge.objects.filter(team_id=team_id).delete()


# --- who acts where no operation says: a person's page request, or the system ------------

_acting: ContextVar[Any] = ContextVar("lens_audit_acting", default=None)


def acting_label() -> str:
    """Who the current request's person is (``ActingPersonMiddleware``), or ``system``
    (a command, a migration): the actor of changes made through Django's own forms."""
    request = _acting.get()
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return str(user.get_username())
    return "system"


@contextmanager
def acting_for(request: Any) -> Iterator[None]:
    token = _acting.set(request)
    try:
        yield
    finally:
        _acting.reset(token)
