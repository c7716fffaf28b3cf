"""What a change would do before it is made (SPEC §18.2): a new config, a decision on one
memory, another order of the Background sections or another routing spec, compared with
the prompt now (``now``) and replayed over the agent's last deliveries (``replay``).
It writes nothing: no row, event, audit line or outbox message.

``now`` composes the agent's memories as they are now twice with the one composer
(``memory.composition``): with its declarations, and with the change applied.

``replay`` re-composes each of the last deliveries as of its moment with the change
applied to that moment. The past is the one ``memory.as_of`` reconstructs
(``memory.as_of.Past``, which ``compose_as_of`` asks too): the revision in force then,
each record saved by then with the status its events had left it in, at the placement
it held then (across migrations), with the validity window it had then. A config, an
order or a spec applies at every moment; a decision moves the memory's status then
when the decision moves that status (``memory.core.what_if.decided``); a memory saved
later stays absent. Everything is read once for the whole window — the revisions in
force, the events, the placed records — and the deliveries are walked in time order,
so a replay is a fixed number of queries whatever ``last`` is. Only the prompt's text is
composed (no routing report), once per distinct input: consecutive deliveries of the
same revision and the same approved memories compose once. Token ids are counted per
block between headings and memoised, as the stability card counts them per line
(``memory.stability``; ``lens.core.token_prefix.heading_segments``).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import Q
from pydantic import ValidationError

from lens.agents import config_of
from lens.core.config import AgentConfig
from lens.core.diffs import unified_diff
from lens.core.errors import InvalidInput, invalid_input, pydantic_problems
from lens.core.render import render_text
from lens.core.token_counts import token_ids
from lens.core.token_prefix import heading_segments, shared_tokens
from lens.models import Agent, Revision
from lens.revisions import stored_config
from memory.as_of import Past
from memory.composed import current, keeps
from memory.composition import Memories, compose_from, memories_of
from memory.core.composition import Composition
from memory.core.deliveries import prompt_of_json, sha256_hex
from memory.core.overlay import apply_memory_overlay
from memory.core.report import expired
from memory.core.routing import KeySource, PlacedRecord
from memory.core.what_if import (
    DECISIONS,
    Change,
    ConfigChange,
    DecisionChange,
    Moved,
    MovesChange,
    Now,
    OrderChange,
    PromptFigures,
    Replay,
    SpecChange,
    WhatIf,
    changed_config,
    decided,
    fate_changes,
    mean,
    order_problem,
)
from memory.decisions import check_decision
from memory.models import (
    Delivery,
    Promotion,
    PromotionStatus,
    StoredComposition,
)
from memory.queries import placed_of
from memory.registry import check_spec_key, get_spec
from memory.stamps import stamp_of

LAST_DEFAULT = 50
LAST_MAX = 200
# Accepted beside a config and ignored, so a config read with GET (or sent with PUT) can
# be asked about as it is.
_REVISION_FIELDS = ("revision", "if_revision")


def check_last(last: int) -> int:
    if not 1 <= last <= LAST_MAX:
        raise InvalidInput(
            f"last: between 1 and {LAST_MAX} deliveries",
            errors=[{"loc": "last", "message": f"between 1 and {LAST_MAX}"}],
        )
    return last


def config_change(data: Mapping[str, Any]) -> ConfigChange:
    """A config to ask about, validated as storing it validates it (the same error, with
    the same code, as ``PUT /api/agents/{slug}`` answers)."""
    given = {key: value for key, value in data.items() if key not in _REVISION_FIELDS}
    try:
        config = AgentConfig.model_validate(given)
    except ValidationError as exc:
        raise invalid_input(pydantic_problems(exc.errors())) from None
    check_spec_key(config.routing_spec)
    return ConfigChange(config)


def decision_change(memory_id: str, decision: str) -> DecisionChange:
    if decision not in DECISIONS:
        raise InvalidInput(
            f"decide.decision: one of {', '.join(DECISIONS)}",
            errors=[{"loc": "decide.decision", "message": f"one of {', '.join(DECISIONS)}"}],
        )
    return DecisionChange(memory_id, decision)


def _check(agent: Agent, config: AgentConfig, change: Change) -> None:
    """Refuse ``change`` as making it would be refused, having read only."""
    match change:
        case ConfigChange(config=new):
            check_spec_key(new.routing_spec)
        case SpecChange(spec=spec):
            check_spec_key(spec)
        case OrderChange(order=order):
            current = [section.id for section in config.background.sections]
            if (problem := order_problem(current, order)) is not None:
                raise InvalidInput(
                    f"order: name each Background section of the agent once: {problem}",
                    errors=[{"loc": "order", "message": problem}],
                )
        case DecisionChange(memory_id=memory_id, decision=decision):
            check_decision(agent, memory_id, decision)


def what_if(agent: Agent, change: Change, last: int = LAST_DEFAULT, *, diff: bool = True) -> WhatIf:
    """What ``change`` would do to ``agent``'s prompt now and to its last ``last``
    deliveries (1 to ``LAST_MAX``). ``agent`` is read with its config
    (``lens.agents.get_agent``). Raises what making the change would raise.

    ``diff=False`` leaves the prompt diff out (``""``): a page that shows only the
    figures saves its cost (a bounded diff of two long prompts that differ throughout,
    such as another order of 40 sections, spends up to a fifth of a second)."""
    check_last(last)
    config = config_of(agent)
    _check(agent, config, change)
    before, after = _now(agent, config, change)
    now = Now(
        before=_figures(before),
        after=_figures(after),
        diff=unified_diff(before.prompt.text, after.prompt.text, "now", "with the change")
        if diff
        else "",
        memories=fate_changes(before, after),
    )
    return WhatIf(now, replay(agent, change, last))


def _figures(composition: Composition) -> PromptFigures:
    return PromptFigures(composition.tokens.total, sha256_hex(composition.prompt.text))


def _now(agent: Agent, config: AgentConfig, change: Change) -> tuple[Composition, Composition]:
    """The composition now, and the one ``change`` would make now."""
    # The composition now, composed once per change (``memory.composed``; ``config`` is
    # the agent's own), when the memories read for "after" are the ones it was composed
    # from: the stamp read the same before and after they were read.
    kept = current(agent) if keeps() else None
    memories = memories_of([agent])[agent.pk]
    stamp = None if kept is None else kept.entry.stamp
    same = kept is not None and stamp is not None and stamp_of(agent.pk) == stamp
    before = kept.composition if kept is not None and same else memories.compose(config)
    if isinstance(change, MovesChange):
        return before, _moved(agent, config, memories, change)
    if not isinstance(change, DecisionChange):
        return before, memories.compose(changed_config(config, change))
    states = [
        replace(state, status=decided(state.status, change))
        if state.memory_id == change.memory_id
        else state
        for state in memories.states
    ]
    placed, unreadable = memories.placed, memories.unreadable
    moved = next((s.status for s in states if s.memory_id == change.memory_id), None)
    if moved == PromotionStatus.APPROVED:
        # The memory, and its sightings (SPEC §19.1), which compose with it once it does.
        found = placed_of(
            Promotion.objects.filter(agent=agent).filter(
                Q(record_id=change.memory_id)
                | Q(corroborates_id=change.memory_id, status=PromotionStatus.CORROBORATES)
            )
        )
        placed = [*placed, *found.of(agent.pk)]
        unreadable = unreadable | found.unreadable.get(agent.pk, set())
    else:
        placed = [record for record in placed if record.id != change.memory_id]
        unreadable = unreadable - {change.memory_id}
    return before, compose_from(agent, placed, states, unreadable, config, now=memories.now)


def _moved(
    agent: Agent, config: AgentConfig, memories: Memories, change: MovesChange
) -> Composition:
    """The composition now with a migration's moves applied."""
    moves = change.moves
    states = [
        replace(state, status=moves[state.memory_id].status, reason=moves[state.memory_id].reason)
        if state.memory_id in moves
        else state
        for state in memories.states
    ]
    arriving = [rid for rid, move in moves.items() if _lands(move)]
    found = placed_of(Promotion.objects.filter(agent=agent, record_id__in=arriving))
    placed = [record for record in memories.placed if record.id not in moves]
    placed += [_at_target(record, moves[record.id]) for record in found.of(agent.pk)]
    unreadable = memories.unreadable | found.unreadable.get(agent.pk, set())
    return compose_from(agent, placed, states, unreadable, config, now=memories.now)


