"""Reading agents' composition stamps (``memory.models.CompositionStamp``).

The triggers of migration ``0015_composition_stamp`` write them; this module only
reads. ``STAMPED_TABLES`` names the tables those triggers watch: every table a
composition is read from must be one of them (a test holds the two together).
"""

from __future__ import annotations

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

# An agent's stamps: (``stamp``, ``config_stamp``) (``memory.models.CompositionStamp``).
Stamp = tuple[int, int]

_ONE = "SELECT stamp, config_stamp FROM memory_compositionstamp WHERE agent_id = %s"


def stamp_of(agent_id: int) -> Stamp | None:
    """``agent_id``'s stamps: one primary-key read (None: no such agent)."""
    with connection.cursor() as cursor:
        cursor.execute(_ONE, [agent_id])
        row = cursor.fetchone()
    return None if row is None else (int(row[0]), int(row[1]))
