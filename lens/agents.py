"""Agents between the ORM and the pure core: find, load and write authored configurations.

Storing a config through an operation goes through ``memory.configuring.store_agent``, which
also checks the routing spec the config names (specs belong to memory).
"""

from __future__ import annotations

import threading
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Generic, TypeVar

from django.db import transaction
from django.db.models import OuterRef, QuerySet, Subquery

from lens.core.background import Background
from lens.core.config import AgentConfig, is_agent_slug
from lens.core.errors import DomainError
from lens.models import (
    Agent,
    AuthoredEntry,
    AwarenessSource,
    Capability,
    Revision,
    SectionDeclaration,
    Team,
)
from lens.rows import decode_values, raw_rows


class AgentNotFound(DomainError):
    code = "agent_not_found"


class InvalidSlug(DomainError):
    code = "invalid_slug"


def check_slug(slug: str) -> str:
    if not is_agent_slug(slug):
        raise InvalidSlug(
            f"Agent slug {slug!r} must be 1-64 lowercase letters, digits or '-', "
            "starting with a letter or digit."
        )
    return slug


def get_agent(
    team: Team,
    slug: str,
    *,
    full: bool = True,
    shape: Callable[[QuerySet[Agent]], QuerySet[Agent]] | None = None,
) -> Agent:
    """``team``'s agent ``slug``. Another team's agent does not exist here.

    ``full`` prefetches the authored configuration, for composition; ``shape`` adds to
    the query (an annotation read in the same statement as the agent).
    """
    agent = None
    # Not a slug: no agent has it, so nothing to ask (and text a database refuses, such
    # as NUL, which PostgreSQL will not compare, never reaches one).
    if is_agent_slug(slug):
        queryset = Agent.objects.filter(team=team, slug=slug)
        if shape is not None:
            queryset = shape(queryset)
        agent = (with_config(queryset) if full else queryset).first()
    if agent is None:
        raise AgentNotFound(f"No agent {slug!r} in this team.")
    agent.team = team  # already loaded; saves a query
    return agent


def with_config(queryset: QuerySet[Agent]) -> QuerySet[Agent]:
    """Prefetch the small relations ``config_of`` reads; entries come in one more query
    (``load_entry_values``), so a page costs a fixed number of queries whatever its size.

    Each agent also carries ``revision_number``, its newest revision's number (None
    before its first) as of the statement that read the agent: a config's revision is
    committed with the config, so when the number is still the same after the relations
    were read, they are that revision's (``memory.deliveries.ledger.deliver``).
    """
    return with_revision_number(queryset).prefetch_related(*CONFIG_RELATIONS)


# The small relations ``config_of`` reads (``with_config`` prefetches them).
CONFIG_RELATIONS = ("capabilities", "awareness_sources", "sections")


def with_revision_number(queryset: QuerySet[Agent]) -> QuerySet[Agent]:
    """Each agent with ``revision_number`` (``with_config``), without its declarations."""
    newest = Revision.objects.filter(agent=OuterRef("pk")).order_by("-number").values("number")
    return queryset.annotate(revision_number=Subquery(newest[:1]))


def load_entry_values(agents: Sequence[Agent]) -> None:
    """Load the authored entries of ``agents`` in one query, as ``(key, stored JSON text)``.

    Thousands of entries are read as tuples, not model instances: building instances
    cost several times the query itself. Values stay the column's JSON text (no field
    decodes them one by one): ``background_of`` decodes them together, and only when
    the Background they make is not already known.
    """
    missing = [agent for agent in agents if not hasattr(agent, "_lens_entries")]
    if not missing:
        return
    by_section: dict[int, list[tuple[str, Any]]] = defaultdict(list)
    rows = raw_rows(
        AuthoredEntry.objects.filter(section__agent__in=[agent.pk for agent in missing])
        .order_by("section_id", "position", "id")
        # Unconverted, the value is the column's JSON text: on SQLite the stored text,
        # on PostgreSQL jsonb's own output, which is what JSONField would decode.
        .values_list("section_id", "key", "value")
    )
    for section_pk, key, text in rows:
        by_section[section_pk].append((key, text))
    for agent in missing:
        agent._lens_entries = by_section


_T = TypeVar("_T")


class ValidatedCache(Generic[_T]):
    """Models already validated, by the stored rows they were validated from.

    The rows are the key, so a write (through the API, the admin or anything else)
    reads as new rows and is validated again; rows seen before give the same frozen
    model back without decoding or validating anything. The oldest models go first
    once the cached ones together hold more than ``max_weight`` entries.
    """

    def __init__(self, max_weight: int) -> None:
        self._max_weight = max_weight
        self._items: OrderedDict[Hashable, tuple[_T, int]] = OrderedDict()
        self._weight = 0
        # Server threads share the cache; the lock guards the dict, not the validation.
        self._lock = threading.Lock()

    def find(self, key: Hashable) -> _T | None:
        """The model cached under ``key``, or None (nothing is built)."""
        with self._lock:
            found = self._items.get(key)
            if found is None:
                return None
            self._items.move_to_end(key)
            return found[0]

    def get(self, key: Hashable, weight: int, build: Callable[[], _T]) -> _T:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
                return found[0]
        value = build()  # raises for rows that no longer validate: nothing is cached
        with self._lock:
            if key not in self._items:
                self._items[key] = (value, weight)
                self._weight += weight
                while self._weight > self._max_weight and len(self._items) > 1:
                    _key, (_value, dropped) = self._items.popitem(last=False)
                    self._weight -= dropped
        return value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._weight = 0


