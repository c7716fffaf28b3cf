"""An agent's authored configuration: everything a developer declares about it."""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictStr,
    field_validator,
    model_validator,
)

from lens.core.background import Background, describe_same, same_names
from lens.core.context_windows import model_problem
from lens.core.identity import bidi_problem

AGENT_SLUG_PATTERN = r"^[a-z0-9][a-z0-9-]{0,63}$"
_AGENT_SLUG_RE = re.compile(AGENT_SLUG_PATTERN)
NAME_MAX = 200
# Authored prose is bounded only so one field cannot swallow the whole request body.
PROSE_MAX = 100_000


def is_agent_slug(slug: str) -> bool:
    return _AGENT_SLUG_RE.fullmatch(slug) is not None


# --- authored prose: its own lines, but never a `#` or `##` heading ------------------

# The prompt's structure is `##` sections (and `#` above them); prose is rendered with
# its line breaks kept (SPEC §4.1), so a prose line that reads as a `#` or `##` heading
# would forge a section (``"ok\n## Current State"``). Authored `###` and deeper stay
# allowed: they nest inside the section the prose belongs to.
HEADING_SHOWN_MAX = 60  # code points of the offending line quoted in the error
# How many visible characters after the indentation decide whether a line is a
# heading: enough for "## " after NFKC (a compatibility form can expand).
_HEADING_LOOKAHEAD = 8


def heading_level(line: str) -> int | None:
    """The level of the `#` heading ``line`` reads as, or None when it reads as none.

    A Markdown reader takes one to six ``#`` followed by whitespace or the end of the
    line (CommonMark ATX headings). Stricter than CommonMark's "up to 3 spaces" before
    the ``#``: any leading whitespace counts, since the model is not a Markdown parser
    and rendering strips the first line's indentation anyway. Format characters
    (zero-width spaces) are skipped and compatibility forms (fullwidth ``＃``) read as
    what they show. Work is linear in the line's indentation, then bounded.
    """
    visible: list[str] = []
    for char in line:
        if unicodedata.category(char) == "Cf" or (not visible and char.isspace()):
            continue
        visible.append(char)
        if len(visible) == _HEADING_LOOKAHEAD:
            break
    if not visible or (visible[0] != "#" and visible[0].isascii()):
        return None
    head = unicodedata.normalize("NFKC", "".join(visible))
    level = len(head) - len(head.lstrip("#"))
    if level == 0 or (level < len(head) and not head[level].isspace()):
        return None
    # A run longer than the lookahead is deeper than `##` whatever follows.
    return level


def prose_problem(text: str) -> str | None:
    """Why ``text`` cannot be authored prose, or None: the first line (1-based, as
    ``str.splitlines()`` counts them, so every line break Python knows) that reads as a
    `#` or `##` heading, quoted (truncated). Shared with the admin.
    """
    for number, line in enumerate(text.splitlines(), start=1):
        level = heading_level(line)
        if level is not None and level <= 2:
            shown = line if len(line) <= HEADING_SHOWN_MAX else line[:HEADING_SHOWN_MAX] + "…"
            return (
                f"line {number} is a level-{level} heading ({shown!r}): prose may not "
                "start a '#' or '##' heading (those are the prompt's own sections); "
                "use '###' or deeper"
            )
    return None


def _check_prose(text: str) -> str:
    if problem := prose_problem(text):
        raise ValueError(problem)
    return text


def name_problem(name: str, what: str) -> str | None:
    """Why ``name`` cannot be a ``what`` (a field's name), or None. Shared with the admin."""
    return bidi_problem(name, what)


def _check_capability_name(name: str) -> str:
    if problem := name_problem(name, "capability name"):
        raise ValueError(problem)
    return name


def _check_awareness_name(name: str) -> str:
    if problem := name_problem(name, "awareness source name"):
        raise ValueError(problem)
    return name


def _check_model(name: str) -> str:
    if problem := model_problem(name):
        raise ValueError(problem)
    return name


Prose = Annotated[StrictStr, Field(max_length=PROSE_MAX), AfterValidator(_check_prose)]
ModelName = Annotated[StrictStr, AfterValidator(_check_model)]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Capability(_Frozen):
    name: Annotated[
        StrictStr, Field(min_length=1, max_length=NAME_MAX), AfterValidator(_check_capability_name)
    ]
    # Rendered as prose under the capability's `###` heading.
    description: Prose = ""


class AwarenessSource(_Frozen):
    """An information source the agent knows it can consult (rendered in Context)."""

    name: Annotated[
        StrictStr, Field(min_length=1, max_length=NAME_MAX), AfterValidator(_check_awareness_name)
    ]
    # Collapsed onto the source's one line when rendered, so it is not prose.
    description: StrictStr = Field(default="", max_length=PROSE_MAX)
    access_method: StrictStr = Field(default="", max_length=NAME_MAX * 5)


class AgentConfig(_Frozen):
    name: StrictStr = Field(min_length=1, max_length=NAME_MAX)
    persona: Prose = ""
    tone: Prose = ""
    objective: Prose = ""
    capabilities: tuple[Capability, ...] = ()
    manual: Prose = ""
    routing_spec: StrictStr | None = None
    background: Background = Background()
    awareness: tuple[AwarenessSource, ...] = ()
    recall_pinned_candidates: StrictBool = False
    # Four eyes (SPEC §14): a change to a protected agent waits as a proposal until a
    # reviewer other than its proposer publishes it. Rendered nowhere in the prompt.
    protected: StrictBool = False
    # The model the agent mostly runs on (``gpt-4o``): its prompt is shown against that
    # model's context window. Rendered nowhere in the prompt. Any well-formed name is
    # accepted; one whose window is not known gets no figure. Left out of the JSON when
    # unset: a config without a model is written exactly as before the field existed,
    # so every stored config keeps its text and its SHA-256 (the revisions, the audit
    # events naming those hashes and the bundles exported before stay true) and a save
    # that changes nothing still writes nothing.
    model: ModelName | None = Field(default=None, exclude_if=lambda value: value is None)

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
        # Names are one when they render alike (``same_names``): two `### {name}`
        # headings a reader cannot tell apart are a duplicate.
        if found := same_names(c.name for c in self.capabilities):
            raise ValueError(f"duplicate capability name {describe_same(found[0])}")
        if found := same_names(a.name for a in self.awareness):
            raise ValueError(f"duplicate awareness source name {describe_same(found[0])}")
        return self
