"""Keeping deliveries (SPEC §11): what they take, and removing old ones for operators
who must (``manage.py prune_deliveries``, ``manage.py doctor``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.db import DatabaseError, connection, transaction
from django.db.models import Exists, OuterRef, Sum
from django.db.models.functions import Length
from django.utils import timezone

from memory.models import CompositionMemory, Delivery, StoredComposition


@dataclass(frozen=True)
class Pruned:
    deliveries: int
    compositions: int


def prune(older_than: timedelta, *, dry_run: bool = False) -> Pruned:
    """Remove deliveries older than ``older_than``, and the stored compositions no
    delivery uses any more (with their memory index rows). ``dry_run`` counts what
    would go, with the same filters, and removes nothing.
    """
    cutoff = timezone.now() - older_than
    old = Delivery.objects.filter(delivered_at__lt=cutoff)
    # Unused once the old ones are gone: no delivery at or after the cutoff uses it.
    unused = StoredComposition.objects.filter(
        ~Exists(Delivery.objects.filter(composition=OuterRef("pk"), delivered_at__gte=cutoff))
    )
    if dry_run:
        return Pruned(deliveries=old.count(), compositions=unused.count())
    with transaction.atomic():
        deliveries, _ = old.delete()
        unused_ids = list(unused.values_list("pk", flat=True))
        CompositionMemory.objects.filter(composition_id__in=unused_ids).delete()
        compositions, _ = StoredComposition.objects.filter(pk__in=unused_ids).delete()
    return Pruned(deliveries=deliveries, compositions=compositions)


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