def _lands(move: Moved) -> bool:
    """Whether the moved memory composes where it goes (approved, with a placement)."""
    return move.status == PromotionStatus.APPROVED and move.section is not None


def _at_target(record: PlacedRecord, move: Moved) -> PlacedRecord:
    """``record`` at the placement ``move`` gives it (one that ``_lands``)."""
    source: KeySource = "label" if move.key_source == "label" else "content"
    return replace(record, section=move.section or "", key=move.key or "", key_source=source)


# --- replay ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Delivered:
    at: datetime
    composition_id: int
    prompt_sha256: str
    tokens: int
    prefix_tokens: int | None  # as recorded (SPEC §17); None: recorded before they were kept


def replay(agent: Agent, change: Change, last: int) -> Replay:
    """``change`` replayed over ``agent``'s last ``last`` deliveries (a fixed number of
    queries: the deliveries, the revisions in force, the events and the placed records).

    A delivery that held a memory erased since (SPEC §15) cannot be composed again as it
    was: the erased words are gone, and the past ``memory.as_of`` gives leaves the
    memory out at every moment. Such a delivery is compared with its composition as of
    its moment without the change (and so are its neighbours' cached prefixes), so an
    erasure is never counted as the change's doing."""
    delivered = _last_deliveries(agent, last)
    if not delivered:
        return Replay(0, 0, None, None, None)
    first, newest = delivered[0].at, delivered[-1].at
    walk = _Walk(agent, first, newest, change)
    configs = _Configs(agent, first, newest, change, in_force=walk.erasures)
    texts = _Texts(agent, change)
    replayed: list[_Key] = []
    # Where an erasure took words out of what was delivered, and beside it: each
    # delivery as of its moment.
    held: dict[int, tuple[tuple[Hashable, AgentConfig | None], list[PlacedRecord]]] = {}
    erased: set[int] = set()
    for i, moment in enumerate(delivered):
        replayed.append(texts.of(*configs.at(moment.at), walk.until(moment.at)))
        if walk.erasures:
            held[i] = (configs.in_force(moment.at), walk.as_delivered(moment.at))
            if walk.held_erased(moment.at):
                erased.add(i)
    redone = {
        i: texts.of(*held[i][0], held[i][1], delivered=True)
        for i in sorted({j for i in erased for j in (i - 1, i, i + 1)} & held.keys())
    }
    ids = _memo_ids()
    tokens = [texts.tokens(key, ids) for key in replayed]
    return Replay(
        deliveries=len(delivered),
        changed=sum(
            texts.sha256(key) != (texts.sha256(redone[i]) if i in erased else moment.prompt_sha256)
            for i, (key, moment) in enumerate(zip(replayed, delivered, strict=True))
        ),
        tokens_delta_mean=mean(
            [
                n - (texts.tokens(redone[i], ids) if i in erased else moment.tokens)
                for i, (n, moment) in enumerate(zip(tokens, delivered, strict=True))
            ]
        ),
        prefix_tokens_mean_before=mean(_recorded_prefixes(delivered, ids, texts, erased, redone)),
        prefix_tokens_mean_after=mean(
            _prefixes([texts.text(key) for key in replayed], ids, texts.cut)
        ),
    )


