"""The composed view of one agent: its Background, the prompt the fold made of it and
its memories, the routing report and the counts."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from lens.core.background import Background
from lens.core.counts import Counts, plural
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

    def canonical_json(self) -> str:
        """The one text of a composition: compact JSON, fields in the schema's order
        (lists are ordered and the report's counts sorted, so equal compositions give
        equal text). A stored composition is addressed by the SHA-256 of this text, so
        it never changes for a given composition. pydantic writes it in Rust, three times
        faster than sorting keys with ``json``."""
        return self.model_dump_json()


def counts_words(composition: Composition) -> str:
    """What ``N sections · M entries`` counts, in words, the same on the lens, the agents
    list and the admin: the declared Background sections, and the composed Background's
    entries, authored and from memory (each composed memory is one entry)."""
    counts = composition.counts
    memories = composition.report.stats.composed
    sections = plural(
        counts.sections, "declared Background section", "declared Background sections"
    )
    entries = plural(counts.entries, "entry", "entries")
    authored = max(counts.entries - memories, 0)
    return (
        f"{sections}; the composed Background holds {entries}:"
        f" {authored} authored, {memories} from memory"
    )
