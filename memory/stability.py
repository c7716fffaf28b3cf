"""Prompt-cache stability over an agent's last deliveries (SPEC §17): how often each
part of the prompt changed, the mean cached prefix as delivered, and a most-stable-first
order of Background sections whose mean is measured — those same deliveries'
compositions re-rendered in that order and tokenised — never estimated.

The work is bounded: at most ``LAST_MAX`` deliveries, each distinct stored composition
read once, each distinct prompt text tokenised once (``token_ids`` keeps ids by the
text's hash, so the delivered prompts are usually tokenised already).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import fmean

import orjson

from lens.actors import Actor
from lens.agents import config_of
from lens.core.errors import InvalidInput
from lens.core.fragments import SECTION_SEPARATOR
from lens.core.provider_caches import anthropic_cached, openai_cached
from lens.core.token_counts import count_tokens, token_ids
from lens.core.token_prefix import segments, shared_tokens
from lens.models import Agent, Via
from memory.configuring import Stored, store_config
from memory.core.stability import (
    CONTEXT,
    Key,
    Part,
    changed_in,
    parts_of,
    parts_of_data,
    reordered,
    suggested_order,
    texts_by_key,
)
from memory.deliveries.ledger import composition_json, composition_of
from memory.models import Delivery, StoredComposition

LAST_DEFAULT = 50
LAST_MAX = 200


@dataclass(frozen=True)
class SectionFigure:
    section: str
    background_section: str | None
    changed_in: int  # in how many of the deliveries (after the first) its text differs
    tokens: int  # its tokens in the newest delivery


@dataclass(frozen=True)
class Stability:
    deliveries: int
    sections: list[SectionFigure]
    current_order: list[str]
    prefix_tokens_mean: float | None  # as delivered; None with fewer than two deliveries
    suggested_order: list[str]
    suggested_prefix_tokens_mean: float | None
    # Each order's prompts measured in the same way: the current order re-rendered.
    current_prefix_tokens_mean: float | None
    # The same prefixes as each provider's rule would serve them from its cache
    # (``lens.core.provider_caches``): as delivered, and in the suggested order.
    openai_cached_mean: float | None
    suggested_openai_cached_mean: float | None
    anthropic_cached_mean: float | None
    suggested_anthropic_cached_mean: float | None
    newest_tokens: int | None  # the newest delivered prompt's tokens; None without one


def check_last(last: int) -> int:
    if not 2 <= last <= LAST_MAX:
        raise InvalidInput(
            f"last: between 2 and {LAST_MAX} deliveries",
            errors=[{"loc": "last", "message": f"between 2 and {LAST_MAX}"}],
        )
    return last


def history_of(agent: Agent, last: int) -> list[tuple[Part, ...]]:
    """The parts of ``agent``'s last ``last`` delivered prompts, oldest first."""
    rows = list(
        Delivery.objects.filter(agent=agent)
        .select_related("composition")
        .order_by("-delivered_at")[:last]
    )
    rows.reverse()
    parts: dict[int, tuple[Part, ...]] = {}
    for row in rows:
        if row.composition_id not in parts:
            parts[row.composition_id] = _parts(row.composition)
    return [parts[row.composition_id] for row in rows]


def _parts(stored: StoredComposition) -> tuple[Part, ...]:
    # Read from the JSON as stored (a composition validated into models costs ten
    # times more); the models' way when the JSON does not read as the renderer writes.
    found = parts_of_data(orjson.loads(composition_json(stored)))
    if found is not None:
        return found
    composition = composition_of(stored)
    return parts_of(composition.prompt, composition.background)


def _prefixes(texts: list[str], ids: Callable[[str], Sequence[int]]) -> list[int]:
    """The cached prefix of each prompt after the first: tokens shared with the one
    before, counted segment by segment (``shared_tokens``: the same count as comparing
    the two prompts' whole tokenisations, at a fraction of the work)."""
    cut = [segments(text) for text in texts]
    return [shared_tokens(a, b, ids) for a, b in zip(cut, cut[1:], strict=False)]


def _authored_end(parts: tuple[Part, ...]) -> int:
    """The code point where the Context's heading starts (a safe cut: a line start
    before ``#``), or the prompt's end when it has no Context."""
    end = 0
    for part in parts:
        if part.section == CONTEXT:
            return end + len(SECTION_SEPARATOR)
        end += len(part.text)
    return end


def _tokens(text: str, ids: Callable[[str], Sequence[int]]) -> int:
    """``text``'s tokens from its segments' (memoised) ids."""
    return sum(len(ids(segment)) for segment in segments(text))


