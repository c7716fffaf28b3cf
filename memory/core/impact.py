"""What approving one pending memory would do to an agent's prompt. Pure.

The answer comes from the overlay fold itself, run with the candidate among the approved
records, never from a second model of its rules: whether the memory would be composed
(and why not), what its line costs against what the budget has left, which composed
memories it would push out, and the lines of its section once approved.

The fold runs once per agent as things are (``Baseline``), then once per candidate over
the records in the prompt now plus the candidate — a few dozen records, however many the
agent has. That small fold is the whole answer whenever the lines it pushes out free no
more than the candidate's line takes. The budget walk keeps entries greedily in a fixed
order, so then every record over the budget now still meets, at its turn, at least the
budget used it met before, and stays out; the records in the prompt fare as in the small
fold. Otherwise (a short line pushing out a longer one, which may let a third back in),
and whenever reconciliation or a spec's finalize hook is involved, the candidate's fold
runs over every record that competes for the budget.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from lens.core.background import Background, BackgroundEntry, BackgroundSection, Tier
from lens.core.identity import key_skeleton
from lens.core.render import entry_line
from lens.core.text import collapse
from memory.core.overlay import apply_memory_overlay, entry_cost
from memory.core.report import DropReason
from memory.core.routing import PlacedRecord, RoutingSpec

# A section this long or shorter is previewed whole; a longer one shows the lines that
# change with a few lines of context around each.
PREVIEW_WHOLE_UP_TO = 12
PREVIEW_CONTEXT = 2

LineState = Literal["authored", "memory", "new", "holds", "leaves"]
Effect = Literal["fits", "pushes", "over", "authored", "blocked"]


@dataclass(frozen=True)
class PreviewLine:
    """One entry line of the section once approved.

    ``new``: the candidate's own line. ``holds``: the authored entry that keeps the
    candidate's key. ``leaves``: a memory in the prompt now that approving pushes out.
    """

    text: str
    state: LineState
    memory_id: str | None = None


@dataclass(frozen=True)
class Gap:
    """Lines of a long section the preview leaves out."""

    count: int


@dataclass(frozen=True)
class Impact:
    reason: DropReason | None  # why the fold would leave it out once approved; None: composed
    needed: int  # characters its line takes from the memory budget
    left: int  # characters the memories in the prompt now leave of the budget
    budget: int
    pushed_out: tuple[PlacedRecord, ...]  # in the prompt now, out once it is approved
    brought_in: tuple[PlacedRecord, ...]  # out now (over budget), in once it is approved
    section: BackgroundSection | None  # the section as declared now (None: undeclared)
    lines: tuple[PreviewLine | Gap, ...]
    line_count: int  # entry lines of the section once approved

    @property
    def composes(self) -> bool:
        return self.reason is None

    @property
    def effect(self) -> Effect:
        """What a reviewer is told: it fits; it fits but pushes others out; it does not
        fit; an authored entry keeps its key; its section or address turns it away."""
        if self.reason is None:
            return "pushes" if self.pushed_out else "fits"
        if self.reason == "over-budget":
            return "over"
        if self.reason == "authored-wins":
            return "authored"
        return "blocked"

    @property
    def section_title(self) -> str | None:
        return self.section.title if self.section is not None else None

    @property
    def tier(self) -> Tier | None:
        return self.section.promotion if self.section is not None else None


@dataclass(frozen=True)
class Baseline:
    """One agent's fold as things are, and what a candidate's fold needs from it."""

    background: Background  # the authored Background, as declared now
    folded: Background  # the fold's result now
    placed: tuple[PlacedRecord, ...]  # every approved record
    contenders: tuple[PlacedRecord, ...]  # the records of addresses composed or over budget
    holders: tuple[PlacedRecord, ...]  # the records of addresses composed now
    composed: frozenset[str]
    used: int
    addresses: frozenset[tuple[str, str]]  # every approved record's (section, key)
    by_id: dict[str, PlacedRecord]
    spec: RoutingSpec | None
    budget: int
    # The fold's time: records whose validity window closed by then are left out.
    now: datetime | None = None
    # Entry lines drawn so far: every row's preview draws its section again, and the
    # same authored entries and memories (up to 10,000 code points each, an authored
    # value more) would be collapsed and formatted once per row.
    drawn: dict[tuple[object, ...], str] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(
        cls,
        background: Background,
        placed: list[PlacedRecord],
        spec: RoutingSpec | None,
        budget: int,
        now: datetime | None = None,
    ) -> Baseline:
        folded, report = apply_memory_overlay(background, placed, spec, budget, now=now)
        composed = _composed_ids(folded)
        over = {d.memory_id for d in report.drops if d.reason == "over-budget"}
        # Whole addresses: reconciling a group again needs every record of it.
        in_prompt = {(p.section, p.key) for p in placed if p.id in composed}
        competing = in_prompt | {(p.section, p.key) for p in placed if p.id in over}
        return cls(
            background=background,
            folded=folded,
            placed=tuple(placed),
            contenders=tuple(p for p in placed if (p.section, p.key) in competing),
            holders=tuple(p for p in placed if (p.section, p.key) in in_prompt),
            composed=composed,
            used=report.stats.chars_used.get("background", 0),
            addresses=frozenset((p.section, p.key) for p in placed),
            by_id={p.id: p for p in placed},
            spec=spec,
            budget=budget,
            now=now,
        )

    def impact(self, candidate: PlacedRecord) -> Impact:
        """What approving ``candidate`` (a pending record with its placement) would do."""
        # Sharing an address brings reconciliation in, and a finalize hook sees every
        # record: then nothing is left out of the candidate's fold.
        if (candidate.section, candidate.key) in self.addresses or (
            getattr(self.spec, "finalize", None) is not None
        ):
            return self._impact(candidate, self.placed)
        small = self._fold(candidate, self.holders)
        freed = sum(
            len(entry_line(entry))
            for section in self.folded.sections
            for entry in section.entries
            if entry.memory_ids and not small.composed.intersection(entry.memory_ids)
        )
        if freed <= entry_cost(candidate, self.spec):
            return self._impact(candidate, self.holders, small)
        return self._impact(candidate, self.contenders)

    def withdrawal(self, record_id: str) -> Withdrawal:
        """What revoking the approved memory ``record_id`` would do: one fold of every
        other approved record, compared with the fold now."""
        record = self.by_id.get(record_id)
        if record is None or record_id not in self.composed:
            return Withdrawal(record, False, "", (), (), 0, None, (), 0)
        others = [p for p in self.placed if p.id != record_id]
        folded, report = apply_memory_overlay(
            self.background, others, self.spec, self.budget, now=self.now
        )
        after = _composed_ids(folded)
        arrived = [self.by_id[i] for i in sorted(after - self.composed) if i in self.by_id]
        address = (record.section, record.key)
        before = _section(self.folded, record.section)
        leaving = (
            next((self._line(e) for e in before.entries if record_id in e.memory_ids), "")
            if before is not None
            else ""
        )
        lines = _withdrawal_lines(
            before, _section(folded, record.section), record, self.composed, self.by_id, self._line
        )
        return Withdrawal(
            record=record,
            composed=True,
            leaving=leaving,
            takes_place=tuple(p for p in arrived if (p.section, p.key) == address),
            brought_in=tuple(p for p in arrived if (p.section, p.key) != address),
            freed=entry_cost(record, self.spec),
            section=_section(self.background, record.section),
            lines=_window(lines),
            line_count=sum(1 for line in lines if line.state != "leaves"),
        )

    def _fold(self, candidate: PlacedRecord, others: tuple[PlacedRecord, ...]) -> _Folded:
        folded, report = apply_memory_overlay(
            self.background, [*others, candidate], self.spec, self.budget, now=self.now
        )
        reason = next((d.reason for d in report.drops if d.memory_id == candidate.id), None)
        return _Folded(folded, reason, _composed_ids(folded))

    def _line(self, entry: BackgroundEntry) -> str:
        # The value's type too: True and 1 are equal keys but draw "true" and "1".
        key = (entry.key, type(entry.value), entry.value, entry.memory_ids)
        line = self.drawn.get(key)
        if line is None:
            line = self.drawn[key] = _line(entry)
        return line

    def _impact(
        self,
        candidate: PlacedRecord,
        others: tuple[PlacedRecord, ...],
        done: _Folded | None = None,
    ) -> Impact:
        result = done or self._fold(candidate, others)
        by_id = self.by_id
        lines = _section_lines(
            _section(self.folded, candidate.section),
            _section(result.folded, candidate.section),
            candidate,
            result.reason,
            result.composed,
            by_id,
            self._line,
        )
        return Impact(
            reason=result.reason,
            needed=entry_cost(candidate, self.spec),
            left=self.budget - self.used,
            budget=self.budget,
            pushed_out=tuple(
                by_id[i] for i in sorted(self.composed - result.composed) if i in by_id
            ),
            brought_in=tuple(
                by_id[i] for i in sorted(result.composed - self.composed) if i in by_id
            ),
            section=_section(self.background, candidate.section),
            lines=_window(lines),
            line_count=sum(1 for line in lines if line.state != "leaves"),
        )


@dataclass(frozen=True)
class Withdrawal:
    """What revoking one approved memory would do to the prompt: the line that leaves,
    what (if anything) takes its place, and what the characters it frees bring back."""

    record: PlacedRecord | None  # the memory as placed (None: it is not approved)
    composed: bool  # its line is in the prompt now
    leaving: str  # that line ("" when it is not in the prompt)
    takes_place: tuple[PlacedRecord, ...]  # out now, at its address once it is revoked
    brought_in: tuple[PlacedRecord, ...]  # out now (over budget), in once it is revoked
    freed: int  # characters of the memory budget its line takes, freed by revoking it
    section: BackgroundSection | None  # its section as declared now
    lines: tuple[PreviewLine | Gap, ...]
    line_count: int  # entry lines of the section once revoked

    def sentences(self, older: str | None = None) -> list[str]:
        """What revoking does, in words. ``older``: the words naming the memory this
        one replaced at the same address, which stays out (superseding is final)."""
        if self.record is None or not self.composed:
            return ["It is not in the prompt now, so the prompt does not change."]
        where = self.section.title if self.section is not None else self.record.section
        said = [f"Its line leaves {where}: {quote_line(self.leaving)}"]
        if self.takes_place:
            names = ", ".join(record_words(p) for p in self.takes_place)
            said.append(f"{names} takes its place at “{self.record.key}”.")
        else:
            said.append(f"Nothing takes its place at “{self.record.key}”.")
        if older is not None:
            said.append(
                f"{older}, which it replaced, does not come back: a replaced memory stays "
                "out of the prompt."
            )
        if self.brought_in:
            names = ", ".join(record_words(p) for p in self.brought_in[:5])
            more = len(self.brought_in) - 5
            tail = f" and {more} more" if more > 0 else ""
            said.append(
                f"The {self.freed:,} characters it frees let {names}{tail} back in "
                "(they were over the memory budget)."
            )
        return said


# Memories are named in a sentence by this many characters of their label and content.
NAME_CHARS = 60


def record_words(record: PlacedRecord) -> str:
    """A memory named in a sentence: “label: content”, on one line, cut."""
    return named(record.label, record.content)


def named(label: str | None, content: str) -> str:
    """The words naming a memory in a sentence: “label: content”, on one line, cut."""
    return quote_line(f"{label}: {content}" if label else content, NAME_CHARS)


def quote_line(text: str, limit: int | None = None) -> str:
    """``text`` on one line in quotes, cut past ``limit`` (a preview line's length)."""
    limit = PREVIEW_LINE_MAX if limit is None else limit
    line = " ".join(collapse(text).split())
    if len(line) > limit:
        line = line[: limit - 1].rstrip() + "…"
    return f"“{line}”"


@dataclass(frozen=True)
class _Folded:
    folded: Background
    reason: DropReason | None  # the candidate's, None when composed
    composed: frozenset[str]


def _composed_ids(background: Background) -> frozenset[str]:
    return frozenset(
        memory_id
        for section in background.sections
        for entry in section.entries
        for memory_id in entry.memory_ids
    )


def _section(background: Background, section_id: str) -> BackgroundSection | None:
    return next((s for s in background.sections if s.id == section_id), None)


# A preview line shows this many code points of its entry, then how many more there are:
# a section of long entries would otherwise be drawn in full on every row of the queue
# (50 rows of 10,000-character lines made a 7 MB page). The row itself shows the whole
# memory; the preview only has to say which lines stay, arrive and leave.
PREVIEW_LINE_MAX = 240


def _line(entry: BackgroundEntry) -> str:
    line = entry_line(entry).rstrip("\n")
    if len(line) <= PREVIEW_LINE_MAX:
        return line
    return f"{line[:PREVIEW_LINE_MAX]}… ({len(line) - PREVIEW_LINE_MAX:,} more characters)"


def _section_lines(
    before: BackgroundSection | None,
    after: BackgroundSection | None,
    candidate: PlacedRecord,
    reason: DropReason | None,
    composed: frozenset[str],
    by_id: dict[str, PlacedRecord],
    line_of: Callable[[BackgroundEntry], str] = _line,
) -> list[PreviewLine]:
    """The section's entry lines once approved, with the lines approving pushes out
    kept in their place (marked ``leaves``)."""
    if after is None:
        return []
    lines: list[PreviewLine] = []
    memory: list[tuple[tuple[float, str], PreviewLine]] = []
    holder = _holder(after, candidate) if reason == "authored-wins" else None
    for entry in after.entries:
        if not entry.memory_ids:
            lines.append(PreviewLine(line_of(entry), "holds" if entry is holder else "authored"))
            continue
        new = candidate.id in entry.memory_ids
        state: LineState = "new" if new else "memory"
        memory.append(
            (
                _order(entry, candidate, by_id),
                PreviewLine(line_of(entry), state, entry.memory_ids[0]),
            )
        )
    for entry in before.entries if before is not None else ():
        if entry.memory_ids and not composed.intersection(entry.memory_ids):
            line = PreviewLine(line_of(entry), "leaves", entry.memory_ids[0])
            memory.append((_order(entry, candidate, by_id), line))
    # Memory entries follow the authored ones, oldest first, as the fold orders them.
    memory.sort(key=lambda item: item[0])
    return lines + [line for _order_key, line in memory]


def _withdrawal_lines(
    before: BackgroundSection | None,
    after: BackgroundSection | None,
    gone: PlacedRecord,
    composed_now: frozenset[str],
    by_id: dict[str, PlacedRecord],
    line_of: Callable[[BackgroundEntry], str],
) -> list[PreviewLine]:
    """The section's entry lines once ``gone`` is revoked: its own line kept in its place
    (``leaves``), the lines that come back marked ``new``."""
    lines: list[PreviewLine] = []
    memory: list[tuple[tuple[float, str], PreviewLine]] = []
    for entry in after.entries if after is not None else ():
        if not entry.memory_ids:
            lines.append(PreviewLine(line_of(entry), "authored"))
            continue
        state: LineState = "memory" if composed_now.issuperset(entry.memory_ids) else "new"
        line = PreviewLine(line_of(entry), state, entry.memory_ids[0])
        memory.append((_order(entry, gone, by_id), line))
    for entry in before.entries if before is not None else ():
        if gone.id in entry.memory_ids:
            line = PreviewLine(line_of(entry), "leaves", gone.id)
            memory.append((_order(entry, gone, by_id), line))
    memory.sort(key=lambda item: item[0])
    return lines + [line for _order_key, line in memory]


def _holder(section: BackgroundSection, candidate: PlacedRecord) -> BackgroundEntry | None:
    """The authored entry that keeps the candidate's key: the same name by the fold's
    own comparison (confusable skeletons, so look-alike keys too)."""
    name = key_skeleton(candidate.key)
    authored = (entry for entry in section.entries if not entry.memory_ids)
    return next((entry for entry in authored if key_skeleton(entry.key) == name), None)


def _order(
    entry: BackgroundEntry, candidate: PlacedRecord, by_id: dict[str, PlacedRecord]
) -> tuple[float, str]:
    """Where a memory entry sits among its section's memory entries: by its newest
    record's (created_at, id), as the fold orders them."""
    known = [
        record
        for memory_id in entry.memory_ids
        if (record := candidate if memory_id == candidate.id else by_id.get(memory_id))
    ]
    if not known:
        return (float("inf"), entry.key)
    newest = max(known, key=lambda r: (r.created_at, r.id))
    return (newest.created_at.timestamp(), newest.id)


def _window(lines: list[PreviewLine]) -> tuple[PreviewLine | Gap, ...]:
    """A long section shortened to the lines that change and their neighbours."""
    if len(lines) <= PREVIEW_WHOLE_UP_TO:
        return tuple(lines)
    marked = [i for i, line in enumerate(lines) if line.state in ("new", "holds", "leaves")]
    keep: set[int] = set()
    for i in marked:
        keep.update(range(i - PREVIEW_CONTEXT, i + PREVIEW_CONTEXT + 1))
    if not marked:
        keep.update(range(PREVIEW_WHOLE_UP_TO))
    shown: list[PreviewLine | Gap] = []
    skipped = 0
    for i, line in enumerate(lines):
        if i in keep:
            if skipped:
                shown.append(Gap(skipped))
                skipped = 0
            shown.append(line)
        else:
            skipped += 1
    if skipped:
        shown.append(Gap(skipped))
    return tuple(shown)
