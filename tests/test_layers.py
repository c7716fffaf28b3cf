"""Imports point inward only (SPEC §2, docs/architecture.md), read from the folders alone:

    web, demo  →  webhooks  →  memory, kvstore  →  lens (the base)  →  */core (pure)

- ``web/`` is the outer layer: nothing outside it imports it. ``demo/`` (the demo's data
  and ``seed_demo``) sits beside it: it imports what ``web`` may but ``web`` itself, and
  nothing imports it.
- ``memory/`` and ``kvstore/`` import their own package, ``lens``'s base and the cores
  (``lens/core`` and their own), never each other.
- ``webhooks/`` (events out) sits above them: it may import ``memory`` (it composes
  prompts for ``prompt.changed``), ``lens`` and the cores; only ``web`` imports it.
- ``lens/`` outside ``core/`` is the base (settings, serving, teams, tokens, agents,
  revisions, audit): it imports itself and ``lens/core``, never a package above it.
- A core imports only cores: ``lens/core``, and its own package's.

Every import counts, wherever it is in a file: top level, inside a function, or behind
``TYPE_CHECKING``. No module names the same thing twice either, unless one of the two is
the other's pure half: ``pkg/x.py`` and ``pkg/core/x.py`` of one package.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("lens", "memory", "kvstore", "webhooks", "web", "demo")

# What each layer may import. A core's layer names its package: ``core:memory``.
ALLOWED: dict[str, frozenset[str]] = {
    "core:lens": frozenset({"core:lens"}),
    "core:memory": frozenset({"core:lens", "core:memory"}),
    "core:kvstore": frozenset({"core:lens", "core:kvstore"}),
    "lens": frozenset({"lens", "core:lens"}),
    "memory": frozenset({"memory", "lens", "core:lens", "core:memory"}),
    "kvstore": frozenset({"kvstore", "lens", "core:lens", "core:kvstore"}),
    "core:webhooks": frozenset({"core:lens", "core:webhooks"}),
    "webhooks": frozenset(
        {"webhooks", "memory", "lens", "core:lens", "core:memory", "core:webhooks"}
    ),
    # The demo's data beside the product: it writes through the product's operations,
    # and no product module imports it.
    "demo": frozenset(
        {
            "demo",
            "webhooks",
            "memory",
            "kvstore",
            "lens",
            "core:lens",
            "core:memory",
            "core:kvstore",
            "core:webhooks",
        }
    ),
    "web": frozenset(
        {
            "web",
            "webhooks",
            "memory",
            "kvstore",
            "lens",
            "core:lens",
            "core:memory",
            "core:kvstore",
            "core:webhooks",
        }
    ),
}

# Names Django gives every app or project, and ``core``, the pure layer's folder in each
# package; the command files are named by their command, which is a contract (SPEC §10).
CONVENTIONAL = frozenset(
    {"apps", "models", "urls", "settings", "wsgi", "asgi", "core", "management"}
)


def layer_of(parts: tuple[str, ...]) -> str:
    """The layer of a module, from its path's folders (``("memory", "core", "x")``)."""
    if len(parts) > 1 and parts[1] == "core":
        return f"core:{parts[0]}"
    return parts[0]


