"""Every ``# type: ignore`` names the errors it silences and says why (mypy runs strict).

A bare ignore would hide any error its line ever gains; one without a reason leaves the
next reader to guess whether it is still needed. The form required is
``# type: ignore[code]  # reason`` (several codes separated by commas).
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHECKED = ("lens", "memory", "kvstore", "webhooks", "web", "demo", "bench", "tools", "tests")

# Anything that reads as an ignore, at a comment's start or after another comment (mypy
# also takes it without the spaces).
_IGNORE = re.compile(r"#\s*type:\s*ignore")
# From the ignore to the end of the line: codes in brackets, then a comment of its own.
_EXPLAINED = re.compile(r"# type: ignore\[[a-z-]+(?:, ?[a-z-]+)*\]\s+#\s*\S.*")


def unexplained_ignores(source: str) -> list[tuple[int, str]]:
    """(line, comment) of each ignore in ``source`` lacking an error code or a reason.
    Comments only, found by the tokenizer: a string that mentions one is not one."""
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT:
            continue
        match = _IGNORE.search(token.string)
        if match and not _EXPLAINED.fullmatch(token.string, match.start()):
            found.append((token.start[0], token.string))
    return found


def offenders(root: Path) -> list[str]:
    """``path:line: comment`` for every unexplained ignore under the checked folders."""
    return [
        f"{path.relative_to(root)}:{line}: {comment}"
        for folder in CHECKED
        for path in sorted((root / folder).rglob("*.py"))
        for line, comment in unexplained_ignores(path.read_text(encoding="utf-8"))
    ]


def test_every_type_ignore_has_an_error_code_and_a_reason() -> None:
    assert offenders(ROOT) == []


def test_the_project_has_ignores_to_check() -> None:
    # The check above would pass vacuously if the scan found no file or no ignore.
    sources = [
        path.read_text(encoding="utf-8")
        for package in CHECKED
        for path in (ROOT / package).rglob("*.py")
    ]
    assert any(_IGNORE.search(source) for source in sources)


@pytest.mark.parametrize(
    "line",
    [
        "x = f()  # type: ignore[arg-type]  # the request is never read",
        "x = f()  # type: ignore[arg-type, misc]  # frozen on purpose",
        "x = f()  # type: ignore[arg-type] # one space is enough",
        'x = "# type: ignore"  # a string that mentions one',
        "x = f()  # nothing to ignore",
    ],
)
def test_explained_ignores_and_mentions_pass(line: str) -> None:
    assert unexplained_ignores(line + "\n") == []


@pytest.mark.parametrize(
    "line",
    [
        "x = f()  # type: ignore",
        "x = f()  # type:ignore",
        "x = f()  # type: ignore  # a reason but no code",
        "x = f()  # type: ignore[arg-type]",
        "x = f()  # type: ignore[arg-type]  #",
        "x = f()  # type: ignore[arg-type]  #   ",
        "x = f()  # type: ignore[arg-type]  a reason that is not a comment",
        "x = f()  # type: ignore[]  # no code in the brackets",
        "x = f()  # type:ignore[arg-type]  # mypy reads it; it must be spelled out",
        "x = f()  # noqa: E501  # type: ignore[arg-type]",
        "x = f()  # noqa: E501  # type: ignore",
    ],
)
def test_an_ignore_without_a_code_or_a_reason_is_found(line: str) -> None:
    assert unexplained_ignores(f"import os\n\n{line}\n") == [(3, line.removeprefix("x = f()  "))]


def test_the_scan_reports_the_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "memory" / "core").mkdir(parents=True)
    (tmp_path / "memory" / "core" / "planted.py").write_text(
        '"""A planted ignore."""\n\nvalue: int = "x"  # type: ignore\n', encoding="utf-8"
    )
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "fine.py").write_text(
        'value: int = "x"  # type: ignore[assignment]  # planted, explained\n', encoding="utf-8"
    )
    assert offenders(tmp_path) == ["memory/core/planted.py:3: # type: ignore"]
