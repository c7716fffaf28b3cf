"""The pure cores import nothing from Django (SPEC §2: pure core, thin shell).

Every module under ``lens/core``, ``memory/core``, ``kvstore/core`` and ``webhooks/core``
is covered: a new
pure module is checked as soon as it exists.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORES = [ROOT / package / "core" for package in ("lens", "memory", "kvstore", "webhooks")]
CORE_MODULES = {
    "lens.core": {
        "audit_actions",
        "background",
        "cache_prefix",
        "config",
        "context_windows",
        "revisions",
        "counts",
        "diffs",
        "errors",
        "fragments",
        "identity",
        "prompt",
        "render",
        "text",
        "token_prefix",
    },
    "memory.core": {
        "bundle_format",
        "bundle_lines",
        "composition",
        "gzip_splice",
        "outcome",
        "overlay",
        "presets",
        "recall",
        "records",
        "report",
        "routing",
        "stability",
        "tokenizer",
    },
    "kvstore.core": {"keys"},
    "webhooks.core": {"addresses", "schedule", "signing", "topics"},
}


def core_sources() -> list[Path]:
    return sorted(path for core in CORES for path in core.glob("*.py"))


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


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
    every = sorted(module_name(p) for p in core_sources() if p.stem != "__init__")
    probe = (
        f"import {', '.join(every)}; "
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


def test_core_packages_hold_the_expected_modules() -> None:
    for package, expected in CORE_MODULES.items():
        found = {path.stem for path in core_sources() if module_name(path).startswith(package)}
        assert found >= expected, package


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


# Pure libraries a core may use: schemas, the token counter's encoder, ICU's confusable
# skeletons (UTS #39), orjson's JSON writer (a revision's indented config), and the
# Standard Webhooks signer (pure HMAC over the message).
THIRD_PARTY = frozenset(
    {"__future__", "pydantic", "tiktoken", "regex", "icu", "orjson", "standardwebhooks"}
)


def test_cores_import_only_the_stdlib_pydantic_and_cores() -> None:
    for path in core_sources():
        for name in imported_modules(path.read_text()):
            top = name.split(".")[0]
            if top in {"lens", "memory", "kvstore", "webhooks"}:
                assert name.split(".")[1:2] == ["core"], f"{path.name} imports {name}"
            else:
                assert top in sys.stdlib_module_names or top in THIRD_PARTY, (
                    f"{path.name} imports {name}"
                )
