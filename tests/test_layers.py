"""Imports run one way (docs/architecture.md): pure cores ← lens ← memory, kvstore ← outer layer.

Every module of the three packages gets a layer from its name alone, and each import it
makes (anywhere in the file: top level, inside functions, behind TYPE_CHECKING) must
point at its own layer or an inner one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("lens", "memory", "kvstore")

# Modules that adapt the product to the outside world (HTTP pages and API, admin, demo,
# commands, settings) are the outer layer, recognised by these name parts.
OUTER_PARTS = frozenset(
    {
        "admin",
        "api",
        "apiauth",
        "apierrors",
        "apijson",
        "approval_views",
        "asgi",
        "buffered",
        "compression",
        "context_processors",
        "delivery_api",
        "delivery_views",
        "demo",
        "envconf",
        "forms",
        "forwarded",
        "http",
        "management",
        "mcp",
        "middleware",
        "runtime",
        "served",
        "server",
        "settings",
        "templatetags",
        "urls",
        "views",
        "wsgi",
    }
)


def layer_of(module: str) -> str:
    """``core`` (pure), ``lens``, ``memory``, ``kvstore`` (domain) or ``outer``."""
    parts = module.split(".")
    if len(parts) > 1 and parts[1] == "core":
        return "core"
    if OUTER_PARTS.intersection(parts[1:]):
        return "outer"
    return parts[0]


# What each layer may import from the three packages.
ALLOWED: dict[str, frozenset[str]] = {
    "core": frozenset({"core"}),
    "lens": frozenset({"core", "lens"}),
    "memory": frozenset({"core", "lens", "memory"}),
    "kvstore": frozenset({"core", "lens", "kvstore"}),
    "outer": frozenset({"core", "lens", "memory", "kvstore", "outer"}),
}
# Which package's core a core module may import: lens.core is the shared base.
CORE_ALLOWED: dict[str, frozenset[str]] = {
    "lens": frozenset({"lens"}),
    "memory": frozenset({"lens", "memory"}),
    "kvstore": frozenset({"lens", "kvstore"}),
}


def modules() -> list[tuple[str, Path]]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).with_suffix("")
            if "migrations" in relative.parts:
                continue  # generated; they name apps by string
            parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
            found.append((".".join(parts), path))
    return found


def first_party_imports(path: Path, module: str) -> list[str]:
    names: list[str] = []
    package = module.split(".")[: -1 if path.name != "__init__.py" else None]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the module's package
                base = package[: len(package) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            # `from memory import views` imports the module lens.web.pages.memory_pages.
            names.extend(f"{target}.{alias.name}" for alias in node.names)
    return [name for name in names if name.split(".")[0] in PACKAGES]


def imported_module(name: str) -> str:
    """The deepest existing module a dotted import name refers to."""
    parts = name.split(".")
    while parts:
        candidate = ROOT.joinpath(*parts)
        if candidate.with_suffix(".py").exists() or (candidate / "__init__.py").exists():
            return ".".join(parts)
        parts.pop()
    return name


@pytest.mark.parametrize(
    ("module", "expected"),
    [
        ("lens.core.render", "core"),
        ("memory.core.overlay", "core"),
        ("kvstore.core.keys", "core"),
        ("lens.models", "lens"),
        ("lens.agents", "lens"),
        ("memory.saving", "memory"),
        ("memory.composition", "memory"),
        ("kvstore.store", "kvstore"),
        ("lens.web.pages.agent_pages", "outer"),
        ("lens.web.api.root", "outer"),
        ("lens.web.urls", "outer"),
        ("lens.web.admin", "outer"),
        ("memory.demo.memories", "outer"),
        ("lens.web.management.commands.doctor", "outer"),
        ("lens.web.pages.approval_pages", "outer"),
        ("lens.web.api.kv_routes", "outer"),
        ("lens.web.mcp.tools", "outer"),
    ],
)
def test_modules_get_their_layer_from_their_name(module: str, expected: str) -> None:
    assert layer_of(module) == expected


def test_every_module_is_found_and_layered() -> None:
    found = dict(modules())
    assert {"lens.core.render", "memory.core.overlay", "kvstore.store", "lens.web.urls"} <= set(
        found
    )
    assert {layer_of(name) for name in found} == set(ALLOWED)


def test_no_inner_module_imports_an_outer_one() -> None:
    violations = []
    for module, path in modules():
        layer = layer_of(module)
        for name in first_party_imports(path, module):
            target = imported_module(name)
            target_layer = layer_of(target)
            if target_layer not in ALLOWED[layer]:
                violations.append(f"{module} ({layer}) imports {target} ({target_layer})")
            elif layer == target_layer == "core" and (
                target.split(".")[0] not in CORE_ALLOWED[module.split(".")[0]]
            ):
                violations.append(f"{module} imports another package's core: {target}")
    assert violations == []


def test_the_layering_check_catches_an_outward_import(tmp_path: Path) -> None:
    # The check itself can fail: an inner module that imports a view is reported.
    source = tmp_path / "saving.py"
    source.write_text(
        "from lens.web.pages.memory_pages import memory_list\nimport lens.web.api.root\n"
    )
    names = [imported_module(n) for n in first_party_imports(source, "memory.saving")]
    assert names == ["lens.web.pages.memory_pages", "lens.web.api.root"]
    assert [layer_of(n) for n in names] == ["outer", "outer"]
    assert "outer" not in ALLOWED["memory"]


def test_lens_inner_modules_know_nothing_of_memory_or_the_store() -> None:
    # The domain layer of lens is what memory and kvstore build on.
    for module, path in modules():
        if layer_of(module) in ("core", "lens") and module.startswith("lens"):
            targets = {n.split(".")[0] for n in first_party_imports(path, module)}
            assert targets <= {"lens"}, module
