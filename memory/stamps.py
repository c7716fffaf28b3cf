"""Reading agents' composition stamps (``memory.models.CompositionStamp``).

The triggers of migration ``0015_composition_stamp`` write them; this module only
reads. ``STAMPED_TABLES`` names the tables those triggers watch: every table a
composition is read from must be one of them (a test holds the two together).
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connection

STAMPED_TABLES = frozenset(
    {
        "lens_agent",
        "lens_sectiondeclaration",
        "lens_authoredentry",
        "lens_capability",
        "lens_awarenesssource",
        "memory_memoryrecord",
        "memory_promotion",
    }
)

_ONE = "SELECT stamp FROM memory_compositionstamp WHERE agent_id = %s"


def stamp_of(agent_id: int) -> int | None:
    """``agent_id``'s stamp: one primary-key read (None: no such agent)."""
    with connection.cursor() as cursor:
        cursor.execute(_ONE, [agent_id])
        row = cursor.fetchone()
    return None if row is None else int(row[0])


def stamps_of(agent_ids: Iterable[int]) -> dict[int, int]:
    """The stamps of ``agent_ids``, by agent id, in one query."""
    ids = list(agent_ids)
    if not ids:
        return {}
    marks = ", ".join(["%s"] * len(ids))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT agent_id, stamp FROM memory_compositionstamp WHERE agent_id IN ({marks})",
            ids,
        )
        return {int(agent_id): int(stamp) for agent_id, stamp in cursor.fetchall()}
