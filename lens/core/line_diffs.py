"""Line diffs shown to people: numbered rows, changed words marked inside changed lines,
and a plain sentence when there is nothing to draw.

Every cost here is bounded (``lens.core.opcodes``): the line comparison by its step
budget, the rows drawn by ``MAX_ROWS``, and the word marks by a budget per line pair and
one per diff. Past a bound the answer says so (``too_large``) or leaves words unmarked;
it never runs long.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from lens.core.opcodes import (
    STEP_BUDGET,
    Opcode,
    coarse,
    edit_script,
    grouped,
    opcodes,
)

RowKind = Literal["context", "add", "delete", "gap"]
PartKind = Literal["same", "changed"]
Verdict = Literal["same", "newline_only", "changed", "too_large"]
Parts = tuple[tuple[PartKind, str], ...]

CONTEXT = 3
# More rows than this are no longer read on a page; download both versions instead.
MAX_ROWS = 2_000
# Words are marked inside a changed line pair only within these budgets (steps).
PAIR_BUDGET = 20_000
WORD_BUDGET = 100_000
# What every marked pair is charged at least (its setup), so WORD_BUDGET also caps how
# many pairs are compared: at most WORD_BUDGET / PAIR_SETUP.
PAIR_SETUP = 100
# A pair whose lines share less than this share of their text is shown as whole lines:
# marking nearly every word tells the reader nothing.
SIMILAR_ENOUGH = 0.4
# A word, a run of spaces, or one other character.
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")


@dataclass(frozen=True)
class Row:
    kind: RowKind
    old_number: int | None = None
    new_number: int | None = None
    # The line's text in pieces; "changed" pieces are the words that differ from its pair.
    parts: Parts = ()
    skipped: int = 0  # a gap: unchanged lines not shown

    @property
    def text(self) -> str:
        return "".join(text for _kind, text in self.parts)


@dataclass(frozen=True)
class LineDiff:
    verdict: Verdict
    rows: tuple[Row, ...]
    added: int
    removed: int
    old_lines: int
    new_lines: int
    old_final_newline: bool
    new_final_newline: bool

    @property
    def final_newline_differs(self) -> bool:
        return self.old_final_newline != self.new_final_newline


def split_lines(text: str) -> tuple[list[str], bool]:
    """``text``'s lines (split on "\\n" only) and whether it ends with a newline.

    The final newline is kept apart so that it is never shown as a changed last line.
    """
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
        return lines, bool(lines)
    return lines, False


def line_diff(
    old: str,
    new: str,
    *,
    context: int = CONTEXT,
    budget: int = STEP_BUDGET,
    max_rows: int = MAX_ROWS,
    word_budget: int = WORD_BUDGET,
) -> LineDiff:
    """``old`` → ``new`` as rows to draw, or a verdict that needs no rows."""
    a, a_newline = split_lines(old)
    b, b_newline = split_lines(new)

    def answer(verdict: Verdict, rows: list[Row], added: int = 0, removed: int = 0) -> LineDiff:
        return LineDiff(verdict, tuple(rows), added, removed, len(a), len(b), a_newline, b_newline)

    if a == b:
        return answer("same" if a_newline == b_newline else "newline_only", [])
    codes = opcodes(a, b, budget)
    if codes is None:
        return answer("too_large", [])
    added = sum(j2 - j1 for tag, _i1, _i2, j1, j2 in codes if tag != "equal")
    removed = sum(i2 - i1 for tag, i1, i2, _j1, _j2 in codes if tag != "equal")
    rows = _rows(a, b, codes, context, max_rows, [word_budget])
    if rows is None:
        return answer("too_large", [], added, removed)
    return answer("changed", rows, added, removed)


def _rows(
    a: list[str],
    b: list[str],
    codes: list[Opcode],
    context: int,
    max_rows: int,
    word_budget: list[int],
) -> list[Row] | None:
    rows: list[Row] = []
    shown_to = 0  # old lines before this one are shown or counted in a gap
    for group in grouped(codes, context):
        start = group[0][1]
        if start > shown_to:
            rows.append(Row("gap", skipped=start - shown_to))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                rows += [
                    Row("context", i + 1, j + 1, (("same", a[i]),))
                    for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
                ]
            elif len(rows) + (i2 - i1) + (j2 - j1) > max_rows:
                return None  # checked before the rows are built: they would not be shown
            else:
                rows += _changed(a, b, i1, i2, j1, j2, word_budget)
            if len(rows) > max_rows:
                return None
        shown_to = group[-1][2]
    if shown_to < len(a):
        rows.append(Row("gap", skipped=len(a) - shown_to))
    return rows


def _changed(
    a: list[str], b: list[str], i1: int, i2: int, j1: int, j2: int, word_budget: list[int]
) -> list[Row]:
    """A changed block: its old lines, then its new ones, words marked in line pairs."""
    olds: list[Parts] = [(("same", a[i]),) for i in range(i1, i2)]
    news: list[Parts] = [(("same", b[j]),) for j in range(j1, j2)]
    # Lines pair up in order, as far as both sides go (as code review tools do).
    for k in range(min(i2 - i1, j2 - j1)):
        marked = changed_words(a[i1 + k], b[j1 + k], word_budget)
        if marked is not None:
            olds[k], news[k] = marked
    rows = [Row("delete", i1 + k + 1, None, parts) for k, parts in enumerate(olds)]
    rows += [Row("add", None, j1 + k + 1, parts) for k, parts in enumerate(news)]
    return rows


def changed_words(old: str, new: str, budget: list[int]) -> tuple[Parts, Parts] | None:
    """The two lines in pieces with the words that differ marked, or None when they are
    too different to mark usefully or the budget (a one-item list, spent in place) is out.
    """
    if not old or not new or budget[0] <= 0:
        return None
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    found = edit_script(a, b, min(PAIR_BUDGET, budget[0]))
    # Every pair costs its setup too, however short: at most WORD_BUDGET / PAIR_SETUP pairs.
    budget[0] -= max(found.steps, PAIR_SETUP)
    if found.opcodes is None:
        return None
    same = sum(
        sum(len(token) for token in a[i1:i2])
        for tag, i1, i2, _j1, _j2 in found.opcodes
        if tag == "equal"
    )
    if same < SIMILAR_ENOUGH * max(len(old), len(new)):
        return None
    old_parts: list[tuple[PartKind, str]] = []
    new_parts: list[tuple[PartKind, str]] = []
    for tag, i1, i2, j1, j2 in found.opcodes:
        kind: PartKind = "same" if tag == "equal" else "changed"
        _append(old_parts, kind, "".join(a[i1:i2]))
        _append(new_parts, kind, "".join(b[j1:j2]))
    return tuple(old_parts), tuple(new_parts)


def _append(parts: list[tuple[PartKind, str]], kind: PartKind, text: str) -> None:
    if not text:
        return
    if parts and parts[-1][0] == kind:
        parts[-1] = (kind, parts[-1][1] + text)
    else:
        parts.append((kind, text))


@dataclass(frozen=True)
class Change:
    """What one version changed compared with the one before: the history's preview."""

    added: int
    removed: int
    # The first line it added (or, when it only removed, the first line it removed).
    first: str
    first_removed: bool
    newline_only: bool
    # The counts come from the linear fallback (an upper bound), not a shortest script.
    approximate: bool


