"""The key/value store's operations. Every rule that can refuse a write does so before
anything is written; a refused write changes nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.db.models import F, QuerySet
from django.db.models.functions import Collate
from django.utils import timezone

from kvstore.core.keys import (
    KEY_CHARS,
    PAYLOAD_MAX_RUNES,
    PREFIX_END,
    first_line,
    key_problem,
    runes,
)
from kvstore.models import Key, Version
from lens.actors import Actor
from lens.api_tokens import (
    TOKEN_FROM,
    TOKEN_SELECT,
    TOKEN_WHERE,
    TOKEN_WIDTH,
    find_token,
    token_from_row,
)
from lens.audit import Entry, append_one
from lens.core.diffs import unified_diff
from lens.core.errors import DomainError
from lens.models import ApiToken, Team, hash_token
from lens.rows import aware
from lens.sql import fetch_one, statement_cursor


class StoreError(DomainError):
    """A refused key/value operation."""

    code = "store_error"


class InvalidKey(StoreError):
    code = "invalid_key"


class KeyNotFound(StoreError):
    code = "key_not_found"


class VersionNotFound(StoreError):
    code = "version_not_found"


class PayloadTooLarge(StoreError):
    code = "payload_too_large"


class VersionConflict(StoreError):
    code = "version_conflict"


@dataclass(frozen=True)
class Written:
    key: str
    version: int
    written_at: datetime
    runes: int


def check_key(key: str) -> str:
    if problem := key_problem(key):
        raise InvalidKey(problem, key=key[:300])
    return key


def write(
    team: Team, key: str, payload: str, if_version: int | None = None, actor: Actor | str = "system"
) -> Written:
    """Append version n+1 (the first is 1). With ``if_version`` the write lands only if
    the current version equals it (0: only if the key does not exist).
    """
    check_key(key)
    size = _size(payload)
    now = timezone.now()
    stamp = connection.ops.adapt_datetimefield_value(now)
    line = first_line(payload)
    with transaction.atomic(), statement_cursor() as cursor:
        # One statement creates the key at version 1 or moves it to n+1 and returns
        # the new number. It holds the key row's lock (PostgreSQL) or the database's
        # write lock (SQLite, BEGIN IMMEDIATE) until commit, so concurrent writers take
        # turns: every acknowledged write has its own number and none is skipped.
        if connection.vendor == "postgresql":
            # The bump and the version's insert as one statement (one round trip),
            # which adds the version only where compare-and-swap allows it.
            version_params: list[Any] = [payload, size, line, stamp, if_version, if_version]
            cursor.execute(_BUMP_AND_ADD, [team.pk, key, stamp, size, stamp, *version_params])
            key_id, version, added = cursor.fetchone()
        else:
            cursor.execute(_BUMP_KEY, [team.pk, key, stamp, size, stamp])
            key_id, version = cursor.fetchone()
            added = if_version is None or if_version == version - 1
            if added:
                cursor.execute(_ADD_VERSION, [key_id, version, payload, size, line, stamp])
        _record(team.pk, actor, key, payload, if_version, version, added)
    return Written(key=key, version=version, written_at=now, runes=size)


def write_as(
    raw_token: str, key: str, payload: str, if_version: int | None = None
) -> Written | None:
    """``write`` for whoever holds the API token ``raw_token``, the token named as the
    actor: None when no live token is ``raw_token`` (revoked ones included, from the
    next request on). On PostgreSQL the token's check is part of the write's first
    statement, one round trip fewer. As the API checks a token before anything else, an
    invalid key or an over-long payload is refused only for a live token."""
    if connection.vendor != "postgresql" or key_problem(key) or runes(payload) > PAYLOAD_MAX_RUNES:
        token = find_token(raw_token)
        if token is None:
            return None
        return write(token.team, key, payload, if_version, Actor.for_token(token))
    size = runes(payload)
    now = timezone.now()
    stamp = connection.ops.adapt_datetimefield_value(now)
    params: list[Any] = [hash_token(raw_token), key, stamp, size, stamp]
    params += [payload, size, first_line(payload), stamp, if_version, if_version]
    with transaction.atomic(), statement_cursor() as cursor:
        cursor.execute(_BUMP_AND_ADD_AS, params)
        row = cursor.fetchone()
        if row is None:
            return None  # no live token: nothing was written, the transaction is empty
        token = token_from_row(row)
        _key_id, version, added = row[TOKEN_WIDTH:]
        _record(token.team_id, Actor.for_token(token), key, payload, if_version, version, added)
    return Written(key=key, version=version, written_at=now, runes=size)


def _size(payload: str) -> int:
    size = runes(payload)
    if size > PAYLOAD_MAX_RUNES:
        raise PayloadTooLarge(
            f"Payloads are limited to {PAYLOAD_MAX_RUNES} code points; this one has {size}.",
            limit=PAYLOAD_MAX_RUNES,
            runes=size,
        )
    return size


def _record(
    team_id: int,
    actor: Actor | str,
    key: str,
    payload: str,
    if_version: int | None,
    version: int,
    added: bool,
) -> None:
    """The end of a write, in its transaction: the compare-and-swap's refusal (which
    rolls the bump back, so nothing changes), or the write's audit event."""
    if not added:
        raise VersionConflict(
            f"Key {key!r} is at version {version - 1}, not {if_version}.",
            current_version=version - 1,
        )
    details = {"version": version, "runes": runes(payload), "sha256": payload_sha256(payload)}
    append_one(team_id, actor, Entry("kv.written", "kv", key, details=details))


