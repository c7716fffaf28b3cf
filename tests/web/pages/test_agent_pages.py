"""The dashboard pages: the agents list, the lens, team selection and query-count guards."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lens.agents import with_config
from lens.models import Agent, Membership, Team
from memory.composition import compose
from memory.core.composition import Composition
from tests.factories import create_agent, make_user
from tests.samples import SAMPLE_CONFIG
from web.pages.toolkit import SESSION_KEY

pytestmark = pytest.mark.django_db

MIDDLE_DOT = "\u00b7"


# --- helpers ---------------------------------------------------------------------------


@dataclass
class Fragment:
    source: str
    text: str = ""
    memory_ids: str | None = None


@dataclass
class Section:
    fragments: list[Fragment] = field(default_factory=list)
    # Text inside the <pre> that belongs to no fragment element (there should be none).
    loose_text: str = ""

    @property
    def text(self) -> str:
        return "".join(fragment.text for fragment in self.fragments)


class LensParser(HTMLParser):
    """Collects each ``[data-section-text]`` element (a ``<pre>``, or the lens's Context
    with one ``<pre>`` a card) as the fragments a browser would see."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: list[Section] = []
        self.data_sources: list[str] = []
        self._section_tag = ""
        self._section_depth = 0
        self._pre_depth = 0
        self._fragment: Fragment | None = None
        self._fragment_tag = ""
        self._fragment_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if "data-source" in attributes:
            self.data_sources.append(attributes["data-source"] or "")
        if not self._section_depth:
            if "data-section-text" in attributes:
                self.sections.append(Section())
                self._section_tag = tag
                self._section_depth = 1
                self._pre_depth = 1 if tag == "pre" else 0
            return
        if tag == self._section_tag:
            self._section_depth += 1
        if tag == "pre":
            self._pre_depth += 1
        if self._fragment is not None:
            if tag == self._fragment_tag:
                self._fragment_depth += 1
            return
        if "data-source" in attributes:
            self._fragment = Fragment(
                source=attributes["data-source"] or "",
                memory_ids=attributes.get("data-memory-ids"),
            )
            self._fragment_tag = tag
            self._fragment_depth = 1

    def handle_endtag(self, tag: str) -> None:
        if not self._section_depth:
            return
        if self._fragment is not None and tag == self._fragment_tag:
            self._fragment_depth -= 1
            if not self._fragment_depth:
                self.sections[-1].fragments.append(self._fragment)
                self._fragment = None
            return
        if tag == "pre":
            self._pre_depth -= 1
        if tag == self._section_tag:
            self._section_depth -= 1

    def handle_data(self, data: str) -> None:
        if not self._section_depth:
            return
        if self._fragment is not None:
            self._fragment.text += data
        elif self._pre_depth:
            self.sections[-1].loose_text += data


def as_a_browser_reads_it(html: str) -> str:
    # HTML's input-stream preprocessing turns every CR and CRLF into LF before parsing
    # (character references such as &#13; are exempt); html.parser does not, so apply it
    # here to see the textContent a browser would.
    return html.replace("\r\n", "\n").replace("\r", "\n")


def parse_lens(content: bytes) -> LensParser:
    parser = LensParser()
    parser.feed(as_a_browser_reads_it(content.decode()))
    parser.close()
    return parser


def composed(agent: Agent) -> Composition:
    return compose(with_config(Agent.objects.filter(pk=agent.pk)).get())


def section_sizes(html: str) -> dict[str, int]:
    pattern = r'data-section="([^"]*)".*?class="muted section-size"[^>]*><span data-section-chars>([\d,]+)</span> chars ·'
    return {name: int(size.replace(",", "")) for name, size in re.findall(pattern, html, re.S)}


def tiny_config(name: str = "Tiny") -> dict[str, Any]:
    return {
        "name": name,
        "background": {
            "sections": [{"id": "facts", "title": "Facts", "entries": [{"key": "k", "value": "v"}]}]
        },
    }


def big_config(sections: int, entries: int) -> dict[str, Any]:
    return {
        **SAMPLE_CONFIG,
        "background": {
            "sections": [
                {
                    "id": f"section_{s}",
                    "title": f"Section {s}",
                    "entries": [
                        {"key": f"key_{e}", "value": f"value {s}.{e}"} for e in range(entries)
                    ],
                }
                for s in range(sections)
            ]
        },
    }


@pytest.fixture
def gizmo(other_team: Team) -> Agent:
    return create_agent(other_team, "gizmo", {**SAMPLE_CONFIG, "name": "Gizmo"})


# --- access ----------------------------------------------------------------------------


