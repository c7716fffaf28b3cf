"""Opcodes between two sequences with a known worst case: what every diff is built on.

difflib's ``SequenceMatcher`` has no useful worst case: two 9,000-line texts made of 100
repeated lines kept it busy for seconds, and its cost grows with the number of equal
pairs times the depth of its recursion. Here every comparison has a budget of steps,
so its time and memory are bounded whatever the input:

- When difflib's own worst case for the input fits the budget (small or dissimilar
  texts), difflib answers, so its familiar output is kept.
- Otherwise the common head and tail are set aside (linear), elements become integers,
  and Myers' shortest edit script runs on the middle, one step per diagonal visited or
  element compared. It stops as soon as the budget (or, as a safety net, a deadline) is
  spent, and then answers None: the caller says "too large" or falls back to
  ``coarse``, which is linear.

Time is O(budget + n + m); memory is O(budget + n + m) (Myers keeps one short row per
edit distance step to walk back, d entries for step d, and d²/2 ≤ budget). A search
overshoots its budget by at most one snake (min(n, m) steps).
"""

from __future__ import annotations

import difflib
import time
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

Tag = Literal["equal", "replace", "delete", "insert"]
Opcode = tuple[Tag, int, int, int, int]

# About 0.05 s of pure Python on a quiet small server core, 0.2 s on a loaded one.
STEP_BUDGET = 200_000
# A safety net under the budget: a loaded machine still answers within about this.
DEADLINE_SECONDS = 0.5


def opcodes(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    budget: int = STEP_BUDGET,
    *,
    autojunk: bool = True,
    deadline: float = DEADLINE_SECONDS,
) -> list[Opcode] | None:
    """difflib-style opcodes turning ``a`` into ``b``, or None when finding them would
    take more than ``budget`` steps (or ``deadline`` seconds).
    """
    return bounded(a, b, budget, autojunk=autojunk, deadline=deadline).opcodes


# What one of difflib's inner-loop steps (as ``difflib_worst_case`` counts them) is
# charged in Myers steps: it costs about a fiftieth of one (a C-level dict probe against
# a Python loop iteration), so charging a tenth overstates it.
DIFFLIB_STEPS_PER_STEP = 10


def bounded(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    budget: int = STEP_BUDGET,
    *,
    autojunk: bool = True,
    deadline: float = DEADLINE_SECONDS,
) -> Script:
    """``opcodes``, with what finding them cost in steps: for callers sharing one budget.

    difflib's share is charged at its worst case (``DIFFLIB_STEPS_PER_STEP`` of its steps
    to one), so the charge never depends on how lucky the input was.
    """
    n, m = len(a), len(b)
    if n == m and a == b:
        return Script([("equal", 0, n, 0, m)] if n else [], n)
    # The pairs term needs a pass over both sides with a Counter: skip it when the rest
    # of the bound is already over (a megabyte against a paragraph).
    if (min(n, m) + 1) * (2 * n + m) <= budget:
        worst = difflib_worst_case(a, b, autojunk=autojunk)
        if worst <= budget:
            codes = list(difflib.SequenceMatcher(a=a, b=b, autojunk=autojunk).get_opcodes())
            return Script(codes, n + m + worst // DIFFLIB_STEPS_PER_STEP)
    return edit_script(a, b, budget, deadline=deadline)


@dataclass(frozen=True)
class Script:
    opcodes: list[Opcode] | None  # None: over budget
    steps: int  # spent finding it (the middle's setup included)


def shortest(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    budget: int = STEP_BUDGET,
    *,
    deadline: float = DEADLINE_SECONDS,
) -> list[Opcode] | None:
    """Opcodes of a shortest edit script from ``a`` to ``b`` (Myers), or None past
    ``budget`` steps or ``deadline`` seconds.
    """
    return edit_script(a, b, budget, deadline=deadline).opcodes


def edit_script(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    budget: int = STEP_BUDGET,
    *,
    deadline: float = DEADLINE_SECONDS,
) -> Script:
    """``shortest``, with the steps it spent: for callers sharing one budget."""
    n, m = len(a), len(b)
    head, tail = common_ends(a, b)
    ids: dict[Hashable, int] = {}
    xs = [ids.setdefault(item, len(ids)) for item in a[head : n - tail]]
    shared = len(ids)
    ys = [ids.setdefault(item, len(ids)) for item in b[head : m - tail]]
    steps = len(xs) + len(ys)
    blocks: list[tuple[int, int, int]] = []
    # Nothing in common in the middle: one replacement, no search needed.
    if any(y < shared for y in ys):
        found, spent = _myers(xs, ys, budget, time.monotonic() + deadline)
        steps += spent
        if found is None:
            return Script(None, steps)
        blocks = [(i + head, j + head, size) for i, j, size in found]
    return Script(_from_blocks([(0, 0, head), *blocks, (n - tail, m - tail, tail)], n, m), steps)


def coarse(a: Sequence[Hashable], b: Sequence[Hashable]) -> list[Opcode]:
    """A correct but not minimal script, in linear time: keep the common head and tail,
    replace everything between them. What an over-budget comparison falls back to when
    an answer must still be given.
    """
    n, m = len(a), len(b)
    head, tail = common_ends(a, b)
    return _from_blocks([(0, 0, head), (n - tail, m - tail, tail)], n, m)


# common_ends compares this many elements at a time (one C-level slice comparison)
# before looking for the first difference one by one.
_RUN = 256


def common_ends(a: Sequence[Hashable], b: Sequence[Hashable]) -> tuple[int, int]:
    """How many leading and trailing elements ``a`` and ``b`` share (never overlapping)."""
    n, m = len(a), len(b)
    limit = min(n, m)
    head = 0
    while head < limit:
        end = min(head + _RUN, limit)
        if a[head:end] != b[head:end]:
            while a[head] == b[head]:  # stops before end: they differ in this run
                head += 1
            break
        head = end
    limit -= head
    tail = 0
    while tail < limit:
        run = min(_RUN, limit - tail)
        if a[n - tail - run : n - tail] != b[m - tail - run : m - tail]:
            while a[n - 1 - tail] == b[m - 1 - tail]:
                tail += 1
            break
        tail += run
    return head, tail


def difflib_worst_case(
    a: Sequence[Hashable], b: Sequence[Hashable], *, autojunk: bool = True
) -> int:
    """An upper bound on the inner-loop steps of ``difflib.SequenceMatcher(a=a, b=b)``.

    One ``find_longest_match`` over a[alo:ahi] visits each i once and, for each, the
    positions of a[i] in b (popular elements excluded under autojunk), then extends the
    match through at most both ranges. Calls at one depth of its recursion cover
    disjoint ranges, and each level below the first needs a match above it, so there
    are at most min(n, m) + 1 levels.
    """
    n, m = len(a), len(b)
    counts = Counter(b)
    if autojunk and m >= 200:
        popular = m // 100 + 1
        pairs = sum(counts[item] for item in a if counts[item] <= popular)
    else:
        pairs = sum(counts[item] for item in a)
    return (min(n, m) + 1) * (2 * n + m + pairs)


def grouped(codes: list[Opcode], context: int) -> list[list[Opcode]]:
    """Opcodes in hunks: each change with up to ``context`` equal lines around it, hunks
    whose context would touch merged (``SequenceMatcher.get_grouped_opcodes``).
    """
    if not codes:
        codes = [("equal", 0, 1, 0, 1)]
    codes = list(codes)
    if codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = tag, max(i1, i2 - context), i2, max(j1, j2 - context), j2
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)
    groups: list[list[Opcode]] = []
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > 2 * context:
            group.append((tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)))
            groups.append(group)
            group = []
            i1, j1 = max(i1, i2 - context), max(j1, j2 - context)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        groups.append(group)
    return groups