def change(old: str, new: str, budget: list[int], first_max: int = 120) -> Change:
    """A bounded summary of ``old`` → ``new``: lines added and removed and the first one
    changed. Spends at most about ``budget[0]`` steps (taken from it in place); past
    that, the counts are those of keeping the common head and tail and replacing the
    rest (an upper bound).
    """
    a, a_newline = split_lines(old)
    b, b_newline = split_lines(new)
    if a == b:
        return Change(0, 0, "", False, a_newline != b_newline, False)
    found = edit_script(a, b, budget[0]) if budget[0] > 0 else None
    if found is not None:
        budget[0] -= found.steps
    codes = found.opcodes if found is not None else None
    approximate = codes is None
    if codes is None:
        codes = coarse(a, b)
    changed = [code for code in codes if code[0] != "equal"]
    added = sum(j2 - j1 for _tag, _i1, _i2, j1, j2 in changed)
    removed = sum(i2 - i1 for _tag, i1, i2, _j1, _j2 in changed)
    first_added = next((b[j1] for _tag, _i1, _i2, j1, j2 in changed if j2 > j1), None)
    if first_added is not None:
        return Change(added, removed, first_added[:first_max], False, False, approximate)
    first_removed = a[changed[0][1]]
    return Change(added, removed, first_removed[:first_max], True, False, approximate)
