"""Redacting a stored composition (SPEC §15): the erased memories' lines read
``[erased]``, nothing else of the prompt moves. Pure."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lens.core.background import Background, BackgroundEntry, BackgroundSection
from lens.core.config import AgentConfig
from lens.core.counts import Counts
from lens.core.prompt import Prompt, PromptTokens
from lens.core.render import render_sections
from memory.core.composition import Composition
from memory.core.redaction import ERASED_LINE, holds_any, redact, redacted_text
from memory.core.report import Drop, RoutingReport

AUTHORED = Background(
    sections=(
        BackgroundSection(
            id="about",
            title="About",
            promotion="auto",
            entries=(BackgroundEntry(key="timezone", value="Europe/Warsaw"),),
        ),
    )
)


def composition(*entries: BackgroundEntry) -> Composition:
    """The authored Background with ``entries`` composed into its one section."""
    section = AUTHORED.sections[0]
    composed = Background(
        sections=(section.model_copy(update={"entries": (*section.entries, *entries)}),)
    )
    config = AgentConfig(name="Wren", persona="You are Wren.", background=AUTHORED)
    prompt = Prompt(sections=render_sections(config, composed))
    return Composition(
        agent="wren",
        spec=None,
        background=composed,
        prompt=prompt,
        report=RoutingReport(drops=(Drop(memory_id="m9", reason="rejected"),)),
        counts=Counts.of(AUTHORED, composed),
        tokens=PromptTokens.of(prompt),
    )


def entry(key: str, value: str, *memory_ids: str) -> BackgroundEntry:
    return BackgroundEntry(key=key, value=value, memory_ids=memory_ids)


def test_each_line_reads_erased_and_line_breaks_stay() -> None:
    assert redacted_text("- **name**: Mira\n") == "[erased]\n"
    assert redacted_text("a\nb\n") == "[erased]\n[erased]\n"
    assert redacted_text("no newline") == ERASED_LINE
    assert redacted_text("a\nb") == "[erased]\n[erased]"


@given(st.text(min_size=1))
def test_a_redacted_text_has_as_many_lines_and_nothing_of_the_text(text: str) -> None:
    redacted = redacted_text(text)
    assert redacted.count("\n") == text.count("\n")
    assert set(redacted.replace("\n", "")) <= set(ERASED_LINE)


def test_only_the_erased_memorys_line_and_entry_change() -> None:
    before = composition(entry("name", "Mira Kowalska", "m1"), entry("pet", "A cat", "m2"))
    after = redact(before, {"m1"})

    assert holds_any(before, {"m1"})
    assert not holds_any(before, {"m7"})
    old_lines = before.prompt.text.split("\n")
    new_lines = after.prompt.text.split("\n")
    assert len(new_lines) == len(old_lines)
    changed = [(o, n) for o, n in zip(old_lines, new_lines, strict=True) if o != n]
    assert changed == [("- **name**: Mira Kowalska", ERASED_LINE)]
    fragments = [f for s in after.prompt.sections for f in s.fragments]
    erased = [f for f in fragments if "m1" in f.memory_ids]
    assert [(f.source, f.text, f.memory_ids) for f in erased] == [("memory", "[erased]\n", ("m1",))]
    keys = [e.key for s in after.background.sections for e in s.entries]
    assert keys == ["timezone", "pet"]
    # What describes the prompt as delivered stays.
    assert after.tokens == before.tokens
    assert after.counts == before.counts
    assert after.report == before.report
    assert [s.tokens for s in after.prompt.sections] == [s.tokens for s in before.prompt.sections]
    assert "Mira" not in after.model_dump_json()


def test_a_line_two_memories_share_is_redacted_whole() -> None:
    before = composition(entry("name", "Mira", "m1", "m2"))
    after = redact(before, {"m2"})
    assert "Mira" not in after.model_dump_json()
    assert after.prompt.text.count(ERASED_LINE) == 1


def test_the_redacted_json_reads_back_as_a_composition() -> None:
    after = redact(composition(entry("name", "Mira", "m1"), entry("nick", "M", "m1")), {"m1"})
    again = Composition.model_validate_json(after.model_dump_json())
    assert again == after
    assert again.prompt.text.count(ERASED_LINE) == 2


def test_nothing_to_redact_leaves_it_equal() -> None:
    before = composition(entry("name", "Mira", "m1"))
    assert redact(before, {"m5"}) == before