def _myers(
    xs: list[int], ys: list[int], budget: int, deadline: float
) -> tuple[list[tuple[int, int, int]] | None, int]:
    """The matching blocks (i, j, size) of a shortest edit script from ``xs`` to ``ys``,
    in order, or None once ``budget`` steps or the deadline are spent.

    E. W. Myers, "An O(ND) difference algorithm and its variations" (1986): for each
    edit distance d, the furthest point reached on each diagonal k = x - y.
    """
    n, m = len(xs), len(ys)
    offset = n + m + 1
    reach = [0] * (2 * offset + 1)
    # trail[d] holds reach[k] for k = -d+1, -d+3, …, d-1 as it was before step d: all
    # that walking back from step d reads.
    trail: list[list[int]] = []
    steps = 0
    for d in range(n + m + 1):
        low, high = offset - d, offset + d  # diagonals -d and d, as indexes into reach
        trail.append(reach[low + 1 : high : 2])
        for index in range(low, high + 1, 2):
            if index == low or (index != high and reach[index - 1] < reach[index + 1]):
                x = reach[index + 1]  # down: an element of ys inserted
            else:
                x = reach[index - 1] + 1  # right: an element of xs deleted
            y = x - index + offset
            start = x
            while x < n and y < m and xs[x] == ys[y]:
                x += 1
                y += 1
            steps += x - start + 1
            reach[index] = x
            if x >= n and y >= m:
                return _walk_back(trail, d, n, m), steps
            if steps > budget:  # checked per diagonal: one snake is the most it overshoots
                return None, steps
        if time.monotonic() > deadline:
            return None, steps
    raise AssertionError("unreachable: an edit script of length n + m always exists")


def _walk_back(trail: list[list[int]], distance: int, n: int, m: int) -> list[tuple[int, int, int]]:
    blocks: list[tuple[int, int, int]] = []
    x, y = n, m
    for d in range(distance, 0, -1):
        before = trail[d]  # reach[k'] for k' = -d+1 … d-1, step 2

        def at(k: int, before: list[int] = before, d: int = d) -> int:
            return before[(k + d - 1) // 2]

        k = x - y
        if k == -d or (k != d and at(k - 1) < at(k + 1)):
            previous_k = k + 1
            from_x = at(previous_k)
            start_x = from_x  # the down step keeps x
        else:
            previous_k = k - 1
            from_x = at(previous_k)
            start_x = from_x + 1
        if x > start_x:
            blocks.append((start_x, start_x - k, x - start_x))
        x, y = from_x, from_x - previous_k
    if x > 0:
        blocks.append((0, 0, x))
    blocks.reverse()
    return blocks


def _from_blocks(matches: list[tuple[int, int, int]], n: int, m: int) -> list[Opcode]:
    """Opcodes from increasing matching blocks (empty ones are skipped, touching ones merge)."""
    merged: list[list[int]] = []
    for i, j, size in matches:
        if not size:
            continue
        if merged and merged[-1][0] + merged[-1][2] == i and merged[-1][1] + merged[-1][2] == j:
            merged[-1][2] += size
        else:
            merged.append([i, j, size])
    codes: list[Opcode] = []
    i = j = 0
    for bi, bj, size in [*merged, [n, m, 0]]:
        if i < bi and j < bj:
            codes.append(("replace", i, bi, j, bj))
        elif i < bi:
            codes.append(("delete", i, bi, j, bj))
        elif j < bj:
            codes.append(("insert", i, bi, j, bj))
        if size:
            codes.append(("equal", bi, bi + size, bj, bj + size))
        i, j = bi + size, bj + size
    return codes