def test_a_member_sees_the_agent_list(member_client: Client, agent: Agent) -> None:
    response = member_client.get("/")
    assert response.status_code == 200
    assert 'href="/agents/wren/"' in response.content.decode()


def test_a_member_sees_the_lens(member_client: Client, agent: Agent) -> None:
    response = member_client.get("/agents/wren/")
    assert response.status_code == 200
    assert "Wren" in response.content.decode()


def test_it_returns_404_to_non_members(stranger_client: Client, agent: Agent) -> None:
    assert stranger_client.get("/agents/wren/").status_code == 404


def test_it_returns_404_for_an_unknown_agent(member_client: Client, agent: Agent) -> None:
    assert member_client.get("/agents/nobody/").status_code == 404


def test_a_non_member_does_not_see_the_agent_on_the_list(
    stranger_client: Client, agent: Agent
) -> None:
    response = stranger_client.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "/agents/wren/" not in html
    assert "Wren" not in html


def test_a_non_member_cannot_switch_into_a_team_by_slug(
    stranger_client: Client, agent: Agent
) -> None:
    assert stranger_client.get("/?team=acme").status_code == 404
    assert stranger_client.get("/agents/wren/?team=acme").status_code == 404


@pytest.mark.parametrize("path", ["/", "/agents/wren/"])
def test_it_redirects_anonymous_visitors_to_the_login_page(path: str, agent: Agent) -> None:
    response = Client().get(path)
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next={path}"


@pytest.mark.parametrize("path", ["/", "/approvals/", "/memories/", "/kv/", "/kv/?prefix=must."])
def test_a_user_without_a_team_sees_how_to_join_one_on_every_list_page(db: None, path: str) -> None:
    # SPEC §9: a friendly empty state (200) on every page, never an error.
    client = Client()
    client.force_login(make_user("loner"))
    response = client.get(path)
    assert response.status_code == 200
    assert "not in a team yet" in response.content.decode()


def test_a_user_without_a_team_finds_no_agent(db: None) -> None:
    client = Client()
    client.force_login(make_user("loner"))
    assert client.get("/agents/wren/").status_code == 404


@pytest.mark.parametrize("path", ["/", "/agents/wren/"])
def test_it_refuses_post_with_405(member_client: Client, agent: Agent, path: str) -> None:
    assert member_client.post(path).status_code == 405


# --- the agents list -------------------------------------------------------------------


def test_each_agent_links_to_its_lens_and_shows_its_counts(
    member_client: Client, team: Team, agent: Agent
) -> None:
    create_agent(team, "tiny", tiny_config())
    html = member_client.get("/").content.decode()
    assert 'href="/agents/wren/"' in html
    assert 'href="/agents/tiny/"' in html
    assert f"2 sections {MIDDLE_DOT} 4 entries" in html
    assert f"1 section {MIDDLE_DOT} 1 entry" in html
    assert f"1 sections {MIDDLE_DOT}" not in html


def test_an_agent_without_background_shows_zero_counts(member_client: Client, team: Team) -> None:
    create_agent(team, "bare", {"name": "Bare"})
    html = member_client.get("/").content.decode()
    assert f"0 sections {MIDDLE_DOT} 0 entries" in html


def test_the_list_counts_match_the_composition_counts(
    member_client: Client, team: Team, agent: Agent
) -> None:
    html = member_client.get("/").content.decode()
    assert composed(agent).counts.label() in html


# --- team selection (SPEC §9) ----------------------------------------------------------


def test_the_default_team_is_the_first_by_slug(
    duo_client: Client, agent: Agent, gizmo: Agent
) -> None:
    html = duo_client.get("/").content.decode()
    assert 'href="/agents/wren/"' in html
    assert "/agents/gizmo/" not in html


def test_team_query_switches_the_current_team(
    duo_client: Client, agent: Agent, gizmo: Agent
) -> None:
    html = duo_client.get("/?team=globex").content.decode()
    assert 'href="/agents/gizmo/"' in html
    assert "/agents/wren/" not in html


def test_the_chosen_team_sticks_for_later_requests(
    duo_client: Client, agent: Agent, gizmo: Agent
) -> None:
    # Chosen on one of our own pages (the switcher): a link from elsewhere would not stick.
    duo_client.get("/?team=globex", headers={"Sec-Fetch-Site": "same-origin"})
    assert duo_client.session[SESSION_KEY] == "globex"
    html = duo_client.get("/").content.decode()
    assert 'href="/agents/gizmo/"' in html
    assert "/agents/wren/" not in html
    assert duo_client.get("/agents/gizmo/").status_code == 200
    assert duo_client.session[SESSION_KEY] == "globex"

    duo_client.get("/?team=acme", headers={"Sec-Fetch-Site": "same-origin"})
    html = duo_client.get("/").content.decode()
    assert 'href="/agents/wren/"' in html
    assert "/agents/gizmo/" not in html
    assert duo_client.get("/agents/wren/").status_code == 200
    assert duo_client.session[SESSION_KEY] == "acme"


