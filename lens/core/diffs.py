"""Text diffs shown to people: line diffs of key/value versions, word diffs of memories.

Every diff in the product comes from here, so its cost has one place to be bounded.
"""

from __future__ import annotations

import difflib
from typing import Literal

from lens.core.opcodes import coarse, grouped, opcodes

WordOp = Literal["equal", "delete", "insert"]
LineKind = Literal["file", "hunk", "add", "delete", "context", "note"]
# Lines of unchanged text kept around each change.
CONTEXT = 3


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


def word_diff(old: str, new: str) -> list[tuple[WordOp, str]]:
    """``old`` → ``new`` word by word: runs of equal, deleted and inserted words."""
    # An empty text has no words (str.split(" ") would give one empty word).
    a, b = (old.split(" ") if old else []), (new.split(" ") if new else [])
    parts: list[tuple[WordOp, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            parts.append(("equal", " ".join(a[i1:i2])))
            continue
        if i2 > i1:
            parts.append(("delete", " ".join(a[i1:i2])))
        if j2 > j1:
            parts.append(("insert", " ".join(b[j1:j2])))
    return parts
