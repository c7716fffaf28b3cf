"""Pure benchmark inputs (no Django), shared by the benchmarks and profiling."""

from __future__ import annotations

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
