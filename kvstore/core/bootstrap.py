"""The bootstrap read's budget (SPEC §7.1), pure: which ``must`` keys fit.

``root`` is always included and counted; the ``must`` keys are walked in key order,
each one included when it still fits and named in ``omitted`` when it does not (skip
and continue), so a client never mistakes a partial tier for a complete one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

BOOTSTRAP_BUDGET = 40_000
ROOT_KEY = "root"
MUST_PREFIX = "must."
REF_PREFIX = "ref."


@dataclass(frozen=True)
class Selection:
    included: tuple[str, ...]
    omitted: tuple[str, ...]
    used: int


def select_must(
    root_runes: int, must: Iterable[tuple[str, int]], budget: int = BOOTSTRAP_BUDGET
) -> Selection:
    """``must`` is ``(key, runes)`` in key order; ``used`` never exceeds ``budget``
    unless ``root`` alone does (it cannot: a payload is at most 36,000 code points)."""
    used = root_runes
    included: list[str] = []
    omitted: list[str] = []
    for key, size in must:
        if used + size <= budget:
            included.append(key)
            used += size
        else:
            omitted.append(key)
    return Selection(included=tuple(included), omitted=tuple(omitted), used=used)
