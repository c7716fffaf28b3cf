"""The pure core imports nothing from Django (SPEC §2: pure core, thin shell)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "lens" / "core"
CORE_MODULES = {"text", "background", "config", "fragments", "render", "counts", "composition"}


def core_sources() -> list[Path]:
    return sorted(CORE.glob("*.py"))


def imported_modules(source: str) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def test_importing_the_core_loads_no_django_module() -> None:
    # A fresh interpreter (pytest-django has already imported Django into this one).
    others = sorted(f"lens.core.{p.stem}" for p in core_sources() if p.stem != "__init__")
    probe = (
        "import lens.core.render, lens.core.composition, lens.core.config, lens.core.counts; "
        f"import {', '.join(others)}; "
        "import sys; print([m for m in sys.modules if m.split('.')[0]=='django'])"
    )
    env = {key: value for key, value in os.environ.items() if not key.startswith("DJANGO")}
    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_core_package_holds_the_expected_modules() -> None:
    assert {path.stem for path in core_sources()} >= CORE_MODULES


def test_core_sources_never_import_django() -> None:
    offenders = {
        path.name: [
            name for name in imported_modules(path.read_text()) if name.split(".")[0] == "django"
        ]
        for path in core_sources()
    }
    assert {name: found for name, found in offenders.items() if found} == {}


def test_core_sources_do_not_mention_django_on_any_import_line() -> None:
    # Also catches imports hidden inside functions or behind TYPE_CHECKING.
    for path in core_sources():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            stripped = line.strip()
            if stripped.startswith(("import ", "from ")):
                assert "django" not in stripped.lower(), f"{path.name}:{number}: {stripped}"


def test_core_imports_only_the_stdlib_pydantic_the_core_and_the_pure_report() -> None:
    # lens.core.report is pure (ids and reasons); nothing Django-backed is reachable.
    allowed_first_party = ("lens.core", "lens.core.report")
    for path in core_sources():
        for name in imported_modules(path.read_text()):
            top = name.split(".")[0]
            if top in {"lens", "memory", "kvstore"}:
                assert name.startswith(allowed_first_party), f"{path.name} imports {name}"
            else:
                assert top in sys.stdlib_module_names or top in {"__future__", "pydantic"}, (
                    f"{path.name} imports {name}"
                )
