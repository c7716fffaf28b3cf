"""The routing report: every memory that did not reach the prompt, and why.

Pure: ids and reasons only, never memory content.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

DropReason = Literal[
    "spec-declined",
    "undeclared-section",
    "locked-section",
    "earned-inert",
    "awaiting-approval",
    "rejected",
    "superseded",
    "authored-wins",
    "reconciled",
    "over-budget",
]


class Drop(BaseModel):
    model_config = ConfigDict(frozen=True)

    memory_id: str
    reason: DropReason


class ReportStats(BaseModel):
    model_config = ConfigDict(frozen=True)

    placed: int = 0
    composed: int = 0
    drops_by_reason: dict[str, int] = Field(default_factory=dict)
    chars_used: dict[str, int] = Field(default_factory=lambda: {"background": 0})


class RoutingReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    drops: tuple[Drop, ...] = ()
    stats: ReportStats = ReportStats()