def payload_sha256(payload: str) -> str:
    return hashlib.sha256(payload.encode()).hexdigest()


# The write path as plain SQL: the ORM's query building cost several times the two
# statements it ran (agents write keys every session; see docs/performance.md).
_INSERT_KEY = (
    f"INSERT INTO {Key._meta.db_table} "
    '(team_id, "key", latest_version, latest_written_at, latest_runes, created_at) '
)
_OR_BUMP_KEY = (
    'ON CONFLICT (team_id, "key") DO UPDATE SET '
    f"latest_version = {Key._meta.db_table}.latest_version + 1, "
    "latest_written_at = excluded.latest_written_at, latest_runes = excluded.latest_runes "
    "RETURNING id, latest_version"
)
_BUMP_KEY = f"{_INSERT_KEY}VALUES (%s, %s, 1, %s, %s, %s) {_OR_BUMP_KEY}"
_ADD_VERSION = (
    f"INSERT INTO {Version._meta.db_table} "
    "(key_id, version, payload, runes, first_line, written_at) VALUES (%s, %s, %s, %s, %s, %s)"
)
# PostgreSQL: both in one statement. The version is inserted only when no compare-and-
# swap was asked (NULL) or the key was at the version asked; the answer says whether.
_ADD_IF_ALLOWED = (
    f"INSERT INTO {Version._meta.db_table} "
    "(key_id, version, payload, runes, first_line, written_at) "
    "SELECT id, latest_version, %s, %s, %s, %s FROM bumped "
    "WHERE %s::bigint IS NULL OR latest_version = %s::bigint + 1 RETURNING 1"
)
_BUMP_AND_ADD = (
    f"WITH bumped AS ({_BUMP_KEY}), added AS ({_ADD_IF_ALLOWED}) "
    "SELECT id, latest_version, EXISTS (SELECT 1 FROM added) FROM bumped"
)
# The same for an API token's holder (``write_as``): the token's check first, and the
# key written for its team. No row: no live token, and nothing was written.
_BUMP_AND_ADD_AS = (
    f"WITH tok AS ({TOKEN_SELECT}{TOKEN_FROM}{TOKEN_WHERE}), "
    f"bumped AS ({_INSERT_KEY}SELECT team_id, %s, 1, %s, %s, %s FROM tok {_OR_BUMP_KEY}), "
    f"added AS ({_ADD_IF_ALLOWED}) "
    "SELECT tok.*, b.id, b.latest_version, EXISTS (SELECT 1 FROM added) "
    "FROM tok LEFT JOIN bumped b ON true"
)


