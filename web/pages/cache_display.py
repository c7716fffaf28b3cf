"""The prompt-cache figures as the delivery pages show them (SPEC §17): one line per
delivery, and a small chart of the cached share over an agent's newest deliveries,
drawn on the server as SVG (no script, no chart library).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from lens.core.cache_prefix import CONTEXT, CachePrefix, FirstChange
from lens.core.fragments import SECTION_SEPARATOR, PromptSection
from lens.core.provider_caches import anthropic_cached, openai_cached
from lens.core.token_counts import count_tokens
from lens.models import Agent
from memory.deliveries.cache_figures import figures_of
from memory.models import Delivery

# The chart's deliveries: the agent's newest, whatever page the timeline shows.
CHART_DELIVERIES = 50
# The chart's drawing units: one slot per delivery, bars a little narrower.
_SLOT = 10
_BAR = 8
_HEIGHT = 60


def section_titles(agent: Agent) -> dict[str, str]:
    """The agent's Background section titles by id, as the lens shows them now (the
    sections are prefetched with the agent)."""
    return {section.section_id: section.title for section in agent.sections.all()}


def change_words(change: FirstChange, titles: Mapping[str, str]) -> str:
    """``Background › Preferences`` inside a Background section (its id when it is no
    longer declared), the prompt section's name elsewhere."""
    if change.section == CONTEXT and change.background_section is not None:
        title = titles.get(change.background_section, change.background_section)
        return f"Background › {title}"
    return change.section


def authored_tokens(sections: Sequence[PromptSection]) -> int:
    """The tokens of a prompt before its Context's heading, where a runtime would put
    its first Anthropic breakpoint (the whole prompt when it has no Context)."""
    authored: list[str] = []
    for section in sections:
        if section.name == CONTEXT:
            authored.append("")  # the separator before the Context's heading
            break
        authored.append(section.text)
    return count_tokens(SECTION_SEPARATOR.join(authored))


@dataclass(frozen=True)
class CacheLine:
    """``12,340 of 14,002 tokens cached · changed in Background › Preferences``."""

    figures: CachePrefix
    change: str | None
    # The tokens before the Context (``authored_tokens``), on a delivery's own page.
    authored: int | None = None

    @property
    def cached(self) -> str:
        return f"{self.figures.prefix_tokens:,}"

    @property
    def total(self) -> str:
        return f"{self.figures.total_tokens:,}"

    @property
    def openai(self) -> str:
        return f"{openai_cached(self.figures.prefix_tokens):,}"

    @property
    def anthropic(self) -> str | None:
        if self.authored is None:
            return None
        breakpoints = (self.authored, self.figures.total_tokens)
        return f"{anthropic_cached(self.figures.prefix_tokens, breakpoints):,}"

    @property
    def words(self) -> str:
        text = f"{self.cached} of {self.total} tokens cached"
        return f"{text} · changed in {self.change}" if self.change else text


def cache_line(
    delivery: Delivery, titles: Mapping[str, str], authored: int | None = None
) -> CacheLine | None:
    """``delivery``'s line; None when it was recorded before the figures were kept."""
    figures = figures_of(delivery)
    if figures is None:
        return None
    change = figures.first_change
    words = None if change is None else change_words(change, titles)
    return CacheLine(figures, words, authored)


@dataclass(frozen=True)
class Bar:
    """One delivery's bar, its coordinates written out (a template would localise a
    float's decimal point)."""

    x: int
    y: str
    height: str
    label: str
    known: bool
    width: int = _BAR


@dataclass(frozen=True)
class ShareChart:
    """The cached share of each of the newest deliveries, oldest on the left."""

    bars: tuple[Bar, ...]
    summary: str
    width: int
    height: int = _HEIGHT


def _share(prefix: int, total: int) -> float:
    return prefix / total if total else 1.0


def share_chart(points: Sequence[tuple[datetime, int | None, int]]) -> ShareChart | None:
    """The chart of ``points``: (delivered at, prefix tokens or None, total tokens),
    oldest first; None when there is nothing to draw."""
    if not points:
        return None
    bars = []
    known: list[tuple[float, datetime]] = []
    for index, (at, prefix, total) in enumerate(points):
        x = index * _SLOT + (_SLOT - _BAR) // 2
        when = f"{at:%Y-%m-%d %H:%M:%S} UTC"
        if prefix is None:
            bars.append(Bar(x, f"{_HEIGHT - 1}", "1", f"{when}: not counted", known=False))
            continue
        share = _share(prefix, total)
        known.append((share, at))
        height = max(share * _HEIGHT, 1.0)  # a 0% delivery still shows as a sliver
        label = f"{when}: {prefix:,} of {total:,} tokens cached ({share:.0%})"
        bars.append(Bar(x, f"{_HEIGHT - height:.2f}", f"{height:.2f}", label, known=True))
    count = len(points)
    noun = "delivery" if count == 1 else f"{count} deliveries"
    if known:
        mean = sum(share for share, _at in known) / len(known)
        lowest, lowest_at = min(known, key=lambda item: item[0])
        summary = (
            f"Cached share of the prompt over the last {noun}, oldest first: mean {mean:.0%},"
            f" lowest {lowest:.0%} ({lowest_at:%Y-%m-%d %H:%M} UTC), newest"
            f" {_newest_words(points[-1])}."
        )
    else:
        summary = f"Cached share over the last {noun}: none were counted."
    return ShareChart(bars=tuple(bars), summary=summary, width=count * _SLOT)


def _newest_words(point: tuple[datetime, int | None, int]) -> str:
    _at, prefix, total = point
    return "not counted" if prefix is None else f"{_share(prefix, total):.0%}"


def chart_of(agent: Agent) -> ShareChart | None:
    """The chart of ``agent``'s newest deliveries (one query, however many it has)."""
    rows = list(
        Delivery.objects.filter(agent=agent)
        .order_by("-delivered_at")
        .values_list("delivered_at", "cache_prefix_tokens", "composition__tokens")[
            :CHART_DELIVERIES
        ]
    )
    return share_chart(rows[::-1])
