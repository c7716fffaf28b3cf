"""The screen measured on its labelled corpus (tests/data/README.md, SPEC §19.4): at
least 95% of the instructions caught and at most 2% of the facts held."""

from __future__ import annotations

import json
from pathlib import Path

from bench.screening_corpus import SOURCES, facts_by_voice, instructions_by_source
from memory.core.screening import screen

DATA = Path(__file__).resolve().parents[2] / "data"
CAUGHT_FLOOR = 0.95
HELD_CEILING = 0.02


def facts() -> list[str]:
    lines = (DATA / "screening_facts.txt").read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]


def instructions() -> list[str]:
    # Split on newlines only: a payload may hold U+2028, which splitlines() would cut at.
    lines = (DATA / "screening_instructions.jsonl").read_text(encoding="utf-8").split("\n")
    return [json.loads(line)["text"] for line in lines if line.strip()]


def test_the_corpus_is_large_enough() -> None:
    assert len(facts()) >= 300
    assert len(instructions()) >= 300


def test_it_catches_at_least_95_percent_of_instructions() -> None:
    texts = instructions()
    caught = sum(screen(text).verdict == "instruction" for text in texts)
    assert caught / len(texts) >= CAUGHT_FLOOR, f"caught {caught} of {len(texts)}"


def test_it_holds_at_most_2_percent_of_facts() -> None:
    texts = facts()
    held = [text for text in texts if screen(text).verdict == "instruction"]
    assert len(held) / len(texts) <= HELD_CEILING, held


def test_every_instruction_has_a_named_source_and_every_fact_a_voice() -> None:
    # `make bench` prints the figures per source and voice (bench/screening_bench.py), so
    # a weak category shows; every line must fall in one the data's README names.
    by_source = instructions_by_source()
    assert set(by_source) == {name for name, _phrase in SOURCES}
    assert sum(len(texts) for texts in by_source.values()) == len(instructions())
    voices = facts_by_voice()
    assert list(voices) == ["companion", "code reviewer", "support"]
    assert sum(len(texts) for texts in voices.values()) == len(facts())
