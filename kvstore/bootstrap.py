"""One read for a session's start (SPEC §7.1): ``root``, the ``must.*`` tier with
payloads within the budget, and ``ref.*`` pointers whose payloads are never read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction
from django.db.models import F

from kvstore.core.bootstrap import BOOTSTRAP_BUDGET, MUST_PREFIX, REF_PREFIX, ROOT_KEY, select_must
from kvstore.models import Version
from kvstore.store import KeyNotFound, Value, keys_with_prefix, read
from lens.models import Team


@dataclass(frozen=True)
class Pointer:
    key: str
    version: int
    runes: int
    first_line: str


@dataclass(frozen=True)
class Bootstrap:
    root: Value
    must: list[Value]
    ref: list[Pointer]
    omitted: list[str]
    used: int
    budget: int = BOOTSTRAP_BUDGET

    def answer(self) -> dict[str, Any]:
        """The §7.1 JSON, as the API and the ``kv_bootstrap`` tool answer it."""

        def full(value: Value) -> dict[str, Any]:
            return {
                "id": value.key,
                "version": value.version,
                "payload": value.payload,
                "runes": value.runes,
            }

        return {
            "root": full(self.root),
            "must": [full(value) for value in self.must],
            "ref": [
                {"id": p.key, "version": p.version, "runes": p.runes, "first_line": p.first_line}
                for p in self.ref
            ],
            "omitted": list(self.omitted),
            "budget": self.budget,
            "used": self.used,
        }


def _consistent_snapshot(outermost: bool) -> None:
    # PostgreSQL gives each statement its own snapshot under READ COMMITTED; the
    # bootstrap's reads must see one moment, so its transaction is REPEATABLE READ.
    # (SQLite's transaction is a snapshot already.) Inside a caller's transaction the
    # level is the caller's: it can only be set before a transaction's first query.
    if outermost and connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")


def bootstrap(team: Team) -> Bootstrap:
    """``root`` (a missing one is ``KeyNotFound``), the ``must`` keys that fit the
    budget in key order with the rest named in ``omitted``, and ``ref`` pointers. Four
    queries in one transaction; no ``ref`` payload is ever read.
    """
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        _consistent_snapshot(outermost)
        try:
            root = read(team, ROOT_KEY)
        except KeyNotFound:
            raise KeyNotFound(
                f"No key {ROOT_KEY!r}: the bootstrap starts at root.", key=ROOT_KEY
            ) from None
        must_meta = list(keys_with_prefix(team, MUST_PREFIX).values_list("key", "latest_runes"))
        chosen = select_must(root.runes, must_meta)
        payloads = {
            key: (version, payload, written_at, size)
            for key, version, payload, written_at, size in Version.objects.filter(
                key__team=team, key__key__in=chosen.included, version=F("key__latest_version")
            ).values_list("key__key", "version", "payload", "written_at", "runes")
        }
        refs = (
            keys_with_prefix(team, REF_PREFIX)
            .filter(versions__version=F("latest_version"))
            .values_list("key", "latest_version", "latest_runes", "versions__first_line")
        )
        return Bootstrap(
            root=root,
            must=[Value(key, *payloads[key]) for key in chosen.included],
            ref=[Pointer(*row) for row in refs],
            omitted=list(chosen.omitted),
            used=chosen.used,
        )