def _last_deliveries(agent: Agent, last: int) -> list[_Delivered]:
    rows = list(
        Delivery.objects.filter(agent=agent)
        .order_by("-delivered_at")
        .values_list(
            "delivered_at",
            "composition_id",
            "composition__prompt_sha256",
            "composition__tokens",
            "cache_prefix_tokens",
        )[:last]
    )
    rows.reverse()
    return [_Delivered(*row) for row in rows]


class _Configs:
    """The declarations in force at each moment of the window, moments asked in time
    order (two queries; none for a config change, which applies at every moment,
    unless ``in_force``: deliveries are composed again as they were)."""

    def __init__(
        self, agent: Agent, first: datetime, newest: datetime, change: Change, *, in_force: bool
    ) -> None:
        self.agent = agent
        self.revisions: list[Revision] = []
        self.index = 0
        self.everywhere = isinstance(change, ConfigChange)
        if self.everywhere and not in_force:
            return
        rows = Revision.objects.filter(agent=agent).select_related("config")
        base = rows.filter(created_at__lte=first).order_by("-number").first()
        if base is None:  # before the first (declared before revisions were kept)
            base = rows.order_by("number").first()
        later = rows.filter(created_at__gt=first, created_at__lte=newest).order_by("number")
        self.revisions = [base, *later] if base is not None else []

    def at(self, moment: datetime) -> tuple[Hashable, AgentConfig | None]:
        """The key of the config the change applies to at ``moment`` and the config
        (None: the change's own, the same at every moment)."""
        return ("", None) if self.everywhere else self.in_force(moment)

    def in_force(self, moment: datetime) -> tuple[Hashable, AgentConfig | None]:
        """The key of the config in force at ``moment`` and the config (None: the
        agent's as stored, when it has no revision)."""
        if not self.revisions:
            return "", None
        while (
            self.index + 1 < len(self.revisions)
            and self.revisions[self.index + 1].created_at <= moment
        ):
            self.index += 1
        revision = self.revisions[self.index]
        return revision.config_id, stored_config(revision)


