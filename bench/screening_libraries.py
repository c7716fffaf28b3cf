"""The screen beside two libraries that run locally with no model download, on the same
labelled corpus (``docs/performance.md``, "The screen"): ``python -m
bench.screening_libraries``.

Neither library is a dependency of this project. Each is measured when it happens to be
importable (``pip install clawguard-core==0.4.0 prompt-injection-sanitizer==0.1.1`` in a
separate environment, this project's source on ``PYTHONPATH``), and named as missing
otherwise. Pure: no Django, no database.
"""

from __future__ import annotations

import importlib
import sys
import time
from collections.abc import Callable
from typing import Any

from bench.screening_corpus import corpus
from memory.core.screening import screen

Flags = Callable[[str], bool]


def _ours() -> Flags:
    return lambda text: screen(text).verdict == "instruction"


def _clawguard(module: Any) -> Flags:
    # clawguard-core 0.4.0: 42 regex patterns; a scan's ``detected`` is any finding.
    scanner = module.Scanner()
    return lambda text: bool(scanner.scan(text).detected)


def _sanitizer(module: Any) -> Flags:
    # prompt-injection-sanitizer 0.1.1: regex, typoglycemia and leetspeak; flagged when
    # it detects any pattern.
    return lambda text: bool(module.sanitize(text).detected_patterns)


# (the name shown, the module to import, the package to install, how it flags a text)
LIBRARIES: tuple[tuple[str, str, str, Callable[[Any], Flags]], ...] = (
    ("clawguard-core", "clawguard_core", "clawguard-core==0.4.0", _clawguard),
    (
        "prompt-injection-sanitizer",
        "prompt_injection_sanitizer",
        "prompt-injection-sanitizer==0.1.1",
        _sanitizer,
    ),
)


def _measure(name: str, flags: Flags, facts: list[str], instructions: list[str]) -> None:
    started = time.perf_counter()
    caught = sum(flags(text) for text in instructions)
    held = sum(flags(text) for text in facts)
    per_call = (time.perf_counter() - started) / (len(facts) + len(instructions)) * 1e3
    print(
        f"  {name:<28} instructions caught {caught}/{len(instructions)} = "
        f"{caught / len(instructions):6.1%}   facts held {held}/{len(facts)} = "
        f"{held / len(facts):5.1%}   {per_call:6.2f} ms a call"
    )


def main() -> int:
    facts, instructions = corpus()
    print(
        f"The screen beside local libraries ({len(facts)} facts, {len(instructions)} instructions)"
    )
    _measure("memory/core/screening.py", _ours(), facts, instructions)
    for name, module_name, package, flags_of in LIBRARIES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            print(f"  {name:<28} not importable here: `pip install {package}` to measure it")
            continue
        _measure(name, flags_of(module), facts, instructions)
    return 0


if __name__ == "__main__":
    sys.exit(main())
