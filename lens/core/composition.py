"""The composed view of one agent: Background, prompt sections, report and counts."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from lens.core.background import Background
from lens.core.counts import Counts
from lens.core.fragments import PromptSection, prompt_text
from lens.core.report import RoutingReport


class SpecRef(BaseModel):
    model_config = ConfigDict(frozen=True)

    key: str
    version: str


class Prompt(BaseModel):
    model_config = ConfigDict(frozen=True)

    sections: tuple[PromptSection, ...]

    @property
    def text(self) -> str:
        return prompt_text(self.sections)


class Composition(BaseModel):
    model_config = ConfigDict(frozen=True)

    agent: str
    spec: SpecRef | None
    background: Background
    prompt: Prompt
    report: RoutingReport
    counts: Counts
