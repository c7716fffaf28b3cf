"""Text diffs shown to people: line diffs of key/value versions, word diffs of memories.

Every diff in the product comes from here, so its cost has one place to be bounded.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from lens.core.line_diffs import MAX_ROWS
from lens.core.opcodes import bounded, coarse, grouped, opcodes

WordOp = Literal["equal", "delete", "insert"]
LineKind = Literal["file", "hunk", "add", "delete", "context", "note"]
# Lines of unchanged text kept around each change.
CONTEXT = 3
# Steps one word diff may spend (``lens.core.opcodes``; about 10 ms of pure Python on a
# loaded core). Two memories of 10,000 code points differing everywhere would otherwise
# take minutes; a page of them shares a budget of its own on top (``memory.queue``).
WORD_DIFF_BUDGET = 50_000
# What a page draws of a unified diff: the first lines (as many as a key/value diff's
# rows), and no more than this many characters of them; the rest is counted and the
# whole diff is a download. Two prompts of 540,000 characters made of alternating
# one-letter lines differ in 540,000 diff lines: drawn whole they made a 19 MB page.
PAGE_LINES = MAX_ROWS
PAGE_CHARS = 200_000


def unified_diff(old: str, new: str, old_label: str, new_label: str) -> str:
    """A unified diff with 3 lines of context, as ``difflib.unified_diff`` writes it.

    Bounded (``lens.core.opcodes``): when the shortest script would cost more than the
    step budget, the diff keeps the common head and tail and replaces everything in
    between — still a correct diff, found in linear time.
    """
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    codes = opcodes(a, b)
    lines: list[str] = []
    for group in grouped(codes if codes is not None else coarse(a, b), CONTEXT):
        if not lines:
            lines += [f"--- {old_label}\n", f"+++ {new_label}\n"]
        first, last = group[0], group[-1]
        lines.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [" " + line for line in a[i1:i2]]
                continue
            lines += ["-" + line for line in a[i1:i2]]
            lines += ["+" + line for line in b[j1:j2]]
    # A line without a final newline would glue onto the next diff line.
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


def _range(start: int, stop: int) -> str:
    """A hunk header's range, as difflib writes it ("3" for one line, "2,0" for none)."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start if not length else start + 1},{length}"


def diff_lines(diff: str) -> list[tuple[LineKind, str]]:
    """A unified diff's lines, each with what it is, for colouring."""
    return _kinds(diff.splitlines())


def _kinds(raw: Iterable[str]) -> list[tuple[LineKind, str]]:
    lines: list[tuple[LineKind, str]] = []
    for line in raw:
        if line.startswith(("--- ", "+++ ")) and len(lines) < 2:
            lines.append(("file", line))
        elif line.startswith("@@"):
            lines.append(("hunk", line))
        elif line.startswith("+"):
            lines.append(("add", line))
        elif line.startswith("-"):
            lines.append(("delete", line))
        elif line.startswith("\\"):
            lines.append(("note", line))
        else:
            lines.append(("context", line))
    return lines


@dataclass(frozen=True)
class DiffExcerpt:
    """The first lines of a unified diff, for a page, and how many are left out."""

    lines: list[tuple[LineKind, str]]
    total: int  # lines in the whole diff

    @property
    def more(self) -> int:
        return self.total - len(self.lines)


def diff_excerpt(
    diff: str, max_lines: int = PAGE_LINES, max_chars: int = PAGE_CHARS
) -> DiffExcerpt:
    """The first ``max_lines`` lines of ``diff``, fewer when they would pass
    ``max_chars`` characters (at least one line: a prompt line is bounded by the
    fields it comes from), coloured as ``diff_lines`` colours them.

    Splitting is linear in the diff (one C-level pass); only what is kept is coloured.
    """
    every = diff.splitlines()
    chars = 0
    shown = 0
    for line in every[:max_lines]:
        chars += len(line)
        if shown and chars > max_chars:
            break
        shown += 1
    return DiffExcerpt(lines=_kinds(every[:shown]), total=len(every))


def word_diff(old: str, new: str, budget: list[int] | None = None) -> list[tuple[WordOp, str]]:
    """``old`` → ``new`` word by word: runs of equal, deleted and inserted words.

    Bounded (``lens.core.opcodes``): at most ``WORD_DIFF_BUDGET`` steps, and no more than
    ``budget[0]`` when a budget shared by several diffs is given (spent in place). Small
    texts get difflib's answer, larger ones a shortest script; past the budget the diff
    keeps the common leading and trailing words and shows everything between them as
    deleted, then inserted. Time and memory stay linear in the texts plus the budget.
    """
    # An empty text has no words (str.split(" ") would give one empty word).
    a, b = (old.split(" ") if old else []), (new.split(" ") if new else [])
    allowed = WORD_DIFF_BUDGET if budget is None else min(WORD_DIFF_BUDGET, budget[0])
    codes = None
    if allowed > 0:
        found = bounded(a, b, allowed, autojunk=False)
        codes = found.opcodes
        if budget is not None:
            budget[0] -= found.steps
    return word_parts(a, b, codes if codes is not None else coarse(a, b))


def word_parts(
    a: list[str], b: list[str], codes: Iterable[tuple[str, int, int, int, int]]
) -> list[tuple[WordOp, str]]:
    """Opcodes over the words ``a`` → ``b`` as runs of equal, deleted and inserted text."""
    parts: list[tuple[WordOp, str]] = []
    for op, i1, i2, j1, j2 in codes:
        if op == "equal":
            parts.append(("equal", " ".join(a[i1:i2])))
            continue
        if i2 > i1:
            parts.append(("delete", " ".join(a[i1:i2])))
        if j2 > j1:
            parts.append(("insert", " ".join(b[j1:j2])))
    return parts
