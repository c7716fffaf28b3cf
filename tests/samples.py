"""Pure sample data shared by tests, and builders of the pure cores' values (no Django,
so core tests can use them too).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, TypeVar

from lens.core.background import Background, BackgroundEntry, BackgroundSection
from lens.core.cache_prefix import FirstChange
from lens.core.config import AgentConfig
from lens.core.fragments import SECTION_SEPARATOR, PromptSection, prompt_text
from lens.core.render import AWARENESS_HEADING, entry_line
from lens.core.text import collapse
from memory.core.presets import PresetSpec
from memory.core.report import RoutingReport
from memory.core.routing import DeclaredSection, OverlayPlan, PlacedRecord, RoutableRecord

GRINNING = "\U0001f600"  # one astral code point, two UTF-16 units, four UTF-8 bytes

# Every line break SPEC §4.2 lists: \n, \r, \r\n, \v, \f, \x1c–\x1e, \x85, \u2028, \u2029.
SPEC_LINE_BREAKS = [
    "\n",
    "\r",
    "\r\n",
    "\v",
    "\f",
    "\x1c",
    "\x1d",
    "\x1e",
    "\x85",
    "\u2028",
    "\u2029",
]

SAMPLE_CONFIG: dict[str, Any] = {
    "name": "Wren",
    "persona": "You are Wren, a companion.",
    "tone": "Warm.",
    "objective": "Help the user.",
    "capabilities": [{"name": "memory_save", "description": "Save what you learn."}],
    "manual": "Save profile memories with a label.",
    "routing_spec": None,
    "background": {
        "sections": [
            {"id": "user_profile", "title": "About the User", "promotion": "auto"},
            {
                "id": "ground_rules",
                "title": "Ground Rules",
                "promotion": "locked",
                "entries": [
                    {"key": "privacy", "value": "Never share what the user says."},
                    {"key": "check_in_hour", "value": 9},
                    {"key": "ratio", "value": 2.5},
                    {"key": "proactive", "value": True},
                ],
            },
        ]
    },
    "awareness": [{"name": "Calendar", "description": "Next 14 days", "access_method": "tool"}],
    "recall_pinned_candidates": False,
}


# --- the prompt ------------------------------------------------------------------------

SECTION_ORDER = ["Persona", "Mission", "Capabilities", "Manual", "Context"]


def agent_config(**fields: Any) -> AgentConfig:
    """An agent config named Wren with only the fields given."""
    return AgentConfig.model_validate({"name": "Wren", **fields})


def background_of(*sections: dict[str, Any]) -> Background:
    """A Background from plain section dicts, as a config declares them."""
    return Background.model_validate({"sections": list(sections)})


# --- the overlay fold (memory.core.overlay) ---------------------------------------------

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def at(seconds: float, tz: timezone = UTC) -> datetime:
    """``seconds`` after T0, seen from ``tz``."""
    return (T0 + timedelta(seconds=seconds)).astimezone(tz)


def placed(
    record_id: str,
    *,
    section: str = "notes",
    key: str | None = None,
    content: str | None = None,
    seconds: float = 0,
    created_at: datetime | None = None,
    label: str | None = None,
) -> PlacedRecord:
    """A record placed in ``section`` (keyed by its own id unless ``key`` is given)."""
    return PlacedRecord(
        id=record_id,
        kind="fact",
        content=f"content of {record_id}" if content is None else content,
        label=label,
        created_at=at(seconds) if created_at is None else created_at,
        section=section,
        key=record_id if key is None else key,
    )


def section(
    section_id: str, promotion: str = "auto", *entries: tuple[str, Any]
) -> BackgroundSection:
    """A declared section titled after its id, holding these authored (key, value) entries."""
    return BackgroundSection.model_validate(
        {
            "id": section_id,
            "title": section_id.replace("_", " ").title(),
            "promotion": promotion,
            "entries": [{"key": key, "value": value} for key, value in entries],
        }
    )


def background(*sections: BackgroundSection) -> Background:
    return Background(sections=sections)


NOTES = background(section("notes", "auto"))


def memory_entries(composed: Background) -> list[tuple[str, BackgroundEntry]]:
    """(section id, entry) of every entry the fold made from memories."""
    return [(s.id, e) for s in composed.sections for e in s.entries if e.memory_ids]


def memory_chars(composed: Background) -> int:
    return sum(len(entry_line(entry)) for _, entry in memory_entries(composed))


def composed_ids(composed: Background) -> list[str]:
    return [mid for _, entry in memory_entries(composed) for mid in entry.memory_ids]


def reasons(report: RoutingReport) -> dict[str, str]:
    return {drop.memory_id: drop.reason for drop in report.drops}


def line_cost(key: str, value: str) -> int:
    """What an entry's rendered line costs the memory budget."""
    return len(entry_line(BackgroundEntry.model_construct(key=key, value=value, memory_ids=())))


