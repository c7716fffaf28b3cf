"""Keeping deliveries (SPEC §11): what they take, and removing old ones for operators
who must (``manage.py prune_deliveries``, ``manage.py doctor``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.db import DatabaseError, connection, transaction
from django.db.models import Count, Exists, OuterRef, QuerySet, Sum
from django.db.models.functions import Length
from django.utils import timezone

from lens.audit import Entry, append_one, stamp
from memory.models import CompositionMemory, Delivery, StoredComposition


@dataclass(frozen=True)
class Pruned:
    deliveries: int
    compositions: int


# Compositions removed per transaction: each batch locks its rows only briefly, and a
# delivery that wants one of them again waits for one short batch at most.
PRUNE_BATCH = 500


def prune(older_than: timedelta, *, dry_run: bool = False) -> Pruned:
    """Remove deliveries older than ``older_than``, and the stored compositions no
    delivery uses any more (with their memory index rows). ``dry_run`` counts what
    would go, with the same filters, and removes nothing.

    Safe beside deliveries being recorded: a composition is removed only while locked
    and seen unused (``_remove_unused``).
    """
    cutoff = timezone.now() - older_than
    old = Delivery.objects.filter(delivered_at__lt=cutoff)
    if dry_run:
        # Unused once the old ones are gone: no delivery at or after the cutoff uses it.
        unused = StoredComposition.objects.filter(
            ~Exists(Delivery.objects.filter(composition=OuterRef("pk"), delivered_at__gte=cutoff))
        )
        return Pruned(deliveries=old.count(), compositions=unused.count())
    with transaction.atomic():
        by_team = dict(
            old.values_list("agent__team_id")
            .annotate(n=Count("pk"))
            .values_list("agent__team_id", "n")
        )
        deliveries, _ = old.delete()
        # Each team's log says its deliveries went, and which: those before the cutoff.
        for team_id, count in sorted(by_team.items()):
            append_one(
                team_id,
                "system",
                Entry(
                    "delivery.pruned",
                    "deliveries",
                    stamp(cutoff),
                    details={"deliveries": count, "older_than_days": older_than.days},
                ),
            )
    compositions, after = 0, 0
    # Each batch moves past the ids it looked at: at most (compositions / batch) + 1 turns.
    while (batch := _remove_unused(after)) is not None:
        removed, after = batch
        compositions += removed
    return Pruned(deliveries=deliveries, compositions=compositions)


def _unused() -> QuerySet[StoredComposition]:
    return StoredComposition.objects.filter(
        ~Exists(Delivery.objects.filter(composition=OuterRef("pk")))
    )


def _remove_unused(after: int) -> tuple[int, int] | None:
    """Remove the next batch of unused compositions (ids above ``after``): how many went
    and the last id looked at, or None when there are no more.

    A delivery may be about to use one of them again (the agent's prompt came back to
    an earlier text). It holds the row FOR KEY SHARE (``memory.deliveries.ledger``), so the
    FOR UPDATE here waits for it to commit, and the check that follows, a new statement
    under READ COMMITTED, sees its delivery and keeps the row. A delivery that comes
    after the lock waits for this transaction instead, and then stores the row anew.
    """
    with transaction.atomic():
        ids = list(
            _unused().filter(pk__gt=after).order_by("pk").values_list("pk", flat=True)[:PRUNE_BATCH]
        )
        if not ids:
            return None
        locked = list(
            StoredComposition.objects.filter(pk__in=ids)
            .order_by("pk")
            .select_for_update()
            .values_list("pk", flat=True)
        )
        unused = list(_unused().filter(pk__in=locked).values_list("pk", flat=True))
        CompositionMemory.objects.filter(composition_id__in=unused).delete()
        _, removed = StoredComposition.objects.filter(pk__in=unused).delete()
    return removed.get(StoredComposition._meta.label, 0), ids[-1]


@dataclass(frozen=True)
class Storage:
    deliveries: int
    compositions: int
    body_bytes: int
    table_bytes: int | None  # None where the database cannot tell


_TABLES = ("memory_delivery", "memory_composition", "memory_composition_memory")


def storage() -> Storage:
    """How many deliveries and distinct compositions there are, and the bytes they take."""
    body = StoredComposition.objects.aggregate(n=Sum(Length("body")))["n"] or 0
    return Storage(
        deliveries=Delivery.objects.count(),
        compositions=StoredComposition.objects.count(),
        body_bytes=body,
        table_bytes=_table_bytes(),
    )


def _table_bytes() -> int | None:
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT sum(pg_total_relation_size(to_regclass(name))) FROM unnest(%s::text[]) name",
                [list(_TABLES)],
            )
            return int(cursor.fetchone()[0] or 0)
        try:
            # SQLite's dbstat table counts the pages of each table and its indexes.
            cursor.execute(
                "SELECT sum(pgsize) FROM dbstat WHERE name IN "
                "(SELECT name FROM sqlite_master WHERE tbl_name IN (%s, %s, %s))",
                list(_TABLES),
            )
        except DatabaseError:  # dbstat is an optional SQLite feature
            return None
        return int(cursor.fetchone()[0] or 0)
