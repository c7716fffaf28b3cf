"""The migration plan (SPEC §18.3): which committed placements the agent's current spec
and declarations would now place elsewhere, and what re-promotion would make of each.
Pure: rows in, moves out, nothing read or written.

A placement, once committed, is never silently recomputed (SPEC §5.4): this module only
says what *would* move; ``memory.migration`` applies a plan when a person or a token
asks, never by itself.

Who may take an address. Records that do not move keep theirs; a move whose new
address is held by such a record, or claimed by an earlier move (by ``(created_at,
id)``), is a ``conflict`` and stays where it is — and a conflict that held an address
keeps holding it, which may turn a later move into a conflict in turn. The plan is the
least fixed point of that rule (each pass only adds conflicts), so applying it and
asking again yields exactly its conflicts, unchanged.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from lens.core.background import Tier
from memory.core.outcome import INSTRUCTION_SHAPED, Outcome, route_outcome, screened
from memory.core.routing import (
    KeySource,
    RoutableRecord,
    RoutingContext,
    RoutingSpec,
    address_key,
    evaluate,
    spec_key_source,
)
from memory.core.screening import screen

MoveOutcome = Literal["approved", "pending", "declined", "conflict"]
# The committed statuses a plan looks at: every other one (superseded, rejected,
# revoked, erased, and a row already migrated) is final.
MIGRATABLE = frozenset({"pending", "approved", "declined"})
_HOLDING = frozenset({"pending", "approved"})


@dataclass(frozen=True, slots=True)
class Address:
    section: str
    key: str

    @property
    def placement_key(self) -> str:
        return address_key(self.section, self.key)

    def as_json(self) -> dict[str, str]:
        return {"section": self.section, "key": self.key}


@dataclass(frozen=True, slots=True)
class CommittedRow:
    """A live record with its committed promotion row, as the plan reads it."""

    memory_id: str
    created_at: datetime
    kind: str
    content: str
    tags: tuple[str, ...]
    label: str | None
    address: Address | None
    status: str

    @property
    def holds(self) -> str | None:
        """The placement_key this row holds in the gate's sense, or None."""
        if self.address is None or self.status not in _HOLDING:
            return None
        return self.address.placement_key


@dataclass(frozen=True, slots=True)
class Move:
    """One memory's move. ``outcome`` is what re-promotion commits (``conflict``: it
    stays); ``reason`` is the decline reason a ``declined`` move commits."""

    memory_id: str
    created_at: datetime
    source: Address | None
    target: Address | None
    tier: Tier | None
    outcome: MoveOutcome
    reason: str
    key_source: KeySource | None
    # Whether its committed row holds ``source`` now (pending or approved).
    held: bool = False
    # Whether a move that waits (``pending``) reads as an instruction to the model
    # (SPEC §19.4): into an auto or earned section the screen made it wait (reason
    # ``instruction-shaped``); into a guarded one it waits for its tier all the same, and
    # the page warns the reviewer whose act would approve it. Not part of the API's move.
    instruction: bool = False

    @property
    def moves(self) -> bool:
        return self.outcome != "conflict"

    def as_json(self) -> dict[str, object]:
        """The move as the API answers it (SPEC §18.3)."""
        return {
            "memory_id": self.memory_id,
            "from": None if self.source is None else self.source.as_json(),
            "to": None if self.target is None else self.target.as_json(),
            "tier": self.tier,
            "outcome": self.outcome,
        }


@dataclass(frozen=True, slots=True)
class Plan:
    spec_key: str
    spec_version: str
    moves: tuple[Move, ...]  # by (created_at, id)

    @property
    def sha256(self) -> str:
        return plan_sha256(self.spec_key, self.spec_version, self.moves)

    def move_of(self, memory_id: str) -> Move | None:
        return next((move for move in self.moves if move.memory_id == memory_id), None)