def modules(root: Path) -> dict[str, Path]:
    """Every module of the three packages by dotted name (migrations left out: they are
    generated and name apps by string)."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root).with_suffix("")
            if "migrations" in relative.parts:
                continue
            parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
            found[".".join(parts)] = path
    return found


def imports_of(path: Path, module: str) -> list[str]:
    """The first-party names a file imports, relative imports resolved."""
    names: list[str] = []
    package = module.split(".")[: -1 if path.name != "__init__.py" else None]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            # `from memory import saving` imports the module memory.saving.
            names.extend(f"{target}.{alias.name}" for alias in node.names)
    return [name for name in names if name.split(".")[0] in PACKAGES]


def target_parts(name: str, known: dict[str, Path]) -> tuple[str, ...]:
    """The deepest module an imported name refers to (a name may end in a function)."""
    parts = name.split(".")
    while len(parts) > 1 and ".".join(parts) not in known:
        parts.pop()
    return tuple(parts)


def violations(root: Path) -> list[str]:
    """Every import that points outward or sideways, as ``importer -> imported``."""
    known = modules(root)
    found = []
    for module, path in known.items():
        layer = layer_of(tuple(module.split(".")))
        for name in imports_of(path, module):
            target = layer_of(target_parts(name, known))
            if target not in ALLOWED[layer]:
                found.append(f"{module} ({layer}) -> {name} ({target})")
    return found


def shared_names(root: Path) -> dict[str, list[str]]:
    """Module names held by more than one module, beyond a module and its pure half."""
    by_name: dict[str, list[str]] = defaultdict(list)
    for module in modules(root):
        parts = module.split(".")
        if parts[-1] in CONVENTIONAL or "commands" in parts:
            continue
        by_name[parts[-1]].append(module)
    return {
        name: holders
        for name, holders in by_name.items()
        if len(holders) > 1 and not _pure_pair(holders)
    }


def _pure_pair(holders: list[str]) -> bool:
    """``pkg.x`` and ``pkg.core.x`` of one package: a module and its pure half. Two
    modules of different packages, or of one package's other folders, that share a name
    hold different things under one word."""
    if len(holders) != 2:
        return False
    shell, core = sorted(holders, key=lambda m: ".core." in f"{m}.")
    package, _, name = shell.rpartition(".")
    return "." not in package and core == f"{package}.core.{name}"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("lens/core/render.py", "core:lens"),
        ("memory/core/overlay.py", "core:memory"),
        ("kvstore/core/keys.py", "core:kvstore"),
        ("lens/models.py", "lens"),
        ("lens/agents.py", "lens"),
        ("lens/serving/middleware.py", "lens"),
        ("lens/serving/throttle.py", "lens"),
        ("lens/serving/health.py", "lens"),
        ("lens/settings.py", "lens"),
        ("memory/saving.py", "memory"),
        ("memory/deliveries/ledger.py", "memory"),
        ("demo/sessions.py", "demo"),
        ("kvstore/store.py", "kvstore"),
        ("web/urls.py", "web"),
        ("web/api/root.py", "web"),
        ("web/pages/agent_pages.py", "web"),
        ("web/admin/agent_admin.py", "web"),
        ("web/mcp/tools.py", "web"),
        ("web/management/commands/doctor.py", "web"),
    ],
)
def test_a_module_gets_its_layer_from_its_folder(path: str, expected: str) -> None:
    assert (ROOT / path).exists(), path
    assert layer_of(Path(path).with_suffix("").parts) == expected


def test_every_module_is_found_and_layered() -> None:
    found = modules(ROOT)
    assert {"lens.core.render", "memory.core.overlay", "kvstore.store", "web.urls"} <= set(found)
    assert {layer_of(tuple(name.split("."))) for name in found} == set(ALLOWED)


def test_imports_point_inward_only() -> None:
    assert violations(ROOT) == []


def test_no_two_modules_share_a_name() -> None:
    assert shared_names(ROOT) == {}


def _plant(root: Path, files: dict[str, str]) -> None:
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)


@pytest.mark.parametrize(
    ("importer", "source"),
    [
        ("memory/leaky.py", "from web.api.root import api\n"),
        ("kvstore/leaky.py", "def f():\n    import memory.saving\n"),
        ("lens/leaky.py", "from memory import saving\n"),
        ("lens/serving/leaky.py", "from web import urls\n"),
        ("lens/core/leaky.py", "from lens.models import Team\n"),
        ("lens/leaky.py", "from web import urls\n"),
        ("lens/leaky.py", "import webhooks.outbox\n"),
        ("lens/leaky.py", "from kvstore import store\n"),
        ("memory/leaky.py", "from kvstore import store\n"),
        ("memory/leaky.py", "from webhooks import outbox\n"),
        ("kvstore/leaky.py", "from web.api import root\n"),
        ("webhooks/leaky.py", "from web.api import root\n"),
        ("webhooks/core/leaky.py", "from memory import saving\n"),
        ("memory/leaky.py", "from demo import configs\n"),
        ("web/leaky.py", "from demo import configs\n"),
        ("demo/leaky.py", "from web.api import root\n"),
        ("memory/core/leaky.py", "from kvstore.core.keys import x\n"),
        (
            "memory/leaky.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from web.api import root\n",
        ),
    ],
)
def test_a_planted_violation_is_found(tmp_path: Path, importer: str, source: str) -> None:
    _plant(
        tmp_path,
        {
            "lens/__init__.py": "",
            "lens/models.py": "",
            "lens/core/__init__.py": "",
            "web/__init__.py": "",
            "web/urls.py": "",
            "web/api/__init__.py": "",
            "web/api/root.py": "from memory import saving\n",  # outer → inner: fine
            "demo/__init__.py": "",
            "demo/configs.py": "from memory import saving\n",  # the demo → memory: fine
            "webhooks/__init__.py": "",
            "webhooks/outbox.py": "from memory import saving\n",  # events out → memory: fine
            "webhooks/core/__init__.py": "",
            "kvstore/store.py": "",
            "memory/__init__.py": "",
            "memory/saving.py": "from lens.models import Team\n",
            "memory/core/__init__.py": "",
            "kvstore/__init__.py": "",
            "kvstore/core/__init__.py": "",
            "kvstore/core/keys.py": "",
        },
    )
    assert violations(tmp_path) == []
    _plant(tmp_path, {importer: source})
    found = violations(tmp_path)
    assert len(found) == 1
    assert found[0].startswith(importer.removesuffix(".py").replace("/", "."))


def test_a_planted_shared_name_is_found(tmp_path: Path) -> None:
    _plant(
        tmp_path,
        {
            "memory/explain.py": "",
            "memory/core/explain.py": "",  # the pure half: allowed
            "lens/agents.py": "",
        },
    )
    assert shared_names(tmp_path) == {}
    _plant(tmp_path, {"web/api/agents.py": ""})
    assert shared_names(tmp_path) == {"agents": ["lens.agents", "web.api.agents"]}


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("lens/tokens.py", "memory/core/tokens.py"),  # another package's core
        ("memory/deliveries/fates.py", "memory/core/fates.py"),  # not the package's own
        ("web/api/errors.py", "lens/core/errors.py"),
    ],
)
def test_a_name_shared_beyond_a_module_and_its_pure_half_is_found(
    tmp_path: Path, first: str, second: str
) -> None:
    _plant(tmp_path, {first: "", second: ""})
    name = Path(first).stem
    assert list(shared_names(tmp_path)) == [name]
