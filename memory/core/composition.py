"""The composed view of one agent: its Background, the prompt the fold made of it and
its memories, the routing report and the counts."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from lens.core.background import Background
from lens.core.counts import Counts
from lens.core.prompt import Prompt, PromptTokens
from memory.core.report import RoutingReport


class SpecRef(BaseModel):
    model_config = ConfigDict(frozen=True)

    key: str
    version: str


class Composition(BaseModel):
    model_config = ConfigDict(frozen=True)

    agent: str
    spec: SpecRef | None
    background: Background
    prompt: Prompt
    report: RoutingReport
    counts: Counts
    tokens: PromptTokens
