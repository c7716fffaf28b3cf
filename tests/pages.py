"""Reading pages in tests: a small DOM (textContent as a browser reads it) and what the
pages show, found in it.

Query counts are not read here: tests use pytest-django's
``django_assert_max_num_queries`` fixture for them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from django.test import Client

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


def alerts(page: Dom) -> list[str]:
    """The text of every element of class ``alert`` (messages, errors), squashed."""
    return [e.squashed for e in page.elements if "alert" in (e.get("class") or "").split()]


def alert_text(page: Dom) -> str:
    """Every alert's text in one string, for "is this said somewhere" checks."""
    return " ".join(alerts(page))


def inside(element: Element, tag: str, **attrs: str) -> list[Element]:
    """The descendants of ``element`` with this tag and these attributes (``_`` for ``-``)."""
    return [
        e
        for e in element.descendants()
        if e.tag == tag and all(e.get(k.replace("_", "-")) == v for k, v in attrs.items())
    ]


def with_class(element: Element, name: str) -> list[Element]:
    return [e for e in element.descendants() if name in (e.get("class") or "").split()]


def buttons(element: Element | Dom) -> list[str]:
    found = element.descendants() if isinstance(element, Element) else element.elements
    return [e.squashed for e in found if e.tag == "button"]


def fragment(response: Any) -> Dom:
    """An htmx answer: a fragment, never a whole page."""
    text = response.content.decode()
    assert "<html" not in text
    assert "<body" not in text
    assert "<header" not in text
    return dom(response)


# --- the key/value pages ---------------------------------------------------------------


def shown_payload(page: Dom) -> str:
    return page.one("data-kv-payload", tag="pre").text


def draft(page: Dom) -> str:
    return page.one("name", "payload", tag="textarea").text


def hidden_if_version(page: Dom) -> str | None:
    return page.one("name", "if_version", tag="input").get("value")


def keys_listed(page: Dom) -> list[str]:
    return [str(e.get("data-kv-key")) for e in page.all("data-kv-key")]


def versions_listed(page: Dom) -> list[int]:
    return [int(str(e.get("data-kv-version"))) for e in page.all("data-kv-version")]


# --- the approval queue ----------------------------------------------------------------


def approval_queue(client: Client, query: str = "") -> Dom:
    return dom(client.get(f"/approvals/{query}"))


def queue_row_ids(page: Dom) -> list[str]:
    return [e.get("data-promotion-id") or "" for e in page.all("data-promotion-id")]


def queue_rows(page: Dom) -> dict[str, Element]:
    return {e.get("data-promotion-id") or "": e for e in page.all("data-promotion-id")}


def oob_count(page: Dom) -> int:
    """The pending count sent out of band with an htmx answer."""
    counter = page.one("id", "pending-count")
    assert counter.get("hx-swap-oob") == "true"
    assert counter.get("data-pending-total") == counter.squashed
    return int(counter.squashed)