@dataclass(frozen=True)
class Value:
    key: str
    version: int
    payload: str
    written_at: datetime
    runes: int


# The hot path: agents read by name every session. One indexed join, without the
# ORM's per-query construction cost (it was most of the time of a read). The version is
# joined to its key (left join): a key without the asked version still answers, so one
# statement tells a missing key from a missing version. Versions run 1..latest without
# gaps (writes append; delete removes the key), so the latest is ``latest_version``.
_READ_COLUMNS = "k.id, v.version, v.payload, v.written_at, v.runes"
_LATEST_JOIN = (
    f" LEFT JOIN {Version._meta.db_table} v ON v.key_id = k.id AND v.version = k.latest_version"
)
_PINNED_JOIN = f" LEFT JOIN {Version._meta.db_table} v ON v.key_id = k.id AND v.version = %s"
_KEY_TABLE = f"{Key._meta.db_table} k"
_READ_WHERE = ' WHERE k.team_id = %s AND k."key" = %s'
_LATEST = f"SELECT {_READ_COLUMNS} FROM {_KEY_TABLE}{_LATEST_JOIN}{_READ_WHERE}"
_PINNED = f"SELECT {_READ_COLUMNS} FROM {_KEY_TABLE}{_PINNED_JOIN}{_READ_WHERE}"
# The same read joined to the API token's check (``lens.api_tokens``): one statement, one
# round trip, for an API read. No row: no live token. A row: the token, and the read.
_TOKEN_KEY_JOIN = f' LEFT JOIN {_KEY_TABLE} ON k.team_id = t.team_id AND k."key" = %s'
_LATEST_AS = (
    f"{TOKEN_SELECT}, {_READ_COLUMNS}{TOKEN_FROM}{_TOKEN_KEY_JOIN}{_LATEST_JOIN}{TOKEN_WHERE}"
)
_PINNED_AS = (
    f"{TOKEN_SELECT}, {_READ_COLUMNS}{TOKEN_FROM}{_TOKEN_KEY_JOIN}{_PINNED_JOIN}{TOKEN_WHERE}"
)


def read(team: Team, key: str, version: int | None = None) -> Value:
    """The latest version, or the pinned one. A missing key is an error."""
    check_key(key)
    with statement_cursor() as cursor:
        if version is None:
            cursor.execute(_LATEST, [team.pk, key])
        else:
            cursor.execute(_PINNED, [version, team.pk, key])
        found = cursor.fetchone()
    return _value(key, version, found)


def _value(key: str, version: int | None, found: Sequence[Any] | None) -> Value:
    """A read's row (key id, then the version's columns) as the value, or its error."""
    if found is None or found[0] is None:
        raise KeyNotFound(f"No key {key!r}.", key=key)
    _key_id, number, payload, written_at, size = found
    if number is None:
        raise VersionNotFound(f"Key {key!r} has no version {version}.", version=version)
    return Value(key=key, version=number, payload=payload, written_at=aware(written_at), runes=size)


@dataclass(frozen=True)
class ReadAs:
    """A read made with an API token's check: the token, and the read's outcome."""

    key: str
    version: int | None
    _token_row: tuple[Any, ...]
    _row: tuple[Any, ...]

    @property
    def token(self) -> ApiToken:
        """The token, with its team (built when asked: the key/value read's own route,
        ``web.api.kv_front``, never needs it)."""
        return token_from_row(self._token_row)

    def value(self) -> Value:
        """The value read, or the read's error (as ``read`` raises it)."""
        return _value(self.key, self.version, self._row)


