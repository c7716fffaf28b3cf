"""An agent's composition as it is now, composed once per change.

A composition changes only when something it is made of changes, and every such change
sets the agent's composition stamp in its own transaction (``memory.stamps``). So a
composition kept with the stamp it was composed at is the agent's composition for as
long as the stamp reads the same, until the earliest validity window it holds closes
(an expiry changes it with no write at all, SPEC §19.2), and as long as the settings the
fold reads are the same. A hit costs one primary-key read of the stamp (none when the
agent was read with it, ``stamped``).

The cache is per process: the stamp is in the database, so every process and instance
judges its own entries by the same truth. Entries are bounded (``COMPOSITION_CACHE_AGENTS``,
the least recently used go first); ``COMPOSITION_CACHE=0`` turns it off.

Inside a transaction that has written, the stamp may not say so yet (PostgreSQL sets it
at commit), so a caller in a transaction composes afresh unless it says nothing was
written in it yet (``fresh_transaction``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import connection
from django.db.models import OuterRef, QuerySet, Subquery, prefetch_related_objects
from django.utils import timezone

from lens.agents import (
    CONFIG_RELATIONS,
    config_of,
    get_agent,
    with_config,
    with_revision_number,
)
from lens.core.config import AgentConfig
from lens.models import Agent, Team
from memory.composition import ComposedNow, compose_current
from memory.core.composition import Composition
from memory.core.deliveries import sha256_hex
from memory.models import CompositionStamp
from memory.registry import get_spec
from memory.stamps import Stamp, stamp_of


def stamped(queryset: QuerySet[Agent]) -> QuerySet[Agent]:
    """``queryset`` with each agent's stamp (``stamp_read``), read in the same statement
    as the agent: what a cache hit needs, and read before anything composing reads."""
    row = CompositionStamp.objects.filter(agent=OuterRef("pk"))
    return queryset.annotate(
        stamp_read=Subquery(row.values("stamp")[:1]),
        config_stamp_read=Subquery(row.values("config_stamp")[:1]),
    )


def stamped_agent(team: Team, slug: str, *, revision: bool = False) -> Agent:
    """``team``'s agent ``slug`` with its stamp, in one statement, without its
    declarations: a composition kept for that stamp needs nothing more
    (``lens.agents.get_agent``'s errors). ``revision``: with its ``revision_number``
    too (``lens.revisions.at_one_revision`` reads it)."""
    if revision:
        return get_agent(team, slug, full=False, shape=lambda q: stamped(with_revision_number(q)))
    return get_agent(team, slug, full=False, shape=stamped)


@dataclass
class _Entry:
    stamp: Stamp | None
    # The declarations it was composed with (None: not kept).
    config: AgentConfig | None
    fold: Hashable  # the settings and spec the fold read
    made: ComposedNow
    # The canonical JSON and its SHA-256, each made on first use (a race makes the same
    # value twice).
    text: str | None = field(default=None)
    digest: str | None = field(default=None)

    def fresh(self, stamp: Stamp, now: datetime) -> bool:
        due = self.made.due
        if self.stamp != stamp or not (due is None or now < due):
            return False
        # The spec the kept declarations name, not the caller's agent's (which may have
        # been read before the stamp).
        return self.config is not None and self.fold == _fold_key(self.config.routing_spec)


@dataclass(frozen=True)
class Current:
    """An agent's composition now, and its canonical JSON text, written once."""

    entry: _Entry

    @property
    def composition(self) -> Composition:
        return self.entry.made.composition

    @property
    def memories(self) -> int:
        """Every memory the agent has saved, as the composition read them."""
        return self.entry.made.memories

    def canonical_json(self) -> str:
        text = self.entry.text
        if text is None:
            text = self.entry.text = self.composition.canonical_json()
        return text

    def digest(self) -> str:
        """The canonical JSON's SHA-256 (a stored composition's ``digest``)."""
        digest = self.entry.digest
        if digest is None:
            digest = self.entry.digest = sha256_hex(self.canonical_json())
        return digest


# The database (alias and name: one process may talk to more than one) and the agent.
_Key = tuple[str, object, int]


class _Cache:
    """The entries of one process, one per agent, least recently used first."""

    def __init__(self) -> None:
        self._entries: OrderedDict[_Key, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: _Key) -> _Entry | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def put(self, key: _Key, entry: _Entry, limit: int) -> None:
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > limit:
                self._entries.popitem(last=False)

    def drop(self, which: Callable[[_Key], bool]) -> None:
        with self._lock:
            for key in [key for key in self._entries if which(key)]:
                del self._entries[key]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


_cache = _Cache()


def forget(agent_id: int) -> None:
    """Drop what this process keeps of ``agent_id`` (an erasure: its words leave memory
    here at once; other processes drop theirs at their next read of the agent)."""
    _cache.drop(lambda key: key[-1] == agent_id)


def forget_all() -> None:
    """Empty this process's cache (tests; a hit or miss is never visible otherwise)."""
    _cache.clear()


def _fold_key(routing_spec: str | None) -> Hashable:
    """What the fold reads besides the database: the overlay budget and the spec the
    declarations name as registered in this process (its version; its identity, as one
    may be registered again under one name)."""
    spec = get_spec(routing_spec)
    named = None if spec is None else (spec.key, spec.version, id(spec))
    return (settings.MEMORY_OVERLAY_BUDGET_CHARS, named)


def _agent_key(agent: Agent) -> _Key:
    # The database too: one process may talk to more than one (tests, a restore).
    return (connection.alias, connection.settings_dict["NAME"], agent.pk)


def current(agent: Agent, *, fresh_transaction: bool = False, stamp_again: bool = False) -> Current:
    """``agent``'s composition now: kept from the last time it was composed when its
    stamp, its fold's settings and its validity windows say nothing changed since,
    composed (and kept) otherwise. Bit for bit what ``compose(agent)`` gives.

    ``fresh_transaction``: the caller is in a transaction of its own (the outermost)
    that has written nothing yet. ``stamp_again``: the stamp read with ``agent`` is not
    recent enough (the caller took a lock since that orders it after a change, such as
    a delivery's against an erasure): it is read again, and what it reads is composed.
    """
    now = timezone.now()
    if not settings.COMPOSITION_CACHE or not _may_trust_the_stamp(fresh_transaction):
        declared = _declared(agent, row_is_recent=not stamp_again)
        return Current(
            _Entry(None, None, None, compose_current(declared, now, config_of(declared)))
        )
    key = _agent_key(agent)
    stamp = None if stamp_again else _stamp_read(agent)
    # The declarations must be read after the stamp: they were when the agent was read
    # with both (``stamped(with_config(...))``); otherwise they are read again.
    loaded_after = stamp is not None and _has_declarations(agent)
    if stamp is None:
        stamp = stamp_of(agent.pk)
    entry = _cache.get(key)
    if entry is not None and stamp is not None and entry.fresh(stamp, now):
        return Current(entry)
    if (
        entry is not None
        and entry.config is not None
        and entry.stamp is not None
        and stamp is not None
        and entry.stamp[1] == stamp[1]
        # The slug is the one input read from ``agent`` itself: one read before the
        # stamp (not with it) may predate a rename the kept declarations are after.
        and entry.made.composition.agent == agent.slug
    ):
        # Only memories changed since: the declarations kept are still the agent's.
        config = entry.config
        made = compose_current(agent, now, config)
    else:
        declared = agent if loaded_after else _with_declarations(agent, not stamp_again)
        config = config_of(declared)
        made = compose_current(declared, now, config)
    entry = _Entry(stamp, config, _fold_key(config.routing_spec), made)
    # Kept only when nothing changed while it was composed: every change sets the stamp
    # in its own transaction, so the same stamp after the reads means they read one state.
    if stamp is not None and stamp_of(agent.pk) == stamp:
        _cache.put(key, entry, settings.COMPOSITION_CACHE_AGENTS)
    return Current(entry)


def _stamp_read(agent: Agent) -> Stamp | None:
    """The stamps read with ``agent`` (``stamped``), if they were."""
    stamp, config_stamp = (
        getattr(agent, "stamp_read", None),
        getattr(agent, "config_stamp_read", None),
    )
    return None if stamp is None or config_stamp is None else (stamp, config_stamp)


def keeps() -> bool:
    """Whether ``current`` would keep and reuse compositions here and now (outside a
    transaction, with the cache on)."""
    return bool(settings.COMPOSITION_CACHE) and _may_trust_the_stamp(False)


def _may_trust_the_stamp(fresh_transaction: bool) -> bool:
    """Outside a transaction the stamp read is the committed truth; inside one only when
    it is the caller's own (outermost) and has written nothing yet: a write earlier in an
    enclosing one may not have set it yet (PostgreSQL sets it at commit)."""
    if not connection.in_atomic_block:
        return True
    return fresh_transaction and len(connection.atomic_blocks) == 1


def _has_declarations(agent: Agent) -> bool:
    return "sections" in getattr(agent, "_prefetched_objects_cache", {})


def _reloaded(agent: Agent) -> Agent:
    """``agent`` read again with its declarations (``lens.agents.with_config``)."""
    found = with_config(Agent.objects.filter(pk=agent.pk)).first()
    if found is None:
        return agent  # deleted meanwhile: what was read of it composes
    found.team = agent.team
    return found


def _with_declarations(agent: Agent, row_is_recent: bool) -> Agent:
    """``agent`` with its declarations read now: onto ``agent`` itself when it was read
    with the stamp in use (``stamped``: the row and the stamp are of one statement, and
    the declarations come after both), else with the agent read again (``row_is_recent``
    false: the stamp was read again since the row, ``current``'s ``stamp_again``)."""
    if row_is_recent and _stamp_read(agent) is not None:
        prefetch_related_objects([agent], *CONFIG_RELATIONS)
        return agent
    return _reloaded(agent)


def _declared(agent: Agent, row_is_recent: bool = True) -> Agent:
    """``agent`` with its declarations loaded (read when they were not)."""
    return agent if _has_declarations(agent) else _with_declarations(agent, row_is_recent)


def current_composition(agent: Agent, *, fresh_transaction: bool = False) -> Composition:
    """``current(agent).composition``: the composition alone."""
    return current(agent, fresh_transaction=fresh_transaction).composition
