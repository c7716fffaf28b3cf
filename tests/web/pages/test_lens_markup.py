"""Hostile text through ``web.pages.lens_markup``, read back by an HTML parser.

The module builds HTML with f-strings, so nothing but its own escaping stands between
user text and the page. For every piece of text it puts in HTML (fragment text, memory
ids, tooltip words, drop kinds, labels and snippets, explanation pieces and their link
targets, place text, the reason code) these tests generate hostile text, parse the
output into an element tree and compare it with the tree the module means to build: the
same elements with the same attributes in the same order, nothing injected, nothing
closed early, and every text node and attribute value decoded back to the original.

Each output is read twice. The parser's own reading gives every value back exactly. A
browser first turns every raw CR and CRLF into LF (HTML's input stream preprocessing);
a fragment's text must survive that too (``exact`` writes a CR as ``&#13;``), while any
other text reads a CR as LF, as it would in any template.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from html import unescape
from html.parser import HTMLParser
from itertools import count
from typing import Any, TypeAlias
from urllib.parse import parse_qs, urlsplit

from django.urls import resolve, reverse
from django.utils.safestring import SafeString
from hypothesis import given, settings
from hypothesis import strategies as st

from lens.core.background import KEY_MAX, SECTION_ID_MAX, TITLE_MAX
from lens.core.config import PROSE_MAX
from lens.core.fragments import PromptFragment, PromptSection, authored, memory
from lens.core.outline import ContextBlock
from lens.core.token_counts import count_tokens
from memory.core.explain import Explanation, Facts, Link, Piece
from memory.core.records import LABEL_MAX
from memory.queries import SNIPPET_CHARS
from web.pages.lens_markup import (
    CONTEXT,
    drop_items,
    esc,
    exact,
    fragments_html,
    prompt_section_items,
)

# Modest: the whole file runs in under ten seconds.
PROPERTY = settings(max_examples=200, deadline=None)

# --- reading HTML back -------------------------------------------------------------


@dataclass
class Tag:
    """An element: its name, its attributes in source order (decoded; ``None`` for one
    without a value; an intended one may be a ``QueueLink``) and its children, adjacent
    text merged into one node."""

    name: str
    attrs: list[tuple[str, object]] = field(default_factory=list)
    children: list[Node] = field(default_factory=list)


Node: TypeAlias = "Tag | str"


class Exact(str):
    """Text a browser must read exactly, CR included: a fragment's."""

    __slots__ = ()


class Tree(HTMLParser):
    """The element tree of a piece of HTML, and everything in it that is not an element
    opened and closed in order or decoded text: comments, declarations, processing
    instructions, self-closing tags, end tags that close anything but the innermost open
    element, elements left open. The markup under test holds none of these."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Tag("#root")
        self.open = [self.root]
        self.faults: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Tag(tag, list(attrs))
        self.open[-1].children.append(element)
        self.open.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.faults.append(f"<{tag} ... />")

    def handle_endtag(self, tag: str) -> None:
        if self.open[-1].name != tag:
            self.faults.append(f"</{tag}> inside <{self.open[-1].name}>")
            return
        self.open.pop()

    def handle_data(self, data: str) -> None:
        children = self.open[-1].children
        if children and isinstance(children[-1], str):
            children[-1] += data
        else:
            children.append(data)

    def handle_comment(self, data: str) -> None:
        self.faults.append(f"<!--{data}-->")

    def handle_decl(self, decl: str) -> None:
        self.faults.append(f"<!{decl}>")

    def unknown_decl(self, data: str) -> None:
        self.faults.append(f"<![{data}]>")

    def handle_pi(self, data: str) -> None:
        self.faults.append(f"<?{data}>")


def browser_input(markup: str) -> str:
    """What a browser's tokenizer reads: every CR and CRLF made LF."""
    return markup.replace("\r\n", "\n").replace("\r", "\n")


def parse(markup: str, *, browser: bool = False) -> list[Node]:
    """The top-level nodes of ``markup``, read by the parser or as a browser reads it."""
    tree = Tree()
    tree.feed(browser_input(markup) if browser else markup)
    tree.close()
    faults = tree.faults + [f"<{tag.name}> left open" for tag in tree.open[1:]]
    assert not faults, faults
    return tree.root.children