def _anthropic(
    texts: list[str], authored: list[int], prefixes: list[int], ids: Callable[[str], Sequence[int]]
) -> list[int]:
    """What Anthropic would serve of each prompt after the first, with breakpoints after
    the authored sections and at the end (``lens.core.provider_caches``)."""
    return [
        anthropic_cached(prefix, (_tokens(text[:end], ids), _tokens(text, ids)))
        for text, end, prefix in zip(texts[1:], authored[1:], prefixes, strict=True)
    ]


def _memo() -> Callable[[str], Sequence[int]]:
    """Token ids of a segment, each distinct segment tokenised once per measurement."""
    known: dict[str, Sequence[int]] = {}

    def ids(segment: str) -> Sequence[int]:
        found = known.get(segment)
        if found is None:
            found = known[segment] = token_ids(segment)
        return found

    return ids


def _mean(values: list[int]) -> float | None:
    return fmean(values) if values else None


def stability(agent: Agent, last: int = LAST_DEFAULT) -> Stability:
    history = history_of(agent, check_last(last))
    changes = changed_in(history)
    current = [section.id for section in config_of(agent).background.sections]
    by_section = {key[1]: n for key, n in changes.items() if key[1] is not None}
    suggested = suggested_order(current, by_section)
    ids = _memo()
    delivered = [_text(parts) for parts in history]
    as_delivered = _prefixes(delivered, ids)
    in_order = [reordered(parts, current) for parts in history]
    in_current = as_delivered if in_order == delivered else _prefixes(in_order, ids)
    in_suggested, suggested_texts = in_current, in_order
    if suggested != current:
        suggested_texts = [reordered(parts, suggested) for parts in history]
        in_suggested = _prefixes(suggested_texts, ids)
    # Never worse than the order the agent has: when stability-first measures worse on
    # these deliveries (tokens can merge across a moved boundary), the current order is
    # the suggestion.
    if sum(in_suggested) < sum(in_current):
        suggested, in_suggested, suggested_texts = current, in_current, in_order
    # Reordering Background sections moves nothing out of the authored sections.
    authored = [_authored_end(parts) for parts in history]
    return Stability(
        deliveries=len(history),
        sections=_figures(history, changes),
        current_order=current,
        prefix_tokens_mean=_mean(as_delivered),
        suggested_order=suggested,
        suggested_prefix_tokens_mean=_mean(in_suggested),
        current_prefix_tokens_mean=_mean(in_current),
        openai_cached_mean=_mean([openai_cached(n) for n in as_delivered]),
        suggested_openai_cached_mean=_mean([openai_cached(n) for n in in_suggested]),
        anthropic_cached_mean=_mean(_anthropic(delivered, authored, as_delivered, ids)),
        suggested_anthropic_cached_mean=_mean(
            _anthropic(suggested_texts, authored, in_suggested, ids)
        ),
        newest_tokens=_tokens(delivered[-1], ids) if delivered else None,
    )


def _text(parts: tuple[Part, ...]) -> str:
    return "".join(part.text for part in parts)


def _figures(history: list[tuple[Part, ...]], changes: dict[Key, int]) -> list[SectionFigure]:
    if not history:
        return []
    newest = texts_by_key(history[-1])
    return [
        SectionFigure(
            section, background, changes.get((section, background), 0), count_tokens(text)
        )
        for (section, background), text in newest.items()
    ]


def apply_order(
    agent: Agent, order: list[str], actor: Actor, *, via: Via = Via.ADMIN, if_revision: int
) -> Stored:
    """Put ``agent``'s Background sections in ``order`` (each named once): one revision
    whose summary is only ``section_moved`` entries, or a proposal on a protected agent
    (SPEC §14). ``if_revision``: the revision the order was measured on; a newer one
    refuses the change (``RevisionConflict``), having written nothing."""
    config = config_of(agent)
    sections = {section.id: section for section in config.background.sections}
    if sorted(order) != sorted(sections) or len(set(order)) != len(order):
        raise InvalidInput(
            "order: name each Background section of the agent once",
            errors=[{"loc": "order", "message": "each Background section once"}],
        )
    moved = config.background.model_copy(
        update={"sections": tuple(sections[section_id] for section_id in order)}
    )
    return store_config(
        agent.team,
        agent.slug,
        config.model_copy(update={"background": moved}),
        actor=actor,
        via=via,
        if_revision=if_revision,
    )