# Weights are authored entries (plus one per model): about a kilobyte each, kept.
_backgrounds: ValidatedCache[Background] = ValidatedCache(max_weight=20_000)
_configs: ValidatedCache[AgentConfig] = ValidatedCache(max_weight=20_000)


def forget_validated() -> None:
    """Empty the caches of validated models (tests measure a cold read with it)."""
    _backgrounds.clear()
    _configs.clear()


_BackgroundKey = tuple[tuple[str, str, str, tuple[tuple[str, Any], ...]], ...]


def _background_key(agent: Agent) -> _BackgroundKey:
    load_entry_values([agent])
    entries = agent._lens_entries
    return tuple(
        (section.section_id, section.title, section.promotion, tuple(entries.get(section.pk, ())))
        for section in agent.sections.all()
    )


def _validate_background(rows: _BackgroundKey) -> Background:
    texts = [text for *_section, entries in rows for _key, text in entries]
    values = iter(decode_values(texts))
    return Background.model_validate(
        {
            "sections": [
                {
                    "id": section_id,
                    "title": title,
                    "promotion": promotion,
                    "entries": [{"key": key, "value": next(values)} for key, _text in entries],
                }
                for section_id, title, promotion, entries in rows
            ]
        }
    )


def _weight(key: _BackgroundKey) -> int:
    return 1 + sum(len(entries) for *_section, entries in key)


def _cached_background(key: _BackgroundKey) -> Background:
    return _backgrounds.get(key, _weight(key), lambda: _validate_background(key))


def background_of(agent: Agent) -> Background:
    """``agent``'s authored Background, validated once for the rows it is stored as."""
    return _cached_background(_background_key(agent))


def config_of(agent: Agent) -> AgentConfig:
    """``agent``'s authored configuration, validated once for the rows it is stored as.

    Validation runs when the rows are first read (and when any of them changed since),
    so a configuration that no longer validates still raises on every read.
    """
    background = _background_key(agent)
    capabilities = tuple((c.name, c.description) for c in agent.capabilities.all())
    awareness = tuple(
        (a.name, a.description, a.access_method) for a in agent.awareness_sources.all()
    )
    scalars = (
        agent.name,
        agent.persona,
        agent.tone,
        agent.objective,
        agent.manual,
        agent.routing_spec,
        agent.recall_pinned_candidates,
        agent.protected,
        agent.model,
    )
    key = (scalars, capabilities, awareness, background)

    def validate() -> AgentConfig:
        name, persona, tone, objective, manual, routing_spec, pinned, protected, model = scalars
        return AgentConfig.model_validate(
            {
                "name": name,
                "persona": persona,
                "tone": tone,
                "objective": objective,
                "capabilities": [
                    {"name": capability, "description": description}
                    for capability, description in capabilities
                ],
                "manual": manual,
                "routing_spec": routing_spec,
                "background": _cached_background(background),
                "awareness": [
                    {"name": source, "description": description, "access_method": access}
                    for source, description, access in awareness
                ],
                "recall_pinned_candidates": pinned,
                "protected": protected,
                "model": model,
            }
        )

    return _configs.get(key, _weight(background), validate)


@transaction.atomic
def write_config(team: Team, slug: str, config: AgentConfig) -> tuple[Agent, bool]:
    """Create or replace an agent's whole authored configuration, all or nothing
    (the slug and the routing spec are checked by ``memory.configuring.store_agent``).

    Declarations are rewritten wholesale; promotion rows refer to sections by their
    string id, so nothing that memory decided is lost when declarations change.
    """
    agent, created = Agent.objects.select_for_update().get_or_create(
        team=team, slug=slug, defaults={"name": config.name}
    )
    for field in ("name", "persona", "tone", "objective", "manual", "routing_spec"):
        setattr(agent, field, getattr(config, field))
    agent.recall_pinned_candidates = config.recall_pinned_candidates
    agent.protected = config.protected
    agent.model = config.model
    agent.save()

    agent.capabilities.all().delete()
    agent.awareness_sources.all().delete()
    agent.sections.all().delete()
    Capability.objects.bulk_create(
        Capability(agent=agent, name=c.name, description=c.description, position=i)
        for i, c in enumerate(config.capabilities)
    )
    AwarenessSource.objects.bulk_create(
        AwarenessSource(
            agent=agent,
            name=a.name,
            description=a.description,
            access_method=a.access_method,
            position=i,
        )
        for i, a in enumerate(config.awareness)
    )
    declared = SectionDeclaration.objects.bulk_create(
        SectionDeclaration(
            agent=agent, section_id=s.id, title=s.title, promotion=s.promotion, position=i
        )
        for i, s in enumerate(config.background.sections)
    )
    AuthoredEntry.objects.bulk_create(
        AuthoredEntry(section=row, key=entry.key, value=entry.value, position=i)
        for row, section in zip(declared, config.background.sections, strict=True)
        for i, entry in enumerate(section.entries)
    )
    return agent, created
