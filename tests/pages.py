"""Reading pages in tests: a small DOM (textContent as a browser reads it) and what the
pages show, found in it.

Query counts are not read here: tests use pytest-django's
``django_assert_max_num_queries`` fixture for them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import unescape
from html.parser import HTMLParser
from typing import TYPE_CHECKING, Any

import pytest
from django.test import Client

if TYPE_CHECKING:
    from django.db.models import Model
    from django.forms.models import BaseInlineFormSet

    from lens.models import Agent, SectionDeclaration

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
    return [e.squashed for e in with_class(page, "alert")]


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


def with_class(element: Element | Dom, name: str) -> list[Element]:
    """The descendants of ``element`` (or every element of a page) of class ``name``."""
    found = element.descendants() if isinstance(element, Element) else element.elements
    return [e for e in found if name in (e.get("class") or "").split()]


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


def proposal_row_ids(page: Dom) -> list[int]:
    return [int(e.get("data-proposal-id") or 0) for e in page.all("data-proposal-id", tag="li")]


def oob_count(page: Dom) -> int:
    """The pending count sent out of band with an htmx answer."""
    counter = page.one("id", "pending-count")
    assert counter.get("hx-swap-oob") == "true"
    assert counter.get("data-pending-total") == counter.squashed
    return int(counter.squashed)


# --- the admin's forms ------------------------------------------------------------------

FormData = dict[str, list[str]]


def admin_agent_url(agent: Agent) -> str:
    return f"/admin/lens/agent/{agent.pk}/change/"


def admin_section_url(section: SectionDeclaration) -> str:
    return f"/admin/lens/sectiondeclaration/{section.pk}/change/"


def assert_refused(response: Any, message: str) -> None:
    """The admin drew its form again, with ``message`` among its errors."""
    assert response.status_code == 200, "the form was accepted"
    html = response.content.decode()
    assert "errorlist" in html
    assert message in unescape(html)


class FormParser(HTMLParser):
    """What a browser would submit from the form with id ``form_id`` (no button pressed)."""

    def __init__(self, form_id: str) -> None:
        super().__init__(convert_charrefs=True)
        self.form_id = form_id
        self.data: FormData = {}
        self._in_form = False
        self._select: str | None = None
        self._select_first: str | None = None
        self._select_chosen = False
        self._textarea: str | None = None
        self._textarea_text = ""
        self._option: dict[str, str | None] | None = None
        self._option_text = ""

    def _add(self, name: str, value: str) -> None:
        # Empty-form templates for "Add another" rows are never submitted as they are.
        if "__prefix__" not in name:
            self.data.setdefault(name, []).append(value)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "form":
            self._in_form = attributes.get("id") == self.form_id
            return
        if not self._in_form:
            return
        name = attributes.get("name")
        if tag == "input" and name:
            kind = (attributes.get("type") or "text").lower()
            if kind in ("submit", "button", "image", "reset", "file"):
                return
            if kind in ("checkbox", "radio") and "checked" not in attributes:
                return
            default = "on" if kind in ("checkbox", "radio") else ""
            self._add(name, attributes.get("value") or default)
        elif tag == "textarea" and name:
            self._textarea, self._textarea_text = name, ""
        elif tag == "select" and name:
            self._select, self._select_first, self._select_chosen = name, None, False
        elif tag == "option" and self._select:
            self._option, self._option_text = attributes, ""

    def handle_data(self, data: str) -> None:
        if self._textarea:
            self._textarea_text += data
        elif self._option is not None:
            self._option_text += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._in_form = False
        elif tag == "textarea" and self._textarea:
            value = self._textarea_text
            # A newline right after <textarea> is not part of the value.
            self._add(self._textarea, value[1:] if value.startswith("\n") else value)
            self._textarea = None
        elif tag == "option" and self._select and self._option is not None:
            # An <option> without a value attribute submits its text.
            attribute = self._option.get("value")
            value = self._option_text if attribute is None else attribute
            if self._select_first is None:
                self._select_first = value
            if "selected" in self._option and not self._select_chosen:
                self._add(self._select, value)
                self._select_chosen = True
            self._option = None
        elif tag == "select" and self._select:
            if not self._select_chosen and self._select_first is not None:
                self._add(self._select, self._select_first)
            self._select = None


def form_data(client: Client, url: str, form_id: str) -> FormData:
    response = client.get(url)
    assert response.status_code == 200
    parser = FormParser(form_id)
    parser.feed(response.content.decode())
    parser.close()
    assert parser.data, f"no form {form_id!r} on {url}"
    return parser.data


def put(data: FormData, name: str, value: str) -> None:
    data[name] = [value]


def total(data: FormData, prefix: str) -> int:
    return int(data[f"{prefix}-TOTAL_FORMS"][0])


def add_row(data: FormData, prefix: str, **fields: str) -> int:
    """Append a new inline row (what "Add another" does) and return its index."""
    index = total(data, prefix)
    put(data, f"{prefix}-TOTAL_FORMS", str(index + 1))
    for name, value in fields.items():
        put(data, f"{prefix}-{index}-{name}", value)
    return index


def section_row(agent: Agent, section_id: str, title: str = "Notes") -> dict[str, str]:
    """The fields of a new locked section row of ``agent``'s page, without a position
    (it goes last); for ``add_row``."""
    return {
        "section_id": section_id,
        "title": title,
        "promotion": "locked",
        "position": "",
        "agent": str(agent.pk),
        "id": "",
    }


def new_section_page(agent: Agent, section_id: str, title: str) -> dict[str, str]:
    """What the section add page submits: a locked section of ``agent``, no entries."""
    return {
        "agent": str(agent.pk),
        "section_id": section_id,
        "title": title,
        "promotion": "locked",
        "entries-TOTAL_FORMS": "0",
        "entries-INITIAL_FORMS": "0",
        "entries-MIN_NUM_FORMS": "0",
        "entries-MAX_NUM_FORMS": "1000",
    }


def row_of(data: FormData, prefix: str, field: str, value: str) -> int:
    """The index of the inline row whose ``field`` holds ``value``."""
    for index in range(total(data, prefix)):
        if data.get(f"{prefix}-{index}-{field}") == [value]:
            return index
    raise AssertionError(f"no {prefix} row with {field}={value!r}")


def formset(response: Any, prefix: str) -> BaseInlineFormSet[Model, Model]:
    """The inline formset ``prefix`` of an admin page's answer, as the view built it."""
    for inline in response.context["inline_admin_formsets"]:
        if inline.formset.prefix == prefix:
            # Rows of whichever model the inline edits, under one of its parent.
            found: BaseInlineFormSet[Model, Model] = inline.formset
            return found
    raise AssertionError(f"no {prefix} formset")


def first_blank_row(data: FormData, prefix: str) -> int:
    """The index of the extra row the admin renders empty."""
    for index in range(total(data, prefix)):
        if not data.get(f"{prefix}-{index}-id", [""])[0]:
            return index
    raise AssertionError(f"no blank {prefix} row")


def assert_refusal_logged(caplog: pytest.LogCaptureFixture, path: str) -> None:
    """A page's refusal (403) is logged as Django logs every 4xx answer: one warning
    line of ``django.request``, ``Forbidden: <path>``, with no traceback."""
    records = [record for record in caplog.records if record.levelname != "DEBUG"]
    assert [(r.name, r.levelname, r.getMessage()) for r in records] == [
        ("django.request", "WARNING", f"Forbidden: {path}")
    ]
    assert records[0].exc_info is None
    assert caplog.text.strip().count("\n") == 0
