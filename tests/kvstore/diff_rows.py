"""Reading a key page's line diff in tests: its rows as "-old", "+new", " same" and
"... N" (N unchanged lines not shown), the way a unified diff reads."""

from __future__ import annotations

from tests.pages import Element, with_class

SIGNS = {"context": " ", "add": "+", "delete": "-"}


def diff_rows(diff: Element) -> list[str]:
    """The rows of a ``data-kv-diff`` element, in order."""
    rows = []
    for row in diff.descendants():
        kind = row.get("data-diff-row")
        if kind is None:
            continue
        if kind == "gap":
            rows.append(f"... {row.squashed.split()[1]}")
            continue
        (text,) = with_class(row, "dl-text")
        rows.append(SIGNS[kind] + text.text)
    return rows


def marked_words(diff: Element) -> list[str]:
    """The words marked as changed inside changed lines: "-cat", "+dog"."""
    return [
        ("+" if e.tag == "ins" else "-") + e.text
        for e in diff.descendants()
        if e.tag in ("ins", "del")
    ]


def line_numbers(diff: Element) -> list[tuple[str, str]]:
    """Each drawn line's (old, new) numbers, "" where a side has none."""
    return [
        (numbers[0].text, numbers[1].text)
        for row in diff.descendants()
        if row.get("data-diff-row") not in (None, "gap")
        for numbers in [with_class(row, "dl-num")]
    ]
