"""A rendered prompt: its sections in order, their joined text and its token count."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from lens.core.fragments import PromptSection, prompt_text
from lens.core.token_counts import ENCODING, token_ids


class Prompt(BaseModel):
    model_config = ConfigDict(frozen=True)

    sections: tuple[PromptSection, ...]

    @property
    def text(self) -> str:
        return prompt_text(self.sections)


class PromptTokens(BaseModel):
    """The whole prompt's token count (SPEC §4.5); each section also has its own."""

    model_config = ConfigDict(frozen=True)

    encoding: Literal["o200k_base"] = ENCODING
    total: int

    @classmethod
    def of(cls, prompt: Prompt) -> PromptTokens:
        # Counted on the joined text: tokens can merge across the section separator,
        # so the total is not always the sum of the sections. The ids are kept: a
        # delivery of this prompt compares them with the next one's (SPEC §17).
        return cls(total=len(token_ids(prompt.text)))
