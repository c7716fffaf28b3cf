"""An agent's authored configuration: everything a developer declares about it."""

from __future__ import annotations

import re

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictStr,
    field_validator,
    model_validator,
)

from lens.core.background import Background, duplicates

AGENT_SLUG_PATTERN = r"^[a-z0-9][a-z0-9-]{0,63}$"
_AGENT_SLUG_RE = re.compile(AGENT_SLUG_PATTERN)
NAME_MAX = 200
# Authored prose is bounded only so one field cannot swallow the whole request body.
PROSE_MAX = 100_000


def is_agent_slug(slug: str) -> bool:
    return _AGENT_SLUG_RE.fullmatch(slug) is not None


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Capability(_Frozen):
    name: StrictStr = Field(min_length=1, max_length=NAME_MAX)
    description: StrictStr = Field(default="", max_length=PROSE_MAX)


class AwarenessSource(_Frozen):
    """An information source the agent knows it can consult (rendered in Context)."""

    name: StrictStr = Field(min_length=1, max_length=NAME_MAX)
    description: StrictStr = Field(default="", max_length=PROSE_MAX)
    access_method: StrictStr = Field(default="", max_length=NAME_MAX * 5)


class AgentConfig(_Frozen):
    name: StrictStr = Field(min_length=1, max_length=NAME_MAX)
    persona: StrictStr = Field(default="", max_length=PROSE_MAX)
    tone: StrictStr = Field(default="", max_length=PROSE_MAX)
    objective: StrictStr = Field(default="", max_length=PROSE_MAX)
    capabilities: tuple[Capability, ...] = ()
    manual: StrictStr = Field(default="", max_length=PROSE_MAX)
    routing_spec: StrictStr | None = None
    background: Background = Background()
    awareness: tuple[AwarenessSource, ...] = ()
    recall_pinned_candidates: StrictBool = False

    @field_validator("name")
    @classmethod
    def _name_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("name must not be blank")
        return value

    @field_validator("background")
    @classmethod
    def _authored_entries_carry_no_memory(cls, value: Background) -> Background:
        for section in value.sections:
            for entry in section.entries:
                if entry.memory_ids:
                    raise ValueError(
                        f"authored entry {entry.key!r} in section {section.id!r} cannot "
                        "carry memory_ids: only the memory overlay attributes entries"
                    )
        return value

    @model_validator(mode="after")
    def _unique_names(self) -> AgentConfig:
        if dupes := duplicates(c.name for c in self.capabilities):
            raise ValueError(f"duplicate capability name {dupes[0]!r}")
        if dupes := duplicates(a.name for a in self.awareness):
            raise ValueError(f"duplicate awareness source name {dupes[0]!r}")
        return self