def as_browser_reads(nodes: list[Node]) -> list[Node]:
    """``nodes`` with every raw CR and CRLF read as LF, but in ``Exact`` text."""

    def value(text: object) -> object:
        return (
            browser_input(text) if isinstance(text, str) and not isinstance(text, Exact) else text
        )

    return [
        Tag(node.name, [(k, value(v)) for k, v in node.attrs], as_browser_reads(node.children))
        if isinstance(node, Tag)
        else str(value(node))
        for node in nodes
    ]


def text_of(node: Node) -> str:
    """``textContent``."""
    return node if isinstance(node, str) else "".join(text_of(child) for child in node.children)


def nodes(*parts: Node) -> list[Node]:
    """Children as the parser gives them: adjacent text one node, empty text none."""
    out: list[Node] = []
    for part in parts:
        if isinstance(part, str) and out and isinstance(out[-1], str):
            out[-1] += part
        elif part:
            out.append(part)
    return out


def both_readings(markup: str, intended: list[Node]) -> None:
    """``markup`` reads as ``intended`` to the parser, and as a browser reads it."""
    assert parse(markup) == intended
    assert parse(markup, browser=True) == as_browser_reads(intended)


@dataclass(frozen=True, eq=False)
class QueueLink:
    """An href to the approval queue for ``agent``: the slug comes back whole from the
    query string, and the URL holds nothing else."""

    agent: str

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, str):
            return NotImplemented
        url = urlsplit(other)
        where = (url.scheme, url.netloc, url.path, url.fragment)
        query = parse_qs(url.query, keep_blank_values=True, strict_parsing=True)
        return where == ("", "", reverse("approvals"), "") and query == {"agent": [self.agent]}

    def __hash__(self) -> int:
        return hash(self.agent)


# --- what the module means to build ------------------------------------------------


def memory_href(memory_id: str) -> str:
    return f"{reverse('memory-list')}{memory_id}/"


Words = Callable[[tuple[str, ...]], str]


def intended_fragments(
    fragments: Iterable[PromptFragment], words: Words, tips: Iterable[int]
) -> tuple[list[Node], list[Node]]:
    """The fragment elements of a ``<pre>``, and the tooltips of its memory fragments."""
    numbers = iter(tips)
    parts: list[Node] = []
    tooltips: list[Node] = []
    for fragment in fragments:
        text: list[Node] = [Exact(fragment.text)] if fragment.text else []
        if fragment.source != "memory":
            parts.append(Tag("span", [("class", "frag"), ("data-source", "authored")], text))
            continue
        tip = f"tip-{next(numbers)}"
        said = words(fragment.memory_ids)
        attrs: list[tuple[str, object]] = [
            ("class", "frag frag-memory"),
            ("data-source", "memory"),
            ("data-memory-ids", " ".join(fragment.memory_ids)),
            ("href", memory_href(fragment.memory_ids[0])),
            ("aria-describedby", tip),
            ("data-tip", said),
        ]
        parts.append(Tag("a", attrs, text))
        tip_attrs: list[tuple[str, object]] = [
            ("class", "frag-tip"),
            ("role", "tooltip"),
            ("id", tip),
            ("hidden", None),
        ]
        tooltips.append(Tag("span", tip_attrs, nodes(said)))
    return parts, tooltips