class _Walk:
    """The approved, placed records at each moment asked (in time order), as
    ``memory.as_of.Past`` reconstructs them (statuses, placements across migrations,
    validity windows as they stood then), with the change applied: its decision to its
    memory's status then, a migration's moves at every moment."""

    def __init__(self, agent: Agent, first: datetime, newest: datetime, change: Change) -> None:
        moves = change.moves if isinstance(change, MovesChange) else {}
        self.past = Past(agent, first, newest, states=False, also=moves)
        self.decision = change if isinstance(change, DecisionChange) else None
        everyone = self.past.everyone
        # Each moved memory where the move puts it (a move that lands nowhere: absent).
        self.moved = {rid for rid in moves if rid in everyone}
        self.targets = {
            rid: _at_target(everyone[rid], move)
            for rid, move in moves.items()
            if rid in everyone and _lands(move)
        }
        # Whether a memory saved in the window was erased since.
        self.erasures = bool(self.past.erased)

    def as_delivered(self, moment: datetime) -> list[PlacedRecord]:
        """The placed records at ``moment`` (the last asked of ``until``) as of then,
        without the change."""
        return self.past.placed(moment, open_only=True)

    def held_erased(self, moment: datetime) -> bool:
        """Whether a memory approved at ``moment`` has been erased since."""
        return self.past.held_erased(moment)

    def until(self, moment: datetime) -> list[PlacedRecord]:
        """The placed records composing at ``moment`` (windows open then), the change
        applied."""
        past = self.past
        past.advance(moment)
        approved: set[str] | frozenset[str] = past.approved
        decision = self.decision
        if decision is not None:
            then = past.statuses.get(decision.memory_id)
            moved = decided(then, decision) if then is not None else None
            if moved == PromotionStatus.APPROVED:
                approved = approved | {decision.memory_id}
            elif moved is not None:
                approved = approved - {decision.memory_id}
        if not self.moved:
            return past.placed(moment, approved, open_only=True)
        # A migration's moves: their new status and placement at every moment.
        placed = past.placed(moment, approved - self.moved, open_only=True)
        for rid, target in self.targets.items():
            if past.created[rid] <= moment:
                record = past.then(rid, moment, target)
                if record is not None and not expired(record.valid_until, moment):
                    placed.append(record)
        return placed


# The config in force, the placed records (by identity), and whether the change is left
# out (a delivery as of its moment).
_Key = tuple[Hashable, frozenset[int], bool]


