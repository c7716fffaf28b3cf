"""Text diffs shown to people: line diffs of key/value versions, word diffs of memories.

Every diff in the product comes from here, so its cost has one place to be bounded.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from lens.core.opcodes import bounded, coarse, grouped, opcodes

WordOp = Literal["equal", "delete", "insert"]
LineKind = Literal["file", "hunk", "add", "delete", "context", "note"]
# Lines of unchanged text kept around each change.
CONTEXT = 3
# Steps one word diff may spend (``lens.core.opcodes``; about 10 ms of pure Python on a
# loaded core). Two memories of 10,000 code points differing everywhere would otherwise
# take minutes; a page of them shares a budget of its own on top (``memory.queue``).
WORD_DIFF_BUDGET = 50_000


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
    lines: list[tuple[LineKind, str]] = []
    for line in diff.splitlines():
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