def plan_sha256(spec_key: str, spec_version: str, moves: Sequence[Move]) -> str:
    """SHA-256 of the plan's canonical JSON (keys sorted, no spaces, UTF-8): the spec
    and every move as the API answers it, in the plan's order."""
    body = {
        "spec": spec_key,
        "spec_version": spec_version,
        "moves": [move.as_json() for move in moves],
    }
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class _Wish:
    row: CommittedRow
    target: Address | None
    outcome: Outcome
    key_source: KeySource | None
    # The address the move would hold (when its outcome holds one), and the one its
    # row holds now: each worked out once, read on every pass.
    claims: str | None
    holds: str | None
    instruction: bool


def _routable(row: CommittedRow) -> RoutableRecord:
    # Exactly what a save routes (memory.saving.route): no id, no time.
    return RoutableRecord(kind=row.kind, content=row.content, tags=row.tags, label=row.label)


def _wish(row: CommittedRow, spec: RoutingSpec, ctx: RoutingContext) -> _Wish | None:
    """What re-promotion would commit for ``row``, or None when nothing would change."""
    routable = _routable(row)
    placement = evaluate(spec, routable, ctx)
    target = None if placement is None else Address(placement.section, placement.key)
    # Re-promotion applies the save's rule: an instruction-shaped memory into auto waits.
    outcome = screened(route_outcome(placement, ctx), row.content)
    # At the same address, only a change between holding it and not is a move: a
    # declined memory whose section is now declared (or no longer locked), a held one
    # whose section was removed or locked. A tier moving between auto and guarded
    # changes nothing committed.
    if target == row.address and (row.status in _HOLDING) == (outcome.status in _HOLDING):
        return None
    source = None if placement is None else spec_key_source(spec, routable)
    claims = None
    if target is not None and outcome.status in _HOLDING:
        claims = target.placement_key
    # Screened once more only for a move that waits for its tier: ``screened`` has
    # judged every move the system would have approved.
    instruction = outcome.reason == INSTRUCTION_SHAPED or (
        outcome.status == "pending"
        and outcome.reason is None
        and screen(row.content).verdict == "instruction"
    )
    return _Wish(row, target, outcome, source, claims, row.holds, instruction)


def plan(rows: Iterable[CommittedRow], spec: RoutingSpec | None, ctx: RoutingContext) -> Plan:
    """The moves that bring ``rows`` in line with ``spec`` and ``ctx``, by
    ``(created_at, id)``. Rows of other statuses than ``MIGRATABLE`` are read only as
    holders. No spec: nothing to compare against, so no moves."""
    live = sorted(
        (row for row in rows if row.status in MIGRATABLE),
        key=lambda row: (row.created_at, row.memory_id),
    )
    if spec is None:
        return Plan("", "", ())
    wishes: list[_Wish] = []
    settled: dict[str, str] = {}  # address -> holder that does not move
    for row in live:
        wish = _wish(row, spec, ctx)
        if wish is not None:
            wishes.append(wish)
        elif (held := row.holds) is not None:
            settled[held] = row.memory_id
    conflicts = _conflicts(wishes, settled)
    moves = tuple(
        Move(
            memory_id=wish.row.memory_id,
            created_at=wish.row.created_at,
            source=wish.row.address,
            target=wish.target,
            tier=wish.outcome.tier,
            outcome="conflict" if wish.row.memory_id in conflicts else wish.outcome.status,
            reason=wish.outcome.reason or "",
            key_source=wish.key_source,
            held=wish.holds is not None,
            instruction=wish.instruction,
        )
        for wish in wishes
    )
    return Plan(spec.key, spec.version, moves)


def _conflicts(wishes: Sequence[_Wish], settled: dict[str, str]) -> set[str]:
    """The least fixed point of "held or claimed earlier → conflict; a conflict keeps
    the address it holds". Each pass is linear and only adds conflicts."""
    conflicts: set[str] = set()
    while True:
        occupied = set(settled)
        occupied.update(
            held
            for wish in wishes
            if wish.row.memory_id in conflicts and (held := wish.holds) is not None
        )
        found: set[str] = set()
        claimed: set[str] = set()
        for wish in wishes:  # already by (created_at, id)
            address = wish.claims
            if address is None:
                continue
            if address in occupied or address in claimed:
                found.add(wish.row.memory_id)
            else:
                claimed.add(address)
        if found == conflicts:
            return conflicts
        conflicts = found | conflicts