class _Texts:
    """Replayed prompts by their inputs (the config in force, the placed records):
    each distinct input composed once, its text hashed and counted once. Records are
    told apart by identity: ``memory.as_of.Past`` gives the same object for a record
    each time it stood the same (the walk holds them all for the replay's length)."""

    def __init__(self, agent: Agent, change: Change) -> None:
        self.change = change
        self.texts: dict[_Key, str] = {}
        self.counted: dict[_Key, int] = {}
        self.hashed: dict[_Key, str] = {}
        self.cuts: dict[str, list[str]] = {}
        self.declared: dict[int, tuple[AgentConfig, AgentConfig]] = {}
        # An agent with no revision at all (rows that never validated): as stored.
        self.fallback = config_of(agent)

    def of(
        self,
        key: Hashable,
        config: AgentConfig | None,
        placed: list[PlacedRecord],
        *,
        delivered: bool = False,
    ) -> _Key:
        """The replayed prompt of ``placed`` under ``config`` (keyed ``key``) with the
        change applied; ``delivered``: without it, as of then."""
        found = (key, frozenset(map(id, placed)), delivered)
        if found not in self.texts:
            config = config or self.fallback
            declared = config if delivered else self._declared(config)
            self.texts[found] = self._compose(declared, placed)
        return found

    def _declared(self, config: AgentConfig) -> AgentConfig:
        # Once per config in force: the same declarations object for every moment, so
        # the renderer and the fold find what they drew of it before.
        found = self.declared.get(id(config))
        if found is None or found[0] is not config:
            found = self.declared[id(config)] = (config, changed_config(config, self.change))
        return found[1]

    def _compose(self, declared: AgentConfig, placed: list[PlacedRecord]) -> str:
        background, _fold = apply_memory_overlay(
            declared.background,
            placed,
            get_spec(declared.routing_spec),
            settings.MEMORY_OVERLAY_BUDGET_CHARS,
        )
        return render_text(declared, background)

    def text(self, key: _Key) -> str:
        return self.texts[key]

    def sha256(self, key: _Key) -> str:
        if key not in self.hashed:
            self.hashed[key] = sha256_hex(self.texts[key])
        return self.hashed[key]

    def cut(self, text: str) -> list[str]:
        # Cut where headings start: replayed prompts are built of the same blocks (a
        # prompt section, a Background section), so each distinct block is tokenised
        # once and two prompts compare block by block.
        if text not in self.cuts:
            self.cuts[text] = heading_segments(text)
        return self.cuts[text]

    def tokens(self, key: _Key, ids: Callable[[str], Sequence[int]]) -> int:
        if key not in self.counted:
            self.counted[key] = sum(len(ids(segment)) for segment in self.cut(self.texts[key]))
        return self.counted[key]


def _memo_ids() -> Callable[[str], Sequence[int]]:
    """Token ids of a block (``heading_segments``), each distinct one tokenised once per
    replay."""
    known: dict[str, Sequence[int]] = {}

    def ids(segment: str) -> Sequence[int]:
        found = known.get(segment)
        if found is None:
            found = known[segment] = token_ids(segment)
        return found

    return ids


def _prefixes(
    texts: list[str], ids: Callable[[str], Sequence[int]], cut: Callable[[str], list[str]]
) -> list[int]:
    """The leading tokens each prompt after the first shares with the one before
    (SPEC §17's ``prefix_tokens``, counted as the stability card counts it)."""
    return [shared_tokens(cut(a), cut(b), ids) for a, b in zip(texts, texts[1:], strict=False)]


def _recorded_prefixes(
    delivered: list[_Delivered],
    ids: Callable[[str], Sequence[int]],
    texts: _Texts,
    erased: set[int],
    redone: Mapping[int, _Key],
) -> list[int]:
    """Each delivery's recorded prefix after the first; a delivery recorded before the
    figures were kept is measured against the one before it from the stored prompts,
    and a pair one of which held a memory erased since (``erased``) between the two as
    of their moments (``redone``)."""
    missing = [
        i
        for i in range(1, len(delivered))
        if delivered[i].prefix_tokens is None and not {i - 1, i} & erased
    ]
    prompts: dict[int, str] = {}
    if missing:
        wanted = {delivered[i].composition_id for i in missing}
        wanted |= {delivered[i - 1].composition_id for i in missing}
        for pk, body in StoredComposition.objects.filter(pk__in=wanted).values_list("pk", "body"):
            prompts[pk] = prompt_of_json(zlib.decompress(bytes(body)).decode("utf-8"))
    found = []
    for i in range(1, len(delivered)):
        recorded = delivered[i].prefix_tokens
        if {i - 1, i} & erased:
            a, b = texts.text(redone[i - 1]), texts.text(redone[i])
            recorded = shared_tokens(texts.cut(a), texts.cut(b), ids)
        elif recorded is None:
            a = prompts[delivered[i - 1].composition_id]
            b = prompts[delivered[i].composition_id]
            recorded = shared_tokens(heading_segments(a), heading_segments(b), ids)
        found.append(recorded)
    return found