# Routing specs with one hook each, for the fold to call.


@dataclass
class Spec:
    key: str = "test"
    version: str = "1"

    def route(self, record: RoutableRecord, ctx: Any) -> None:
        return None


@dataclass
class ReconcileSpec(Spec):
    verdict: Callable[[RoutableRecord, RoutableRecord], str] = lambda a, b: "a"
    calls: list[tuple[str, str]] = field(default_factory=list)

    def reconcile(self, a: RoutableRecord, b: RoutableRecord) -> str:
        self.calls.append((a.id, b.id))
        return self.verdict(a, b)


@dataclass
class RenderSpec(Spec):
    def render_entry(self, placed: PlacedRecord) -> str:
        return f"[{placed.kind}] {placed.content.upper()}"


@dataclass
class FinalizeSpec(Spec):
    drop: frozenset[str] = frozenset()
    seen: list[tuple[tuple[PlacedRecord, ...], RoutingReport]] = field(default_factory=list)

    def finalize(self, records: tuple[PlacedRecord, ...], report: RoutingReport) -> OverlayPlan:
        self.seen.append((records, report))
        return OverlayPlan(drop=self.drop)


# --- timing ------------------------------------------------------------------------------

T = TypeVar("T")


def fastest(call: Callable[[], T], runs: int = 3) -> tuple[T, float]:
    """``call()``'s answer and the fastest of ``runs`` timings of it, in seconds: a moment
    of CPU taken by another process must not fail a test; a slow call is slow every time."""
    started = time.perf_counter()
    answer = call()
    best = time.perf_counter() - started
    for _run in range(runs - 1):
        started = time.perf_counter()
        answer = call()
        best = min(best, time.perf_counter() - started)
    return answer, best


# --- prompt-cache figures, counted independently (SPEC §17) ------------------------------


def leading_equal(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many leading items ``a`` and ``b`` share, one by one."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def expected_change(
    sections: Sequence[PromptSection], background: Background, offset: int
) -> FirstChange:
    """Which section of the prompt holds code point ``offset`` (the last one when it is
    past the end), found by walking the sections and, in the Context, the headings of
    the Background blocks; a separator ends the section before it."""
    offset = min(offset, len(prompt_text(sections)) - 1)
    start = 0
    for index, section in enumerate(sections):
        end = start + len(section.text) + len(SECTION_SEPARATOR)
        if offset < end or index == len(sections) - 1:
            if section.name != "Context":
                return FirstChange(section.name)
            inside = min(offset - start, len(section.text) - 1)
            return FirstChange("Context", _block_at(section.text, background, inside))
        start = end
    raise AssertionError("the last section takes every offset")


def _block_at(context: str, background: Background, offset: int) -> str | None:
    # Each Background block begins at its "### {title}" line, the information sources
    # at theirs; the blank line before a block is the end of the one above.
    starts: list[tuple[int, str | None]] = [(0, None)]
    position = 0
    for section in background.sections:
        if section.entries:
            position = context.index(f"\n### {collapse(section.title)}\n", position) + 1
            starts.append((position, section.id))
    sources = context.find("\n" + AWARENESS_HEADING, position)
    if sources >= 0:
        starts.append((sources + 1, None))
    return [section_id for begin, section_id in starts if begin <= offset][-1]


# ``user-background`` as a later version of it would route: profile memories to
# ``about_user``, preferences to ``preferences`` (a migration's before and after).
USER_BACKGROUND_V2 = PresetSpec(
    key="user-background",
    version="2",
    sections=(
        DeclaredSection(id="about_user", title="About the User", promotion="auto"),
        DeclaredSection(id="preferences", title="Preferences", promotion="guarded"),
    ),
    routes={"profile": "about_user", "preference": "preferences"},
)
V2_SPECS = ["tests.samples.USER_BACKGROUND_V2", "memory.core.presets.PROJECT"]


# Two versions of one spec that swap two addresses: kind ``a`` and kind ``b`` trade
# sections ``x`` and ``y`` (a migration that only lands if it never holds both at once).
SWAP_V1 = PresetSpec(key="swapper", version="1", sections=(), routes={"a": "x", "b": "y"})
SWAP_V2 = PresetSpec(key="swapper", version="2", sections=(), routes={"a": "y", "b": "x"})