def intended_drops(
    reason: str, explained: Iterable[Explanation], briefs: dict[str, Any]
) -> list[Node]:
    """The drops panel's list items."""
    items: list[Node] = []
    for explanation in explained:
        memory_id = explanation.memory_id
        brief = briefs.get(memory_id)
        body: list[Node]
        if brief is None:
            body = [Tag("code", [], nodes(memory_id))]
        else:
            body = [Tag("span", [("class", "kind")], nodes(brief["kind"]))]
            if brief["label"]:
                body += [" ", Tag("span", [("class", "label")], nodes(brief["label"]))]
            body += [" ", Tag("span", [("class", "drop-text")], nodes(brief["snippet"]))]
        why: list[Node] = []
        for piece in explanation.pieces:
            if piece.link is None:
                why.append(piece.text)
            elif piece.link.kind == "memory":
                why.append(Tag("a", [("href", memory_href(piece.link.target))], nodes(piece.text)))
            else:
                why.append(Tag("a", [("href", QueueLink(piece.link.target))], nodes(piece.text)))
        children: list[Node] = [
            Tag("a", [("class", "drop-memory"), ("href", memory_href(memory_id))], body),
            Tag("p", [("class", "drop-why")], nodes(*why)),
        ]
        if explanation.place:
            children.append(Tag("p", [("class", "drop-place")], nodes(explanation.place)))
        attrs: list[tuple[str, object]] = [
            ("class", "drop"),
            ("data-memory-id", memory_id),
            ("data-drop-reason", reason),
        ]
        items.append(Tag("li", attrs, children))
    return items


# --- hostile text --------------------------------------------------------------------

# Any character but NUL (HTML reads it as U+FFFD) and lone surrogates (not UTF-8).
CHARACTERS = st.characters(exclude_categories=["Cs"], exclude_characters="\x00")

HOSTILE = (
    "<",
    ">",
    "&",
    '"',
    "'",
    "</a>",
    "</span>",
    "</code>",
    "</p>",
    "</li>",
    "</pre>",
    "<script>alert(1)</script>",
    '"onmouseover="alert(1)',
    "' onmouseover='alert(1)",
    '" hidden x="',
    "<a href=//evil.example>",
    "<!--",
    "-->",
    "<!DOCTYPE html>",
    "<![CDATA[x]]>",
    "<?x?>",
    "<br/>",
    "&amp;",
    "&lt;",
    "&#13;",
    "&#x0D;",
    "&#128;",
    "&nbsp",
    "&copy",
    "\r",
    "\n",
    "\r\n",
    "\n\r",
    "\r\r\n",
    "\t",
    "\v",
    "\f",
    "\x01",
    "\x1b",
    "\x7f",
    "\x85",
    "\x9f",
    "\u2028",
    "\u2029",
    "\u202e",
    "\ufeff",
    "\ufffd",
    "\uffff",
    "\U0001f600",
    "\U0001d54f",
    "\U000e0041",
    "\U0010fffd",
    " ",
    "/",
    "../",
    "?",
    "#",
    "%",
    "%2F",
    "+",
    ";",
    "=",
    "tip-1",
    "javascript:alert(1)",
)

_PIECES = st.lists(
    st.one_of(st.sampled_from(HOSTILE), st.text(CHARACTERS, min_size=1, max_size=6)),
    min_size=1,
    max_size=4,
).map("".join)


