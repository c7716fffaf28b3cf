"""What the API and MCP both answer with lives in ``web/answers/`` (docs/architecture.md),
read from the imports alone, as ``tests/test_layers.py`` reads them:

- no ``web/mcp`` module imports a route module (``web/api/*_routes.py``): a tool answers
  with the models and builders of ``web/answers``, not with a router's;
- no route module imports another route module: what two routers share is an answer;
- ``web/answers`` imports neither a route module nor ``web/mcp``: it sits below both.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_layers import ROOT, _plant, imports_of, modules, target_parts


def is_route(module: str) -> bool:
    parts = module.split(".")
    return len(parts) == 3 and parts[:2] == ["web", "api"] and parts[2].endswith("_routes")


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(f"{package}.")


def borrows(module: str, target: str) -> bool:
    """Whether ``module`` importing ``target`` takes an answer from the wrong place."""
    if _within(module, "web.answers") and _within(target, "web.mcp"):
        return True
    borrower = _within(module, "web.mcp") or _within(module, "web.answers") or is_route(module)
    return is_route(target) and target != module and borrower


def crossings(root: Path) -> list[str]:
    """Every import that borrows an answer from the wrong place, ``importer -> name``."""
    known = modules(root)
    return [
        f"{module} -> {name}"
        for module, path in known.items()
        for name in imports_of(path, module)
        if borrows(module, ".".join(target_parts(name, known)))
    ]


def importers_of(root: Path, imported: str) -> set[str]:
    known = modules(root)
    return {
        module
        for module, path in known.items()
        for name in imports_of(path, module)
        if ".".join(target_parts(name, known)) == imported
    }


def test_answers_are_borrowed_from_web_answers_only() -> None:
    assert crossings(ROOT) == []


def test_the_api_and_mcp_answer_from_one_home() -> None:
    assert {"web.api.memory_routes", "web.mcp.operations", "web.mcp.tools"} <= importers_of(
        ROOT, "web.answers.memory_answers"
    )
    assert {"web.api.kv_routes", "web.api.kv_front", "web.mcp.operations"} <= importers_of(
        ROOT, "web.answers.kv_answers"
    )
    assert {"web.api.agent_routes", "web.mcp.operations"} <= importers_of(
        ROOT, "web.answers.composition_answers"
    )
    assert {"web.api.agent_routes", "web.api.revision_routes"} <= importers_of(
        ROOT, "web.answers.proposal_answers"
    )


@pytest.mark.parametrize(
    ("importer", "source"),
    [
        ("web/mcp/leaky.py", "from web.api.kv_routes import WriteIn\n"),
        ("web/mcp/leaky.py", "def f():\n    from web.api import memory_routes\n"),
        (
            "web/mcp/leaky.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import web.api.kv_routes\n",
        ),
        ("web/api/proposal_routes.py", "from web.api.kv_routes import Page\n"),
        ("web/api/revision_routes.py", "from .kv_routes import Page\n"),
        ("web/answers/leaky.py", "from web.api.kv_routes import WriteIn\n"),
        ("web/answers/leaky.py", "from web.mcp import operations\n"),
    ],
)
def test_a_planted_crossing_is_found(tmp_path: Path, importer: str, source: str) -> None:
    _plant(
        tmp_path,
        {
            "web/__init__.py": "",
            "web/answers/__init__.py": "",
            "web/answers/kv_answers.py": "from web.api.params import INT_MAX\n",
            "web/api/__init__.py": "",
            "web/api/params.py": "",
            "web/api/auth.py": "",
            "web/api/rendering.py": "",
            # A router imports answers and the API's helpers: fine.
            "web/api/kv_routes.py": (
                "from web.answers.kv_answers import Page\nfrom web.api.auth import x\n"
            ),
            "web/api/proposal_routes.py": "from web.api.params import INT_MAX\n",
            "web/api/memory_routes.py": "",
            "web/api/revision_routes.py": "from web.answers import kv_answers\n",
            # Mounting the routers is not borrowing from one.
            "web/api/root.py": "from web.api.kv_routes import router\n",
            "web/api/kv_front.py": "from web.answers.kv_answers import WriteIn\n",
            "web/mcp/__init__.py": "",
            "web/mcp/operations.py": (
                "from web.answers.kv_answers import Page\nfrom web.api.rendering import iso_utc\n"
            ),
        },
    )
    assert crossings(tmp_path) == []
    _plant(tmp_path, {importer: source})
    found = crossings(tmp_path)
    assert len(found) == 1
    assert found[0].startswith(importer.removesuffix(".py").replace("/", "."))