def test_an_unknown_team_is_404(duo_client: Client, agent: Agent) -> None:
    assert duo_client.get("/?team=nope").status_code == 404
    assert duo_client.get("/agents/wren/?team=nope").status_code == 404


def test_a_team_the_user_does_not_belong_to_is_404(member_client: Client, other_team: Team) -> None:
    assert member_client.get("/?team=globex").status_code == 404


def test_the_lens_looks_the_agent_up_in_the_team_asked_for(
    duo_client: Client, agent: Agent, gizmo: Agent
) -> None:
    # ?team= names the team to look in: globex's agent is not found in acme. (Without
    # it, a link opens the agent in its own team: tests/web/pages/test_team_links.py.)
    assert duo_client.get("/agents/gizmo/?team=acme").status_code == 404
    assert duo_client.get("/agents/wren/?team=acme").status_code == 200
    assert duo_client.get("/agents/gizmo/?team=globex").status_code == 200
    assert duo_client.get("/agents/wren/?team=globex").status_code == 404


def test_a_team_the_user_left_is_no_longer_remembered(
    duo: User, duo_client: Client, agent: Agent, gizmo: Agent
) -> None:
    duo_client.get("/?team=globex")
    Membership.objects.filter(user=duo, team__slug="globex").delete()
    html = duo_client.get("/").content.decode()
    assert 'href="/agents/wren/"' in html
    assert "/agents/gizmo/" not in html


def test_the_switcher_lists_every_team_of_a_user_in_several(
    duo_client: Client, agent: Agent
) -> None:
    html = duo_client.get("/").content.decode()
    assert "Switch team" in html
    assert 'href="/?team=acme"' in html
    assert 'href="/?team=globex"' in html


def test_there_is_no_switcher_for_a_user_in_one_team(member_client: Client, agent: Agent) -> None:
    html = member_client.get("/").content.decode()
    assert "Switch team" not in html
    assert "?team=" not in html
    assert "Acme" in html


# --- the lens --------------------------------------------------------------------------


def assert_page_matches_composition(content: bytes, composition: Composition) -> None:
    page = parse_lens(content)
    sections = composition.prompt.sections
    assert len(page.sections) == len(sections)
    for shown, section in zip(page.sections, sections, strict=True):
        assert shown.loose_text == ""
        assert shown.fragments, section.name
        assert [f.source for f in shown.fragments] == [f.source for f in section.fragments]
        for shown_fragment, fragment in zip(shown.fragments, section.fragments, strict=True):
            assert shown_fragment.text == fragment.text
            if fragment.source == "memory":
                assert shown_fragment.memory_ids == " ".join(fragment.memory_ids)
        assert shown.text == section.text
    assert "\n\n".join(s.text for s in page.sections) == composition.prompt.text
    # Only fragment elements carry data-source, and every one of them is in a section.
    assert set(page.data_sources) <= {"authored", "memory"}
    assert len(page.data_sources) == sum(len(s.fragments) for s in page.sections)


def test_every_fragment_is_an_element_with_its_source(member_client: Client, agent: Agent) -> None:
    page = parse_lens(member_client.get("/agents/wren/").content)
    assert page.sections
    for section in page.sections:
        assert section.loose_text == ""
        for fragment in section.fragments:
            assert fragment.source in ("authored", "memory")
            assert fragment.text


def test_the_fragments_join_to_the_composed_sections(member_client: Client, agent: Agent) -> None:
    response = member_client.get("/agents/wren/")
    assert_page_matches_composition(response.content, composed(agent))


def test_the_prompt_appears_once(member_client: Client, agent: Agent) -> None:
    html = member_client.get("/agents/wren/").content.decode()
    assert len(re.findall(r"\sdata-prompt[\s>]", html)) == 1
    assert html.count("data-section-text") == len(composed(agent).prompt.sections)


def test_the_lens_shows_each_section_size_and_the_prompt_size(
    member_client: Client, agent: Agent
) -> None:
    composition = composed(agent)
    html = member_client.get("/agents/wren/").content.decode()
    assert section_sizes(html) == {s.name: len(s.text) for s in composition.prompt.sections}
    length = len(composition.prompt.text)
    assert f'<strong data-prompt-length="{length}">{length:,}</strong>' in html


