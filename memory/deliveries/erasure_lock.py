"""One agent's deliveries and an erasure of one of its memories never overlap.

An erasure redacts every stored composition that holds the memory. A delivery composing
while it runs could read the memory before the erasure commits and store a composition
holding its words after the erasure looked: the words would be back. So, on PostgreSQL,
each delivery holds a shared transaction-level advisory lock on its agent from before
it composes until it commits (or, when it found its composition kept from before, from
before it checks that the agent's stamp is still the one it was composed at), and an erasure holds the same lock exclusively: an erasure
waits for the deliveries under way (then sees their compositions), and a delivery that
starts meanwhile waits for the erasure (then composes without the memory). Deliveries
share the lock, so they never wait for one another; nothing else takes it.

SQLite needs nothing: its write transactions take the database's one write lock at BEGIN
(IMMEDIATE), so a delivery and an erasure run one after the other.
"""

from __future__ import annotations

from django.db import connection

# The advisory lock's key: a constant of this feature in the high bits, the agent's id in
# the low ones. Another agent sharing the key (ids past 2**32) only makes one wait longer.
_KEY_BASE = 0x4C454E53 << 32  # "LENS"
_LOW_BITS = 0xFFFFFFFF


def erasure_key(agent_id: int) -> int:
    """The lock's key for ``agent_id`` (a delivery takes it with its timeline's in one
    statement: ``memory.deliveries.ledger``)."""
    return _KEY_BASE | (agent_id & _LOW_BITS)


def exclude_deliveries(agent_id: int) -> None:
    """Called by an erasure at the start of its transaction."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [erasure_key(agent_id)])
