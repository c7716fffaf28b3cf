"""Pure benchmark inputs (no Django), shared by the benchmarks and profiling."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from lens.core.config import AgentConfig

SECTIONS = 40
ENTRIES_PER_SECTION = 50


def big_config() -> AgentConfig:
    return AgentConfig.model_validate(
        {
            "name": "Big agent",
            "persona": "You are a very well-informed agent.",
            "objective": "Answer with everything you know.",
            "capabilities": [{"name": f"tool_{i}", "description": "A tool."} for i in range(10)],
            "manual": "Save memories with labels.",
            "background": {
                "sections": [
                    {
                        "id": f"section_{s}",
                        "title": f"Section {s}",
                        "promotion": "auto" if s % 2 else "guarded",
                        "entries": [
                            {"key": f"key_{s}_{e}", "value": f"value {s}/{e}: " + "lorem " * 8}
                            for e in range(ENTRIES_PER_SECTION)
                        ],
                    }
                    for s in range(SECTIONS)
                ]
            },
        }
    )


# The lens target's memories: most approved, some pending, some rejected, a few declined,
# superseded or beaten by an authored entry; approved ones beyond the budget are dropped.
MEMORIES = 1000
PROFILE_KEY = "known-{}"
MemoryFate = Literal["keep", "approve", "reject", "pending"]


@dataclass(frozen=True)
class PlannedMemory:
    kind: str
    content: str
    label: str
    fate: MemoryFate
    supersedes: int | None = None  # the index of an earlier planned memory


def big_memory_config() -> AgentConfig:
    """``big_config()`` routed by ``user-background``: its first two sections are the
    ones the spec fills (profile memories land in an auto section, preferences in a
    guarded one), so memories mix with 2,000 authored entries.
    """
    config = big_config()
    preset = (
        ("user_profile", "About the User", "auto"),
        ("user_preferences", "Preferences", "guarded"),
    )
    sections = list(config.background.sections)
    for i, (section_id, title, tier) in enumerate(preset):
        sections[i] = sections[i].model_copy(
            update={"id": section_id, "title": title, "promotion": tier}
        )
    # Keys a label can name (labels become keys as slugs), so memories can collide.
    profile = sections[0]
    entries = tuple(
        entry.model_copy(update={"key": PROFILE_KEY.format(e)})
        for e, entry in enumerate(profile.entries)
    )
    sections[0] = profile.model_copy(update={"entries": entries})
    background = config.background.model_copy(update={"sections": tuple(sections)})
    return config.model_copy(
        update={
            "name": "Big agent with memories",
            "routing_spec": "user-background",
            "background": background,
        }
    )


def memory_plan(count: int = MEMORIES) -> list[PlannedMemory]:
    """``count`` memories to save in order, with what becomes of each."""
    plan: list[PlannedMemory] = []
    for i in range(count):
        content = f"Memory {i}: the user mentioned " + "something worth keeping. " * (1 + i % 3)
        match i % 20:
            case 0 if i >= 20:
                # Replaces the profile memory saved 20 before, at its address.
                older = plan[i - 20]
                plan.append(
                    PlannedMemory("profile", content, older.label, "keep", supersedes=i - 20)
                )
            case 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | 0:
                plan.append(PlannedMemory("profile", content, f"m{i}", "keep"))
            case 10 | 11 | 12 | 13:
                plan.append(PlannedMemory("preference", content, f"m{i}", "approve"))
            case 14 | 15:
                plan.append(PlannedMemory("preference", content, f"m{i}", "pending"))
            case 16 | 17:
                plan.append(PlannedMemory("preference", content, f"m{i}", "reject"))
            case 18:
                # The authored entry at this key wins over the memory.
                plan.append(
                    PlannedMemory(
                        "profile",
                        content,
                        PROFILE_KEY.format((i // 20) % ENTRIES_PER_SECTION),
                        "keep",
                    )
                )
            case _:
                plan.append(PlannedMemory("fact", content, f"m{i}", "keep"))  # spec-declined
    return plan


def saver_config() -> AgentConfig:
    """The agent a save is timed on: an auto profile section and a guarded one."""
    return AgentConfig.model_validate(
        {
            "name": "Saver",
            "routing_spec": "user-background",
            "background": {
                "sections": [
                    {"id": "user_profile", "title": "About the User", "promotion": "auto"},
                    {"id": "user_preferences", "title": "Preferences", "promotion": "guarded"},
                ]
            },
        }
    )