def _fill(pattern: str, size: int) -> str:
    """``pattern`` repeated to exactly ``size`` characters."""
    return (pattern * (size // len(pattern) + 1))[:size]


@cache
def hostile(max_size: int, min_size: int = 0) -> st.SearchStrategy[str]:
    """Hostile text of ``min_size`` (0 or 1) to ``max_size`` characters."""
    short = _PIECES.map(lambda text: text[:max_size])
    return st.one_of(st.just(""), short) if min_size == 0 else short


@cache
def at_limit(max_size: int, min_size: int = 0) -> st.SearchStrategy[str]:
    """Hostile text repeated to nearly ``max_size`` characters, or exactly."""
    return st.builds(_fill, _PIECES, st.integers(max(min_size, max_size * 9 // 10), max_size))


Texts = Callable[[int, int], st.SearchStrategy[str]]

# The app's limits: an authored run of the prompt holds a prose field (PROSE_MAX); a
# record id is at most 32 characters and an agent's slug 64; a kind 32; a brief's snippet
# is SNIPPET_CHARS and an ellipsis; a sentence quotes values cut to 90 or 200 characters
# beside section titles and keys. Tooltips tell a few memories' provenance.
FRAGMENT_MAX = PROSE_MAX
ID_MAX = 64
KIND_MAX = 32
TIP_MAX = 2_000
PIECE_MAX = 2_000

HOSTILE_IDS = hostile(ID_MAX, 1)
# What memory.core.records.RECORD_ID_PATTERN allows: the ids the server gives memories.
record_ids = st.text(string.digits + string.ascii_lowercase, min_size=1, max_size=32)


def fragments(
    text_max: int = FRAGMENT_MAX, text: Texts = hostile, most: int = 5
) -> st.SearchStrategy[tuple[PromptFragment, ...]]:
    """Authored and memory fragments, validated by the real model."""
    ids = st.lists(text(ID_MAX, 1), min_size=1, max_size=3).map(tuple)
    one = st.one_of(
        st.builds(lambda said: PromptFragment(source="authored", text=said), text(text_max, 1)),
        st.builds(memory, text(text_max, 1), ids),
    )
    return st.lists(one, min_size=1, max_size=most).map(tuple)


def tip_words(
    data: st.DataObject, fragments: Iterable[PromptFragment], text: Texts = hostile
) -> Words:
    """A tooltip for each memory fragment's ids."""
    said = {f.memory_ids: data.draw(text(TIP_MAX, 0)) for f in fragments if f.memory_ids}
    return said.__getitem__


def explanations(ids: st.SearchStrategy[str], text: Texts) -> st.SearchStrategy[Explanation]:
    """Explanations of memories with these ids, naming others of them in their links."""
    links = st.one_of(
        st.none(),
        st.builds(Link, st.just("memory"), ids),
        st.builds(Link, st.just("approvals"), text(ID_MAX, 0)),  # an agent's slug
    )
    facts = st.builds(
        Facts,
        memory_id=ids,
        reason=st.one_of(st.none(), text(KIND_MAX, 0)),
        section=st.one_of(st.none(), text(SECTION_ID_MAX, 0)),
        section_title=st.one_of(st.none(), text(TITLE_MAX, 0)),
        key=st.one_of(st.none(), text(KEY_MAX, 0)),
    )
    pieces = st.lists(st.builds(Piece, text(PIECE_MAX, 0), links), max_size=4).map(tuple)
    return st.builds(Explanation, facts, pieces)


def briefs(text: Texts) -> st.SearchStrategy[dict[str, Any] | None]:
    """What ``memory.queries.record_briefs`` says of a memory, or nothing."""
    return st.one_of(
        st.none(),
        st.fixed_dictionaries(
            {
                "kind": text(KIND_MAX, 0),
                "label": st.one_of(st.none(), text(LABEL_MAX, 0)),
                "snippet": text(SNIPPET_CHARS + 1, 0),
            }
        ),
    )


def drops(
    ids: st.SearchStrategy[str] = HOSTILE_IDS, text: Texts = hostile
) -> st.SearchStrategy[tuple[list[Explanation], dict[str, Any]]]:
    """Explanations and the briefs of some of their memories."""
    explained = st.lists(explanations(ids, text), max_size=3)
    brief = briefs(text)

    @st.composite
    def draw_drops(draw: st.DrawFn) -> tuple[list[Explanation], dict[str, Any]]:
        found = draw(explained)
        known = {e.memory_id: draw(brief) for e in found}
        return found, {mid: said for mid, said in known.items() if said is not None}

    return draw_drops()


# --- fragments -----------------------------------------------------------------------


@PROPERTY
@given(fragments(), st.integers(1, 10_000), st.data())
def test_fragments_read_back_as_their_text_and_hooks(
    frags: tuple[PromptFragment, ...], first: int, data: st.DataObject
) -> None:
    words = tip_words(data, frags)
    made = fragments_html(frags, words, count(first))
    parts, tips = intended_fragments(frags, words, count(first))
    both_readings(made["html"], parts)
    both_readings(made["tips"], tips)
    # The contract: each fragment element's textContent is its text, CR included.
    shown = parse(made["html"], browser=True)
    assert [text_of(node) for node in shown] == [f.text for f in frags]


@PROPERTY
@given(
    st.lists(
        st.builds(memory, hostile(200, 1), st.lists(record_ids, min_size=1, max_size=3).map(tuple)),
        max_size=4,
    )
)
def test_memory_fragments_link_to_their_first_memory(frags: list[PromptFragment]) -> None:
    made = fragments_html(frags, lambda ids: "", count(1))
    for node, fragment in zip(parse(made["html"]), frags, strict=True):
        assert isinstance(node, Tag)
        landed = resolve(str(dict(node.attrs)["href"]))
        assert (landed.url_name, landed.kwargs) == (
            "memory-detail",
            {"record_id": fragment.memory_ids[0]},
        )


# --- the drops panel -----------------------------------------------------------------


@PROPERTY
@given(hostile(KIND_MAX), drops())
def test_drop_items_read_back_as_their_text_and_links(
    reason: str, dropped: tuple[list[Explanation], dict[str, Any]]
) -> None:
    explained, known = dropped
    both_readings(drop_items(reason, explained, known), intended_drops(reason, explained, known))


def hrefs(nodes: Iterable[Node]) -> list[str]:
    found = []
    for node in nodes:
        if isinstance(node, Tag):
            found += [str(v) for k, v in node.attrs if k == "href"] + hrefs(node.children)
    return found


@settings(PROPERTY, max_examples=100)  # the escaping is the other drop test's
@given(drops(record_ids))
def test_drop_links_land_on_their_memory_or_queue(
    dropped: tuple[list[Explanation], dict[str, Any]],
) -> None:
    explained, known = dropped
    intended: list[tuple[str, object]] = []
    for explanation in explained:
        intended.append(("memory-detail", {"record_id": explanation.memory_id}))
        for link in explanation.links:
            if link.kind == "memory":
                intended.append(("memory-detail", {"record_id": link.target}))
            else:
                intended.append(("approvals", QueueLink(link.target)))
    landed: list[tuple[str, object]] = []
    for href in hrefs(parse(drop_items("over-budget", explained, known))):
        match = resolve(urlsplit(href).path)
        landed.append(
            (str(match.url_name), href if match.url_name == "approvals" else match.kwargs)
        )
    assert landed == intended


# --- text as long as the app allows ------------------------------------------------

# Each example parses a few hundred thousand characters of dense character references.
AT_LIMITS = settings(max_examples=10, deadline=None)


@AT_LIMITS
@given(fragments(text=at_limit, most=2), st.data())
def test_fragments_at_the_app_limits(
    frags: tuple[PromptFragment, ...], data: st.DataObject
) -> None:
    words = tip_words(data, frags, at_limit)
    made = fragments_html(frags, words, count(1))
    parts, tips = intended_fragments(frags, words, count(1))
    both_readings(made["html"], parts)
    both_readings(made["tips"], tips)


@AT_LIMITS
@given(at_limit(KIND_MAX), drops(at_limit(ID_MAX, 1), at_limit))
def test_drop_items_at_the_app_limits(
    reason: str, dropped: tuple[list[Explanation], dict[str, Any]]
) -> None:
    explained, known = dropped
    both_readings(drop_items(reason, explained, known), intended_drops(reason, explained, known))


# --- the prompt's sections -------------------------------------------------------------

BLOCK_KINDS = ["head", "background", "awareness", "recall"]

# Short fragments in blocks: the module counts each block's tokens.
blocks = st.lists(
    st.builds(ContextBlock, st.sampled_from(BLOCK_KINDS), fragments(40, most=3)), max_size=3
)
sections = st.builds(
    PromptSection,
    name=st.one_of(st.sampled_from([CONTEXT, "Persona", "Manual"]), hostile(TITLE_MAX)),
    source=st.sampled_from(["role", "instance"]),
    fragments=fragments(2_000, most=3),
    tokens=st.integers(0, 10**7),
)


@settings(PROPERTY, max_examples=100)  # the escaping is the fragment test's; this one numbers
@given(st.lists(sections, max_size=3), st.one_of(st.none(), blocks.map(tuple)), st.data())
def test_prompt_section_items_read_back_with_one_tooltip_numbering(
    secs: list[PromptSection], parts: tuple[ContextBlock, ...] | None, data: st.DataObject
) -> None:
    every = [f for s in secs for f in s.fragments] + [f for b in parts or () for f in b.fragments]
    words = tip_words(data, every)
    items = prompt_section_items(secs, words, parts)
    numbers = count(1)  # the tooltips are numbered across the whole page

    def check(made: dict[str, Any], frags: tuple[PromptFragment, ...]) -> None:
        shown, tips = intended_fragments(frags, words, numbers)
        both_readings(made["html"], shown)
        both_readings(made["tips"], tips)

    assert len(items) == len(secs)
    for section, item in zip(secs, items, strict=True):
        assert item["section"] is section
        assert (item["chars"], item["tokens"]) == (f"{len(section.text):,}", f"{section.tokens:,}")
        if parts is None or section.name != CONTEXT:
            assert "blocks" not in item
            check(item, section.fragments)
            continue
        assert "html" not in item
        assert [part["block"] for part in item["blocks"]] == list(parts)
        for block, part in zip(parts, item["blocks"], strict=True):
            assert part["chars"] == f"{len(block.text):,}"
            assert part["tokens"] == f"{count_tokens(block.text):,}"
            assert part["ends_blank"] == block.text.endswith("\n\n")
            check(part, block.fragments)


# --- total: any text in, well-formed HTML out ----------------------------------------

any_text = st.text(CHARACTERS, max_size=24)
any_fragment = st.one_of(
    st.builds(authored, any_text),  # the builder's own helper: may be empty
    st.builds(
        memory,
        st.text(CHARACTERS, min_size=1, max_size=24),
        st.lists(any_text, min_size=1, max_size=3),
    ),
)
any_section = st.builds(
    PromptSection,
    name=st.one_of(st.just(CONTEXT), any_text),
    source=st.sampled_from(["role", "instance"]),
    fragments=st.lists(any_fragment, min_size=1, max_size=3).map(tuple),
    tokens=st.integers(0, 10**7),
)
any_block = st.builds(
    ContextBlock, st.sampled_from(BLOCK_KINDS), st.lists(any_fragment, max_size=3).map(tuple)
)


@PROPERTY
@given(
    st.lists(any_section, max_size=2),
    st.one_of(st.none(), st.lists(any_block, max_size=2).map(tuple)),
    any_text,
    drops(any_text, hostile),
    any_text,
)
def test_every_function_is_total(
    secs: list[PromptSection],
    parts: tuple[ContextBlock, ...] | None,
    said: str,
    dropped: tuple[list[Explanation], dict[str, Any]],
    reason: str,
) -> None:
    made: list[SafeString] = []
    for item in prompt_section_items(secs, lambda ids: said, parts):
        for part in item.get("blocks", [item]):
            made += [part["html"], part["tips"]]
    made.append(drop_items(reason, *dropped))
    for markup in made:
        assert isinstance(markup, SafeString)
        parse(markup)
        parse(markup, browser=True)


@PROPERTY
@given(hostile(FRAGMENT_MAX))
def test_escaped_text_holds_no_markup_and_decodes_to_itself(text: str) -> None:
    for escaped in (esc(text), exact(text)):
        assert not set(escaped) & set("<>\"'")
        bare = escaped
        for reference in ("&amp;", "&lt;", "&gt;", "&quot;", "&#x27;", "&#13;"):
            bare = bare.replace(reference, "")
        assert "&" not in bare
        assert unescape(escaped) == text
    assert "\r" not in exact(text)
    assert unescape(browser_input(exact(text))) == text


# --- examples ------------------------------------------------------------------------


def explanation(memory_id: str, *pieces: Piece, **facts: Any) -> Explanation:
    return Explanation(Facts(memory_id, **facts), pieces)


def test_nothing_makes_no_markup() -> None:
    assert prompt_section_items([], lambda ids: "tip") == []
    assert fragments_html((), lambda ids: "tip", count(1)) == {"html": "", "tips": ""}
    assert drop_items("over-budget", [], {}) == ""


def test_empty_text() -> None:
    frags = (
        authored(""),
        PromptFragment.model_construct(source="memory", text="", memory_ids=("a1", "")),
    )
    made = fragments_html(frags, lambda ids: "", count(1))
    shown, tips = intended_fragments(frags, lambda ids: "", count(1))
    both_readings(made["html"], shown)
    both_readings(made["tips"], tips)
    assert [text_of(node) for node in parse(made["html"])] == ["", ""]

    empty = {"kind": "", "label": "", "snippet": ""}
    explained = [
        explanation(
            "a1", Piece(""), Piece("", Link("memory", "")), Piece("", Link("approvals", ""))
        ),
        explanation("b2", section="", section_title="", key=""),
    ]
    made_drops = drop_items("", explained, {"a1": empty})
    both_readings(made_drops, intended_drops("", explained, {"a1": empty}))
    assert 'href="/approvals/?agent="' in made_drops
    assert "drop-place" not in made_drops  # no place: no paragraph for it


def test_text_that_is_only_an_ampersand() -> None:
    frags = (PromptFragment(source="authored", text="&"), memory("&", ["&"]))
    made = fragments_html(frags, lambda ids: "&", count(1))
    assert made["html"] == (
        '<span class="frag" data-source="authored">&amp;</span>'
        '<a class="frag frag-memory" data-source="memory" data-memory-ids="&amp;" '
        'href="/memories/&amp;/" aria-describedby="tip-1" data-tip="&amp;">&amp;</a>'
    )
    assert made["tips"] == '<span class="frag-tip" role="tooltip" id="tip-1" hidden>&amp;</span>'
    assert [text_of(node) for node in parse(made["html"], browser=True)] == ["&", "&"]

    brief = {"kind": "&", "label": "&", "snippet": "&"}
    explained = [
        explanation(
            "&",
            Piece("&"),
            Piece("&", Link("memory", "&")),
            Piece("&", Link("approvals", "&")),
            section="&",
            key="&",
        )
    ]
    made_drops = drop_items("&", explained, {"&": brief})
    both_readings(made_drops, intended_drops("&", explained, {"&": brief}))
    assert 'href="/approvals/?agent=%26"' in made_drops


def test_a_cr_lf_pair_reaches_the_reader_whole() -> None:
    frags = (PromptFragment(source="authored", text="\r\n"), memory("a\r\nb\r", ["m1"]))
    made = fragments_html(frags, lambda ids: "x\r\ny", count(1))
    # The markup starts with an element: a <pre>'s first line break stays in the text.
    assert made["html"].startswith('<span class="frag" data-source="authored">&#13;\n</span>')
    assert [text_of(node) for node in parse(made["html"], browser=True)] == ["\r\n", "a\r\nb\r"]
    # What ``exact`` is for: escaped alone, a browser reads the CR as LF.
    assert text_of(parse(f"<span>{esc(chr(13) + chr(10))}</span>", browser=True)[0]) == "\n"
    # Elsewhere the parser reads the pair back, and a browser one LF, as in any template.
    assert text_of(parse(made["tips"])[0]) == "x\r\ny"
    assert text_of(parse(made["tips"], browser=True)[0]) == "x\ny"

    brief = {"kind": "k", "label": None, "snippet": "one\r\ntwo"}
    explained = [explanation("m1", Piece("why\r"), Piece("\nnot"))]
    made_drops = drop_items("over-budget", explained, {"m1": brief})
    both_readings(made_drops, intended_drops("over-budget", explained, {"m1": brief}))
    item = parse(made_drops, browser=True)[0]
    assert isinstance(item, Tag)
    assert [text_of(child) for child in item.children] == ["k one\ntwo", "why\nnot"]


def test_a_forty_thousand_character_fragment() -> None:
    text = _fill("<script>&amp;\r\n\"onmouseover='</a>\U0001f600\x1b ", 40_000)
    frags = (PromptFragment(source="authored", text=text), memory(text, ["m1"]))
    made = fragments_html(frags, lambda ids: text, count(1))
    shown, tips = intended_fragments(frags, lambda ids: text, count(1))
    both_readings(made["html"], shown)
    both_readings(made["tips"], tips)
    assert [text_of(node) for node in parse(made["html"], browser=True)] == [text, text]
