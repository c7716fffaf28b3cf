"""The manual holds together: every relative link and image in README.md and docs/*.md
points at a file that exists, every `#anchor` into a markdown file at one of its
headings (GitHub's slugs), every page is in the index, and the README stays short.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]  # tests/ -> the project
DOCS = ROOT / "docs"
README_MAX_LINES = 250
# A screenshot in the README is downloaded by everyone who opens the project page.
IMAGE_MAX_BYTES = 200 * 1024

FENCE = re.compile(r"^(```|~~~)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
CODE_SPAN = re.compile(r"`+[^`]*`+")
# [text](target) and ![alt](target), with an optional "title" after the target.
LINK = re.compile(r"!?\[([^\]]*)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # https:, mailto:, …


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: the rendered text lowercased, everything but
    letters, digits, `_`, `-` and spaces dropped, spaces turned into hyphens."""
    text = LINK.sub(r"\1", heading).replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading's anchor; a repeated one gets -1, -2, … as on GitHub."""
    seen: dict[str, int] = {}
    found = set()
    for line in prose_lines(text):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def link_targets(text: str) -> list[str]:
    """The targets of the links and images, leaving out code (fenced and inline); a
    link's text may run over several lines."""
    prose = "\n".join(CODE_SPAN.sub("", line) for line in prose_lines(text))
    return [match.group(2) for match in LINK.finditer(prose)]


def leads_nowhere(path: Path, text: str, target: str) -> bool:
    """Whether a relative link of `text` (the contents of `path`) misses its file, or
    the heading its `#anchor` names in a markdown file."""
    file_part, _, anchor = target.partition("#")
    if not file_part:  # an anchor in this very text
        return anchor not in anchors(text)
    destination = (path.parent / file_part).resolve()
    if not destination.exists():
        return True
    if not anchor or destination.suffix != ".md":
        return False
    return anchor not in anchors(destination.read_text())


def broken_links(path: Path, text: str) -> list[str]:
    """The relative links and images of `text` (the contents of `path`) that lead nowhere."""
    return [
        target
        for target in link_targets(text)
        if not EXTERNAL.match(target) and leads_nowhere(path, text, target)
    ]


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


@pytest.mark.parametrize("path", pages(), ids=lambda path: str(path.relative_to(ROOT)))
def test_every_relative_link_and_image_leads_somewhere(path: Path) -> None:
    assert broken_links(path, path.read_text()) == []


def test_the_checker_finds_a_missing_file_and_a_missing_heading() -> None:
    planted = "\n".join(
        [
            "See [the API](docs/api.md) and [its rules](docs/api.md#composition-rules).",
            "Broken: [a page](docs/no-such-page.md), ![a picture](docs/images/none.png),",
            "[a heading](docs/api.md#no-such-heading) and [here, over",
            "two lines](#nowhere).",
            "Not links: `[code](missing.md)`, <https://example.com/>, [out](https://x.test/a).",
            "```",
            "[fenced](missing-too.md)",
            "```",
            "# A heading here",
            "[this one](#a-heading-here)",
        ]
    )
    assert broken_links(ROOT / "README.md", planted) == [
        "docs/no-such-page.md",
        "docs/images/none.png",
        "docs/api.md#no-such-heading",
        "#nowhere",
    ]


def test_anchors_are_githubs_slugs() -> None:
    text = "\n".join(
        [
            "## Memory: saving, routing, promotion",
            "### Over HTTP, against etcd (`make bench-http`)",
            "## Key/value store",
            "## Notes",
            "## Notes",
            "```",
            "# not a heading",
            "```",
        ]
    )
    assert anchors(text) == {
        "memory-saving-routing-promotion",
        "over-http-against-etcd-make-bench-http",
        "keyvalue-store",
        "notes",
        "notes-1",
    }


def test_every_page_of_the_manual_is_in_its_index() -> None:
    index = DOCS / "README.md"
    listed = {target.partition("#")[0] for target in link_targets(index.read_text())}
    unlisted = {path.name for path in DOCS.glob("*.md")} - listed - {"README.md"}
    assert unlisted == set()


def test_the_readme_is_short() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) < README_MAX_LINES


def test_the_readmes_images_are_small() -> None:
    readme = ROOT / "README.md"
    prose = "\n".join(prose_lines(readme.read_text()))
    images = [ROOT / match.group(2) for match in LINK.finditer(prose) if match.group(0)[0] == "!"]
    assert images, "the README shows the product"
    assert {
        image.name: image.stat().st_size
        for image in images
        if image.exists() and image.stat().st_size > IMAGE_MAX_BYTES
    } == {}
