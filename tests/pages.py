"""Reading pages in tests: a small DOM (textContent as a browser reads it) and a query
counter for the "queries do not grow with rows" guards.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

VOID_TAGS = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
)


@dataclass
class Element:
    tag: str
    attrs: dict[str, str | None]
    parent: Element | None = None
    text: str = ""  # textContent, as a browser reads it
    children: list[Element] = field(default_factory=list)

    def get(self, name: str) -> str | None:
        return self.attrs.get(name)

    @property
    def squashed(self) -> str:
        """The text with every run of whitespace made one space (for prose checks)."""
        return " ".join(self.text.split())

    def ancestor(self, tag: str) -> Element | None:
        node = self.parent
        while node is not None and node.tag != tag:
            node = node.parent
        return node

    def descendants(self) -> list[Element]:
        found: list[Element] = []
        for child in self.children:
            found.append(child)
            found.extend(child.descendants())
        return found


class Dom(HTMLParser):
    """Every element with its attributes and ``textContent``, in document order.

    A browser ignores one line feed right after ``<pre>`` and ``<textarea>``; html.parser
    keeps it, so this parser drops it the way a browser does.
    """

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[Element] = []
        self._open: list[Element] = []
        self._leading_newline_dropped_by = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        parent = self._open[-1] if self._open else None
        element = Element(tag=tag, attrs=dict(attrs), parent=parent)
        if parent is not None:
            parent.children.append(element)
        self.elements.append(element)
        if tag not in VOID_TAGS:
            self._open.append(element)
        self._leading_newline_dropped_by = tag if tag in ("pre", "textarea") else ""

    def handle_endtag(self, tag: str) -> None:
        self._leading_newline_dropped_by = ""
        for depth in range(len(self._open) - 1, -1, -1):
            if self._open[depth].tag == tag:
                del self._open[depth:]
                return

    def handle_data(self, data: str) -> None:
        if self._leading_newline_dropped_by and data.startswith("\n"):
            data = data[1:]
        self._leading_newline_dropped_by = ""
        for element in self._open:
            element.text += data

    def all(
        self, attribute: str, value: str | None = None, tag: str | None = None
    ) -> list[Element]:
        return [
            e
            for e in self.elements
            if attribute in e.attrs
            and (value is None or e.attrs[attribute] == value)
            and (tag is None or e.tag == tag)
        ]

    def one(self, attribute: str, value: str | None = None, tag: str | None = None) -> Element:
        found = self.all(attribute, value, tag)
        assert len(found) == 1, (attribute, value, tag, len(found))
        return found[0]

    def links(self, text: str) -> list[str]:
        return [str(e.get("href")) for e in self.elements if e.tag == "a" and e.squashed == text]


def dom(response: Any, status: int = 200) -> Dom:
    assert response.status_code == status, response.status_code
    # A browser turns every CR and CRLF of the input stream into LF before parsing
    # (character references excepted); html.parser does not.
    html = response.content.decode().replace("\r\n", "\n").replace("\r", "\n")
    parser = Dom()
    parser.feed(html)
    parser.close()
    return parser


def count_queries(client: Client, path: str) -> int:
    with CaptureQueriesContext(connection) as context:
        response = client.get(path)
    assert response.status_code == 200
    return len(context.captured_queries)
