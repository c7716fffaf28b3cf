"""The folder map in docs/architecture.md (the fenced block under "## Folders") names
every product module, in the block of its own folder, so a reader can find any file
from the map and a new module cannot go undocumented.

Which files count: every ``.py`` under ``lens/``, ``memory/``, ``kvstore/``,
``webhooks/``, ``web/`` and ``demo/``, except

- ``__init__.py`` (package markers),
- ``migrations/`` (generated, named by number),
- ``apps.py`` (Django's app configuration: every app has one, and the map's line for
  the folder stands for it).

Management commands are counted too, by their command name (``doctor``, not
``doctor.py``), since that is how they are called (``manage.py doctor``); a command
counts as named when its name appears anywhere in its app's section of the map.

Every other module counts as named when its file name (``costly.py``) appears as a
name, not as part of a path (``memory/core/redaction.py`` names nothing in the block it
is written in), in the block of its folder: ``web/costly.py`` in the lines of ``web/``
outside its sub-folders' blocks, ``web/api/kv_front.py`` in the block that starts
``  api/`` inside ``web/``'s section. A sub-folder block runs from its line to the next
line indented like it (two spaces). A folder the map gives no block of its own (a new
``memory/deliveries/archive/``, say) has its modules looked for in the nearest enclosing
block that it does give.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # tests/ -> the project
ARCHITECTURE = ROOT / "docs" / "architecture.md"
PACKAGES = ("lens", "memory", "kvstore", "webhooks", "web", "demo")
LEFT_OUT = frozenset({"__init__.py", "apps.py"})
COMMANDS = "management/commands"

FENCE = re.compile(r"^(```|~~~)")
# A top-level folder's section starts at column 0 with its name ("web/  …",
# "templates/  static/  …"); a sub-folder's block at column 2 ("  api/  …",
# "  management/commands/  …").
TOP = re.compile(r"^([a-z_]+)/")
SUB = re.compile(r"^  ([a-z_]+(?:/[a-z_]+)*)/(?:\s|$)")
INDENTED_TWO = re.compile(r"^  \S")


def folder_map(text: str) -> list[str]:
    """The lines of the first fenced block after the "## Folders" heading."""
    lines = text.splitlines()
    start = lines.index("## Folders")
    block: list[str] = []
    inside = False
    for line in lines[start + 1 :]:
        if FENCE.match(line):
            if inside:
                return block
            inside = True
            continue
        if inside:
            block.append(line)
    raise AssertionError("no fenced block under ## Folders")


def blocks(map_lines: list[str]) -> dict[str, str]:
    """The map's text by folder: "web" holds the lines of web/'s section outside its
    sub-folders' blocks, "web/api" the block of web/api/, and so on."""
    found: dict[str, list[str]] = defaultdict(list)
    top = sub = ""
    for line in map_lines:
        if match := TOP.match(line):
            top, sub = match.group(1), ""
        elif match := SUB.match(line):
            sub = match.group(1)
        elif INDENTED_TWO.match(line):
            sub = ""  # a module of the top folder ("  models.py  …") ends a block
        if top:
            found[f"{top}/{sub}" if sub else top].append(line)
    return {folder: "\n".join(lines) for folder, lines in found.items()}


def product_modules(root: Path) -> list[Path]:
    """Every product module the map must name, relative to `root`."""
    modules = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root)
            if "migrations" in relative.parts or path.name in LEFT_OUT:
                continue
            modules.append(relative)
    return modules


def is_command(module: Path) -> bool:
    return module.parent.as_posix().endswith(COMMANDS)


def names(text: str, name: str) -> bool:
    """Whether `name` appears in `text` on its own, not inside a longer name or a path."""
    return re.search(rf"(?<![\w/.]){re.escape(name)}(?![\w])", text) is not None


def block_of(module: Path, folders: dict[str, str]) -> str:
    """The map's text for `module`'s folder: the nearest folder the map gives a block."""
    folder = module.parent
    while folder.as_posix() not in folders and len(folder.parts) > 1:
        folder = folder.parent
    return folders.get(folder.as_posix(), "")


def unnamed(root: Path, text: str) -> list[str]:
    """The product modules under `root` that the map in `text` does not name."""
    folders = blocks(folder_map(text))
    missing = []
    for module in product_modules(root):
        if is_command(module):
            section = "\n".join(
                block
                for folder, block in folders.items()
                if folder.split("/")[0] == module.parts[0]
            )
            named = names(section, module.stem)
        else:
            named = names(block_of(module, folders), module.name)
        if not named:
            missing.append(module.as_posix())
    return missing


def test_the_folder_map_names_every_product_module() -> None:
    missing = unnamed(ROOT, ARCHITECTURE.read_text())
    # One module a line, so the list is what to add: each file name in the block of its
    # folder, with a few words on what it holds.
    assert not missing, (
        "docs/architecture.md's folder map (## Folders) does not name:\n"
        + "\n".join(f"  {module}" for module in missing)
    )


def test_the_check_finds_a_module_named_in_the_wrong_block(tmp_path: Path) -> None:
    for module in (
        "web/urls.py",
        "web/costly.py",
        "web/apps.py",
        "web/api/root.py",
        "web/api/kv_front.py",
        "web/api/__init__.py",
        "web/management/commands/doctor.py",
        "web/management/commands/flush.py",
        "memory/erasure.py",
        "memory/core/redaction.py",
        "memory/migrations/0001_initial.py",
        "lens/serving/server.py",
        "lens/serving/deep/inner.py",
    ):
        (tmp_path / module).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / module).write_text("")
    planted = "\n".join(
        [
            "# Architecture",
            "## Folders",
            "```",
            "web/   the outer layer",
            "  urls.py   every URL; kv_front.py is named here, outside api/'s block",
            "  api/   root.py",
            "  management/commands/   doctor",
            "memory/",
            "  erasure.py   erase (memory/core/redaction.py redacts), root.py",
            "  core/   pure",
            "lens/",
            "  serving/   server.py, inner.py",
            "```",
        ]
    )
    assert unnamed(tmp_path, planted) == [
        "memory/core/redaction.py",
        "web/api/kv_front.py",
        "web/costly.py",
        "web/management/commands/flush.py",
    ]
