"""Prompt sections as lists of attributed fragments; the text is always derived."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from lens.core.token_counts import count_tokens

FragmentSource = Literal["authored", "memory"]
SectionSource = Literal["role", "instance"]
SECTION_SEPARATOR = "\n\n"


class PromptFragment(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    source: FragmentSource
    text: str = Field(min_length=1)
    memory_ids: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _ids_iff_memory(self) -> PromptFragment:
        if (self.source == "memory") != bool(self.memory_ids):
            raise ValueError("memory_ids must be non-empty exactly when source is 'memory'")
        return self


class PromptSection(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    source: SectionSource
    fragments: tuple[PromptFragment, ...] = Field(min_length=1)
    # o200k_base tokens of the section's text alone (SPEC §4.5); ``prompt_section()`` counts.
    tokens: int = Field(ge=0)

    @property
    def text(self) -> str:
        # Readers join: there is no stored text that could disagree with the fragments.
        return "".join(fragment.text for fragment in self.fragments)

    @property
    def memory_ids(self) -> tuple[str, ...]:
        return tuple(mid for fragment in self.fragments for mid in fragment.memory_ids)


def prompt_section(
    name: str, source: SectionSource, fragments: tuple[PromptFragment, ...]
) -> PromptSection:
    """A prompt section with its token count."""
    text = "".join(fragment.text for fragment in fragments)
    return PromptSection(name=name, source=source, fragments=fragments, tokens=count_tokens(text))


def authored(text: str) -> PromptFragment:
    return PromptFragment.model_construct(source="authored", text=text, memory_ids=())


def memory(text: str, memory_ids: Iterable[str]) -> PromptFragment:
    return PromptFragment(source="memory", text=text, memory_ids=tuple(memory_ids))


class FragmentBuilder:
    """Accumulates a section's text, coalescing adjacent authored runs into one fragment.

    Only memory-derived lines need their own fragment (they carry ids); merging the
    authored text between them keeps a 2,000-entry authored Background at one
    fragment per section instead of thousands. ``boundary()`` ends the current run, so
    a block of the prompt (a Background section) starts a fragment of its own.
    """

    def __init__(self) -> None:
        self._fragments: list[PromptFragment] = []
        self._authored: list[str] = []

    def authored(self, text: str) -> None:
        if text:
            self._authored.append(text)

    def memory(self, text: str, memory_ids: Iterable[str]) -> None:
        self._flush()
        self._fragments.append(memory(text, memory_ids))

    def boundary(self) -> None:
        """Start a new fragment here: text on either side is never coalesced."""
        self._flush()

    def _flush(self) -> None:
        if self._authored:
            self._fragments.append(authored("".join(self._authored)))
            self._authored = []

    def build(self) -> tuple[PromptFragment, ...]:
        self._flush()
        return tuple(self._fragments)


def prompt_text(sections: Iterable[PromptSection]) -> str:
    return SECTION_SEPARATOR.join(section.text for section in sections)
