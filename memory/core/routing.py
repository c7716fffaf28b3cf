"""Routing: where (if anywhere) a memory may land. Pure and synchronous.

A spec is code registered by name, never data: ``route`` sees the record and the
section *declarations* (never their entries, so a committed placement stays
reproducible), and returns a Placement or None.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from json.encoder import encode_basestring
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from lens.core.background import Tier

KeySource = Literal["label", "content"]
Verdict = Literal["a", "b", "both"]


class Placement(BaseModel):
    # revalidate_instances: a spec returning ``Placement.model_construct(...)`` is still
    # validated by ``evaluate`` (an invalid placement must raise, SPEC §5.2).
    model_config = ConfigDict(frozen=True, extra="forbid", revalidate_instances="always")

    primitive: Literal["background"] = "background"
    section: str = Field(min_length=1)
    key: str = Field(min_length=1)


def placement_key(placement: Placement) -> str:
    """JSON text of ``[section, key]``: injective, so no separator can be forged."""
    return address_key(placement.section, placement.key)


def address_key(section: str, key: str) -> str:
    """``placement_key`` of a section and a key, without building a Placement: the text
    ``json.dumps([section, key], ensure_ascii=False, separators=(",", ":"))`` writes,
    from the string encoder that call uses (a migration plan derives tens of
    thousands)."""
    return f"[{encode_basestring(section)},{encode_basestring(key)}]"


class RoutableRecord(BaseModel):
    """What routing may read of a record: what the model observed, nothing decided."""

    model_config = ConfigDict(frozen=True)

    kind: str
    content: str
    tags: tuple[str, ...] = ()
    label: str | None = None
    id: str = ""
    created_at: datetime | None = None


class DeclaredSection(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    title: str
    promotion: Tier


class RoutingContext(BaseModel):
    model_config = ConfigDict(frozen=True)

    sections: tuple[DeclaredSection, ...] = ()

    def section(self, section_id: str) -> DeclaredSection | None:
        return next((s for s in self.sections if s.id == section_id), None)


@dataclass(frozen=True, slots=True)
class PlacedRecord:
    """An approved, non-superseded record joined with its committed promotion row.

    A plain dataclass: the fold handles tens of thousands of these per composition.
    """

    id: str
    kind: str
    content: str
    created_at: datetime
    section: str
    key: str
    tags: tuple[str, ...] = ()
    label: str | None = None
    key_source: KeySource = "content"
    # Its sightings (SPEC §19.1): later saves of the same content in an earned section.
    # They compose with its line, their ids in its fragment's ``memory_ids``.
    sightings: tuple[str, ...] = ()
    # From this moment on the record is dropped ``expired`` (SPEC §19.2); None: never.
    valid_until: datetime | None = None
    # The windows of those of its sightings that have one, (id, valid_until): from that
    # moment the sighting leaves this line, dropped ``expired``.
    sighting_windows: tuple[tuple[str, datetime], ...] = ()

    @property
    def placement_key(self) -> str:
        return placement_key(Placement(section=self.section, key=self.key))

    def routable(self) -> RoutableRecord:
        return RoutableRecord(
            kind=self.kind,
            content=self.content,
            tags=self.tags,
            label=self.label,
            id=self.id,
            created_at=self.created_at,
        )


@runtime_checkable
class RoutingSpec(Protocol):
    """The developer-declared routing contract. Every hook is pure and synchronous.

    Optional hooks (``reconcile``, ``finalize``, ``render_entry``, ``key_source``) are
    looked up with ``getattr``; see ``spec_*`` helpers for their defaults.
    """

    # Read-only: a spec is a frozen value (a frozen dataclass satisfies this).
    @property
    def key(self) -> str: ...
    @property
    def version(self) -> str: ...

    def route(self, record: RoutableRecord, ctx: RoutingContext) -> Placement | None: ...


class OverlayPlan(BaseModel):
    """What ``finalize`` decides: ids of placed records to leave out (as ``reconciled``)."""

    model_config = ConfigDict(frozen=True)

    drop: frozenset[str] = frozenset()


def spec_key_source(spec: RoutingSpec, record: RoutableRecord) -> KeySource:
    # The optional hook's declared signature (the class docstring above).
    hook: Callable[[RoutableRecord], KeySource] | None = getattr(spec, "key_source", None)
    if hook is not None:
        return hook(record)
    return "label" if record.label else "content"


def spec_render_entry(spec: RoutingSpec | None, placed: PlacedRecord) -> str:
    hook = getattr(spec, "render_entry", None)
    return placed.content if hook is None else str(hook(placed))


def spec_reconcile(spec: RoutingSpec | None) -> Callable[[Any, Any], Verdict] | None:
    return getattr(spec, "reconcile", None)


def evaluate(spec: RoutingSpec, record: RoutableRecord, ctx: RoutingContext) -> Placement | None:
    """Run ``route`` and validate what it returns.

    A placement that does not validate is a bug in the spec, so it raises: the only
    exception the routing path may raise.
    """
    placement = spec.route(record, ctx)
    if placement is None:
        return None
    return Placement.model_validate(placement, from_attributes=True)


async def classify_then_route(
    records: Iterable[RoutableRecord],
    ctx: RoutingContext,
    spec: RoutingSpec,
    classify: Callable[[RoutableRecord], Awaitable[Sequence[str]]],
) -> list[tuple[RoutableRecord, Placement | None, tuple[str, ...]]]:
    """Route records after an (async) classifier adds advisory signals.

    The classifier's output is advisory only — it is reported beside the placement and
    never produces one: ``route`` alone decides. No preset uses this in v1.
    """
    results = []
    for record in records:
        signals = tuple(await classify(record))
        results.append((record, evaluate(spec, record, ctx), signals))
    return results
