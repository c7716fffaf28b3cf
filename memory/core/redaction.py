"""Redacting a stored composition once a memory of it was erased (SPEC §15). Pure.

A delivered prompt keeps its shape: every line a memory's fragment held reads
``[erased]`` instead, so the lines around it, the sections and the fragment hooks
(``data-memory-ids``) stay where they were. A fragment is the unit: a line that several
memories share (corroboration) is redacted whole as soon as one of them is erased,
since its value may be that memory's words. The Background entries those memories made
leave the composition's JSON altogether. What describes the prompt as it was delivered
stays: its section names, the token counts, the counts and the routing report (ids and
reasons only), and, outside this module, its ``prompt_sha256``.
"""

from __future__ import annotations

from collections.abc import Collection

from lens.core.background import Background, BackgroundSection
from lens.core.fragments import PromptFragment, PromptSection
from lens.core.prompt import Prompt
from memory.core.composition import Composition

ERASED_LINE = "[erased]"


def redacted_text(text: str) -> str:
    """``text`` with each of its lines replaced by ``[erased]``, line breaks kept."""
    lines = text.count("\n")
    tail = "" if text.endswith("\n") else ERASED_LINE
    return f"{ERASED_LINE}\n" * lines + tail


def _holds(memory_ids: Collection[str], erased: Collection[str]) -> bool:
    return any(memory_id in erased for memory_id in memory_ids)


def _fragment(fragment: PromptFragment, erased: Collection[str]) -> PromptFragment:
    if not _holds(fragment.memory_ids, erased):
        return fragment
    return fragment.model_copy(update={"text": redacted_text(fragment.text)})


def _prompt_section(section: PromptSection, erased: Collection[str]) -> PromptSection:
    if not _holds(section.memory_ids, erased):
        return section
    fragments = tuple(_fragment(fragment, erased) for fragment in section.fragments)
    return section.model_copy(update={"fragments": fragments})


def _background_section(section: BackgroundSection, erased: Collection[str]) -> BackgroundSection:
    entries = tuple(entry for entry in section.entries if not _holds(entry.memory_ids, erased))
    if len(entries) == len(section.entries):
        return section
    return section.model_copy(update={"entries": entries})


def holds_any(composition: Composition, erased: Collection[str]) -> bool:
    """Whether any fragment or Background entry of ``composition`` came from ``erased``."""
    return any(
        _holds(section.memory_ids, erased) for section in composition.prompt.sections
    ) or any(
        _holds(entry.memory_ids, erased)
        for section in composition.background.sections
        for entry in section.entries
    )


def redact(composition: Composition, erased: Collection[str]) -> Composition:
    """``composition`` with the fragments of the memories ``erased`` reading ``[erased]``
    and their Background entries gone; everything else as it was."""
    prompt = Prompt(
        sections=tuple(_prompt_section(section, erased) for section in composition.prompt.sections)
    )
    background = Background.model_construct(
        sections=tuple(
            _background_section(section, erased) for section in composition.background.sections
        )
    )
    return composition.model_copy(update={"prompt": prompt, "background": background})
