"""What a change would do before it is made (SPEC §18.2), the pure half: the four kinds
of change, how each applies to an agent's declarations or to one memory's status at a
moment, which memories' fates two compositions disagree on, and the answer's shape.

A change applies the same way to the agent as it is now and to every moment a
delivery is replayed at: a config, an order or a spec replaces (or rearranges) the
declarations in force then; a decision moves the memory's status then, when its status
then is one the decision moves from (approving a memory at a moment it was already
rejected changes nothing at that moment, as approving a rejected memory does nothing).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Literal, get_args

from lens.core.background import Background
from lens.core.config import AgentConfig
from memory.core.composition import Composition
from memory.core.explain import SHORT_WORDS

Decision = Literal["approve", "reject", "revoke", "reopen"]
DECISIONS: tuple[Decision, ...] = get_args(Decision)

# The statuses each decision moves a promotion from, and the one it leaves
# (``memory.decisions``: approve and reject decide a pending row, revoke takes an
# approved one out, reopen puts a rejected or revoked one back in the queue).
MOVES_FROM: dict[Decision, frozenset[str]] = {
    "approve": frozenset({"pending"}),
    "reject": frozenset({"pending"}),
    "revoke": frozenset({"approved"}),
    "reopen": frozenset({"rejected", "revoked"}),
}
LEAVES: dict[Decision, str] = {
    "approve": "approved",
    "reject": "rejected",
    "revoke": "revoked",
    "reopen": "pending",
}
# What a memory in the prompt is called on either side of a fate.
COMPOSED = "composed"


@dataclass(frozen=True)
class ConfigChange:
    """A whole new config in place of the agent's declarations (validated already)."""

    config: AgentConfig


@dataclass(frozen=True)
class DecisionChange:
    memory_id: str
    decision: Decision


@dataclass(frozen=True)
class OrderChange:
    """The agent's Background sections in this order (each named once)."""

    order: tuple[str, ...]


@dataclass(frozen=True)
class SpecChange:
    """Another routing spec (None: none at all)."""

    spec: str | None


@dataclass(frozen=True)
class Moved:
    """One memory a migration moves (SPEC §18.3): the placement it would hold (None:
    none) and the status its re-promotion leaves it in."""

    memory_id: str
    section: str | None
    key: str | None
    key_source: str | None
    status: str
    reason: str = ""  # a declined move's decline reason


@dataclass(frozen=True)
class MovesChange:
    """A migration plan's moves, applied (the migration page's what-if; not one of the
    API's four changes): each moved memory at its new placement with its new status,
    at every moment it existed, as a config applies at every moment."""

    moves: Mapping[str, Moved]  # by memory id

    @classmethod
    def of(cls, moves: Iterable[Moved]) -> MovesChange:
        return cls({move.memory_id: move for move in moves})


Change = ConfigChange | DecisionChange | OrderChange | SpecChange | MovesChange


def decided(status: str, change: DecisionChange) -> str:
    """``status`` once ``change`` is applied to it: moved when the decision moves that
    status, else as it was."""
    return LEAVES[change.decision] if status in MOVES_FROM[change.decision] else status


def order_problem(current: Sequence[str], order: Sequence[str]) -> str | None:
    """Why ``order`` is not an order of the sections ``current`` names, or None."""
    if len(set(order)) != len(order):
        twice = sorted({section for section in order if order.count(section) > 1})
        return f"names {', '.join(twice)} more than once"
    missing = [section for section in current if section not in set(order)]
    unknown = [section for section in order if section not in set(current)]
    if unknown:
        return f"the agent declares no section {', '.join(unknown)}"
    if missing:
        return f"leaves out {', '.join(missing)}"
    return None


def in_order(background: Background, order: Sequence[str]) -> Background:
    """``background`` with its sections in ``order``; sections ``order`` does not name
    (a past revision's) keep their order after those it names, as the stability card
    reorders a delivered prompt (``memory.core.stability.reordered``)."""
    rank = {section: index for index, section in enumerate(order)}
    sections = background.sections
    places = sorted(
        range(len(sections)), key=lambda index: (rank.get(sections[index].id, len(rank)), index)
    )
    if places == list(range(len(sections))):
        return background
    return background.model_copy(update={"sections": tuple(sections[i] for i in places)})


def changed_config(config: AgentConfig, change: Change) -> AgentConfig:
    """The declarations ``change`` leaves in place of ``config`` (a decision: the same)."""
    match change:
        case ConfigChange(config=new):
            return new
        case OrderChange(order=order):
            background = in_order(config.background, order)
            if background is config.background:
                return config
            return config.model_copy(update={"background": background})
        case SpecChange(spec=spec):
            if spec == config.routing_spec:
                return config
            return config.model_copy(update={"routing_spec": spec})
    return config


# --- the answer ----------------------------------------------------------------------


@dataclass(frozen=True)
class PromptFigures:
    tokens: int
    prompt_sha256: str