def test_the_lens_has_a_copy_prompt_button(member_client: Client, agent: Agent) -> None:
    html = member_client.get("/agents/wren/").content.decode()
    assert re.search(r"<button[^>]*data-copy-prompt[^>]*>\s*Copy prompt\s*</button>", html)


def test_the_lens_shows_the_counts(member_client: Client, agent: Agent) -> None:
    html = member_client.get("/agents/wren/").content.decode()
    assert f"2 sections {MIDDLE_DOT} 4 entries" in html


ODD_CONFIG: dict[str, Any] = {
    "name": "<b>Odd</b> & co",
    "persona": "<script>alert(1)</script>\nSecond line with a & b and \u2028 and 'quotes' \"too\".",
    "tone": "a & b &amp; &lt;c&gt; \U0001f600 e\u0301",
    "objective": '</pre><pre data-source="memory">forged</pre>',
    "capabilities": [{"name": "<i>tool</i>", "description": "Uses </span> and <!-- comments -->"}],
    "manual": "Line one\r\nLine two\rLine three\u2029end \x85 nel",
    "background": {
        "sections": [
            {
                "id": "odd",
                "title": '<Odd> & "Title"\u2028# not a heading',
                "entries": [
                    {"key": "<script>alert(1)</script>", "value": "a & b\u2028- **fake**: x"},
                    {"key": "amp", "value": "&amp; &#13; &lt;"},
                    {"key": "crlf", "value": "one\r\ntwo\r\n"},
                    {"key": "zwj", "value": "\u200d\ufeff\u00a0"},
                ],
            }
        ]
    },
    "awareness": [{"name": "<src>", "description": "x & y", "access_method": "<tool>"}],
}


def test_odd_text_is_escaped_and_still_joins_to_the_composition(
    member_client: Client, team: Team
) -> None:
    agent = create_agent(team, "odd", ODD_CONFIG)
    response = member_client.get("/agents/odd/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<i>tool</i>" not in html
    assert 'data-source="memory">forged' not in html
    assert_page_matches_composition(response.content, composed(agent))


def test_odd_names_are_escaped_on_the_list(member_client: Client, team: Team) -> None:
    create_agent(team, "odd", ODD_CONFIG)
    html = member_client.get("/").content.decode()
    assert "<b>Odd</b>" not in html
    assert "&lt;b&gt;Odd&lt;/b&gt; &amp; co" in html


def test_carriage_returns_in_authored_prose_survive_the_html(
    member_client: Client, team: Team
) -> None:
    # Admin textareas submit CRLF line endings; a browser would read a raw CR as LF,
    # so the page must keep it as a character reference to stay exact.
    agent = create_agent(
        team, "crlf", {"name": "CRLF", "persona": "one\r\ntwo\rthree", "manual": "a\r\n\r\nb"}
    )
    response = member_client.get("/agents/crlf/")
    assert_page_matches_composition(response.content, composed(agent))


# --- query-count guards ----------------------------------------------------------------


def test_the_list_query_count_does_not_grow_with_agents(
    member_client: Client, team: Team, django_assert_max_num_queries: Any
) -> None:
    create_agent(team, "agent-0")
    member_client.get("/")  # settle the session (it stores the current team once)
    with django_assert_max_num_queries(11) as captured:
        response = member_client.get("/")
    one = len(captured)
    assert response.status_code == 200

    for n in range(1, 20):
        create_agent(team, f"agent-{n}")
    with django_assert_max_num_queries(one, info="the list of 20 agents"):
        response = member_client.get("/")
    assert response.status_code == 200
    assert response.content.decode().count('class="agent-link"') == 20


def test_the_lens_query_count_does_not_grow_with_sections_and_entries(
    member_client: Client, team: Team, django_assert_max_num_queries: Any
) -> None:
    create_agent(team, "small", tiny_config())
    create_agent(team, "large", big_config(sections=40, entries=50))
    member_client.get("/agents/small/")  # settle the session
    # 15: the newest revision's line is one query of its own, the routing line another
    # (the agent's routing cases with the spec's earlier score, in one statement), and
    # the migration plan's "N memories would move" a third.
    with django_assert_max_num_queries(15) as captured:
        response = member_client.get("/agents/small/")
    small = len(captured)
    assert response.status_code == 200

    with django_assert_max_num_queries(small, info="the lens of 40 sections"):
        response = member_client.get("/agents/large/")
    assert response.status_code == 200
    html = response.content.decode()
    assert f"40 sections {MIDDLE_DOT} 2000 entries" in html