def read_as(raw_token: str, key: str, version: int | None = None) -> ReadAs | None:
    """``read`` for whoever holds the API token ``raw_token``, in one statement with the
    token's check: None when no live token is ``raw_token`` (revoked ones included, from
    the next request on). An invalid key is refused (``InvalidKey``) before the check
    only by ``read``: the caller checks the key first."""
    if not raw_token:
        return None
    digest = hash_token(raw_token)
    if version is None:
        row = fetch_one(_LATEST_AS, [key, digest])
    else:
        row = fetch_one(_PINNED_AS, [key, version, digest])
    if row is None:
        return None
    return ReadAs(key, version, row[:TOKEN_WIDTH], row[TOKEN_WIDTH:])


def get_key(team: Team, key: str) -> Key:
    check_key(key)
    row = Key.objects.filter(team=team, key=key).first()
    if row is None:
        raise KeyNotFound(f"No key {key!r}.", key=key)
    return row


@dataclass(frozen=True)
class VersionMeta:
    version: int
    written_at: datetime
    runes: int
    first_line: str


@dataclass(frozen=True)
class History:
    key: str
    versions: list[VersionMeta]
    # Versions are 1..latest with no gaps: writes append, nothing prunes, and delete
    # removes the key with every version. So the total is the latest version: no count.
    total_versions: int


def history(team: Team, key: str, limit: int, offset: int) -> History:
    """Metadata of versions, newest first. Never reads a payload."""
    row = get_key(team, key)
    versions = (
        Version.objects.filter(key=row)
        .order_by("-version")
        .values_list("version", "written_at", "runes", "first_line")[offset : offset + limit]
    )
    return History(
        key=row.key,
        versions=[VersionMeta(*fields) for fields in versions],
        total_versions=row.latest_version,
    )


@dataclass(frozen=True)
class KeyMeta:
    key: str
    version: int
    written_at: datetime
    runes: int


@dataclass(frozen=True)
class KeyPage:
    keys: list[KeyMeta]
    total: int


def _ordered_key() -> F | Collate:
    # Code-point order: SQLite's default comparison already is; PostgreSQL's may be
    # locale-aware, so compare in the "C" collation (kv_key_order indexes it).
    return Collate(F("key"), "C") if connection.vendor == "postgresql" else F("key")


def keys_with_prefix(team: Team, prefix: str) -> QuerySet[Key]:
    """Keys starting with ``prefix`` (plain characters: '_' and ':' are literal),
    in code-point order.
    """
    rows = Key.objects.filter(team=team).alias(ordered=_ordered_key())
    if not KEY_CHARS.issuperset(prefix):
        # A character no key holds: nothing matches (and PostgreSQL cannot compare a NUL).
        return rows.none()
    if prefix:
        rows = rows.filter(ordered__gte=prefix, ordered__lt=prefix + PREFIX_END)
    return rows.order_by("ordered")


def delete(team: Team, key: str, actor: Actor | str = "system") -> int:
    """Remove every version of ``key``; returns how many there were."""
    with transaction.atomic():
        row = Key.objects.select_for_update().filter(team=team, key=check_key(key)).first()
        if row is None:
            raise KeyNotFound(f"No key {key!r}.", key=key)
        count = row.versions.count()
        row.delete()
        append_one(team.pk, actor, Entry("kv.deleted", "kv", key, details={"versions": count}))
    return count


def list_keys(team: Team, prefix: str, limit: int, offset: int) -> KeyPage:
    """A page of keys starting with ``prefix``, in code-point order, with the total."""
    rows = keys_with_prefix(team, prefix)
    page = rows.values_list("key", "latest_version", "latest_written_at", "latest_runes")
    return KeyPage(
        keys=[KeyMeta(*fields) for fields in page[offset : offset + limit]],
        total=rows.count(),
    )


@dataclass(frozen=True)
class Diff:
    key: str
    old: Value
    new: Value
    text: str  # a unified diff; empty when the versions are identical


def diff(team: Team, key: str, old: int, new: int) -> Diff:
    """The unified diff from version ``old`` to version ``new``."""
    before, after = read(team, key, old), read(team, key, new)
    text = unified_diff(before.payload, after.payload, f"{key}@{old}", f"{key}@{new}")
    return Diff(key=key, old=before, new=after, text=text)