@dataclass(frozen=True)
class MemoryFate:
    """A memory whose fate changes: ``composed`` or a §5.6 reason, before and after."""

    memory_id: str
    before: str
    after: str


@dataclass(frozen=True)
class Now:
    before: PromptFigures
    after: PromptFigures
    diff: str  # the unified diff of the two prompts' texts ("" when they are equal)
    memories: tuple[MemoryFate, ...]


@dataclass(frozen=True)
class Replay:
    deliveries: int  # how many were replayed
    changed: int  # of them, how many the change would have made differ from the delivered
    tokens_delta_mean: float | None  # replayed minus delivered tokens; None without any
    # The mean cached prefix between consecutive prompts (the first has none): as
    # recorded when delivered, and between the replayed ones.
    prefix_tokens_mean_before: float | None
    prefix_tokens_mean_after: float | None


@dataclass(frozen=True)
class WhatIf:
    now: Now
    replay: Replay

    @property
    def tokens_delta(self) -> int:
        return self.now.after.tokens - self.now.before.tokens


def fates_of(composition: Composition) -> dict[str, str]:
    """Every memory of ``composition``: ``composed``, or the reason it was dropped
    (SPEC §5.6: each memory is exactly one of these)."""
    found: dict[str, str] = {drop.memory_id: drop.reason for drop in composition.report.drops}
    for section in composition.background.sections:
        for entry in section.entries:
            for memory_id in entry.memory_ids:
                found[memory_id] = COMPOSED
    return found


def fate_changes(before: Composition, after: Composition) -> tuple[MemoryFate, ...]:
    """The memories whose fate differs between the two compositions, by id. A memory
    only one side knows (none: both are of the same memories) is left out."""
    was, now = fates_of(before), fates_of(after)
    return tuple(
        MemoryFate(memory_id, was[memory_id], now[memory_id])
        for memory_id in sorted(was.keys() & now.keys())
        if was[memory_id] != now[memory_id]
    )


def mean(values: Sequence[float]) -> float | None:
    return fmean(values) if values else None


# --- in words ------------------------------------------------------------------------


def fate_word(fate: str) -> str:
    """A fate in a page's words: "in the prompt", or the reason said short."""
    return "in the prompt" if fate == COMPOSED else SHORT_WORDS.get(fate, fate)


@dataclass(frozen=True)
class FateWords:
    memory_id: str
    before: str
    after: str


def fate_words(fate: MemoryFate) -> FateWords:
    return FateWords(fate.memory_id, fate_word(fate.before), fate_word(fate.after))


def _memories(n: int) -> str:
    return f"{n} memor{'y' if n == 1 else 'ies'}"


def effect_phrases(found: WhatIf, subject: str | None = None) -> list[str]:
    """The effect in short phrases a row can join with middle dots: the token change
    now, the memories it pushes out and brings in (``subject``, the memory decided on,
    is said apart: whether it stays out), and how many of the last prompts would have
    changed. ``["+18 tokens", "pushes out 1 memory", "12 of the last 50 prompts would
    change"]``."""
    delta = found.tokens_delta
    # A minus sign, as the lens writes token deltas elsewhere ("−28").
    signed = f"{delta:+,}".replace("-", "\u2212")
    phrases = [f"{signed} token{'s' if abs(delta) != 1 else ''}" if delta else "same tokens"]
    others = [fate for fate in found.now.memories if fate.memory_id != subject]
    own = next((fate for fate in found.now.memories if fate.memory_id == subject), None)
    if own is not None and own.after != COMPOSED and own.before != COMPOSED:
        phrases.append(f"stays out ({own.after})")
    if out := sum(1 for fate in others if fate.before == COMPOSED and fate.after != COMPOSED):
        phrases.append(f"pushes out {_memories(out)}")
    if entering := sum(1 for fate in others if fate.after == COMPOSED != fate.before):
        phrases.append(f"brings in {_memories(entering)}")
    replay = found.replay
    if replay.deliveries:
        phrases.append(
            f"{replay.changed} of the last {replay.deliveries} prompt"
            f"{'s' if replay.deliveries != 1 else ''} would change"
        )
    else:
        phrases.append("no prompt delivered yet")
    return phrases


def stability_sentence(found: WhatIf) -> str:
    """The Cache stability card's line (SPEC §18.2): "would have changed 12 of the last
    50 prompts; cached prefix 3,210 → 1,004 tokens" — the mean prefix between
    consecutive prompts as delivered and as replayed, whole tokens with thousands
    separators."""
    replay = found.replay
    if not replay.deliveries:  # follows its subject ("This order …"), as the rest does
        return "would have changed no prompt: none delivered yet"
    plural = "s" if replay.deliveries != 1 else ""
    said = f"would have changed {replay.changed:,} of the last {replay.deliveries:,} prompt{plural}"
    before, after = replay.prefix_tokens_mean_before, replay.prefix_tokens_mean_after
    if before is None or after is None:  # one delivery: no pair to share a prefix
        return said
    return f"{said}; cached prefix {round(before):,} \u2192 {round(after):,} tokens"
