"""The revisions pages (SPEC §14 "Pages", §9): an agent's history newest first with the
compare form and Restore, one revision with its diffs, the diffs as files, and the lens's
revision line; who may see them and who may restore; query counts that do not grow with
revisions; a huge diff drawn cut short.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from lens.actors import Actor
from lens.core.config import AgentConfig
from lens.core.diffs import PAGE_LINES
from lens.models import Agent, Revision, Team, Via
from lens.revisions import current_number
from memory.configuring import store_agent
from memory.revision_diffs import revision_diff
from tests.factories import create_agent, logged_in, make_user, many_sections, memory_config
from tests.pages import Dom, alert_text, assert_refusal_logged, buttons, dom
from web.pages.toolkit import SESSION_KEY

pytestmark = pytest.mark.django_db

LIST = "/agents/wren/revisions/"


def revise(team: Team, actor: Actor, n: int, start: int = 0, slug: str = "wren") -> None:
    """``n`` more revisions of ``slug``, each a new persona."""
    for i in range(start, start + n):
        config = memory_config()
        config["persona"] = f"You are Wren, version {i}."
        store_agent(team, slug, AgentConfig.model_validate(config), actor=actor)


def editor_of(team: Team, username: str = "eda") -> User:
    """A member of ``team`` who may change agents (as in the admin), and so restore."""
    user = make_user(username, team)
    user.user_permissions.add(Permission.objects.get(codename="change_agent"))
    return user


@pytest.fixture
def history(team: Team, member: User) -> Agent:
    """Wren at revision 4: created by the system, then three personas by mira."""
    agent = create_agent(team, "wren", memory_config())
    revise(team, Actor.for_user(member), 3)
    return agent


@pytest.fixture
def editor_client(team: Team) -> Client:
    return logged_in(editor_of(team))


def page_urls() -> list[str]:
    return [
        LIST,
        f"{LIST}?page=2",
        f"{LIST}2/",
        f"{LIST}4/?against=1",
        f"{LIST}1/",
        f"{LIST}3/config.diff",
        f"{LIST}3/prompt.diff?against=1",
    ]


def numbers(page: Dom) -> list[int]:
    return [int(str(e.get("data-revision-number"))) for e in page.all("data-revision-number")]


def restore_forms(page: Dom) -> list[int]:
    """The revisions a page offers to restore: each a link to its confirmation."""
    return [int(str(e.get("data-restore-link"))) for e in page.all("data-restore-link")]


def snapshot(agent: Agent) -> list[tuple[int, str, str, str]]:
    return list(
        Revision.objects.filter(agent=agent)
        .order_by("number")
        .values_list("number", "config_id", "actor", "via")
    )


def restore(client: Client, number: int, team: str | None = "acme", **extra: Any) -> Any:
    data = {} if team is None else {"team": team}
    return client.post(f"{LIST}{number}/restore/", data, **extra)


# --- who may see them --------------------------------------------------------------


def test_members_see_every_revision_page(member_client: Client, history: Agent) -> None:
    for url in page_urls():
        assert member_client.get(url).status_code == 200, url


def test_strangers_get_404_on_every_revision_page(stranger_client: Client, history: Agent) -> None:
    for url in page_urls():
        assert stranger_client.get(url).status_code == 404, url


def test_anonymous_visitors_are_sent_to_log_in(client: Client, history: Agent) -> None:
    before = snapshot(history)
    for url in page_urls():
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/accounts/login/")
    response = restore(client, 1)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    assert snapshot(history) == before


def test_a_link_to_a_revision_switches_to_its_team(
    team: Team, other_team: Team, history: Agent
) -> None:
    both = make_user("bo", other_team, team)
    client = logged_in(both)
    session = client.session
    session[SESSION_KEY] = other_team.slug
    session.save()
    page = dom(client.get(f"{LIST}2/"))
    assert "Switched to team Acme" in alert_text(page)


# --- the list ------------------------------------------------------------------------


def test_the_list_says_number_when_who_via_and_what_changed_newest_first(
    member_client: Client, team: Team, history: Agent
) -> None:
    config = memory_config()
    config["persona"] = "You are Wren, version 9."
    config["background"]["sections"].append({"id": "prefs", "title": "Preferences"})
    config["routing_spec"] = "project"
    store_agent(team, "wren", AgentConfig.model_validate(config), actor=Actor(label="token ab12…"))
    page = dom(member_client.get(LIST))
    assert numbers(page) == [5, 4, 3, 2, 1]
    newest = page.one("data-revision-number", "5")
    cells = {e.get("data-label"): e.squashed for e in newest.descendants() if e.tag == "td"}
    assert cells["Revision"] == "Revision 5 in force"
    assert cells["Who"] == "token ab12…"
    assert cells["Via"] == "API"
    assert cells["Approved by"] == "—"
    words = [li.squashed for li in newest.descendants() if li.tag == "li"]
    assert words == [
        "Persona changed",
        "Routing spec user-background → project",
        "Section Preferences (prefs) added",
    ]
    first = page.one("data-revision-number", "1")
    assert [li.squashed for li in first.descendants() if li.tag == "li"] == [
        "Agent created",
        "Sections About the User (user_profile) and User Preferences (user_preferences) added",
    ]
    assert "system" in first.squashed
    when = newest.descendants()
    assert any(e.tag == "time" and e.get("datetime") for e in when)
    assert "ago" in cells["When (UTC)"]


def test_a_long_summary_is_cut_on_the_list_and_whole_on_the_revision_page(
    member_client: Client, team: Team, history: Agent
) -> None:
    config = memory_config()
    config["persona"] = "Another."
    config["tone"] = "Dry."
    config["background"]["sections"] += [
        {"id": f"s{i}", "title": f"S {i}", "entries": [{"key": "k", "value": "v"}]}
        for i in range(8)
    ]
    config["background"]["sections"][0]["entries"].append({"key": "city", "value": "Oslo"})
    store_agent(team, "wren", AgentConfig.model_validate(config))
    row = dom(member_client.get(LIST)).one("data-revision-number", "5")
    phrases = [li.squashed for li in row.descendants() if li.tag == "li"]
    assert phrases == [
        "Persona and tone changed",
        "Entry city in user_profile added",
        "Sections S 0 (s0), S 1 (s1), S 2 (s2) and 5 more added",
    ]
    assert phrases == [li.squashed for li in row.descendants() if li.tag == "li"]
    page = dom(member_client.get(f"{LIST}5/"))
    assert [li.squashed for li in page.one("data-words").descendants() if li.tag == "li"] == (
        phrases
    )


def test_an_agent_without_revisions_says_so(member_client: Client, history: Agent) -> None:
    Revision.objects.filter(agent=history).delete()
    page = dom(member_client.get(LIST))
    assert page.all("data-no-revisions")
    assert not page.all("data-compare-form")
    assert member_client.get(f"{LIST}1/").status_code == 404


def test_the_list_is_paged_fifty_at_a_time(
    editor_client: Client, team: Team, member: User, history: Agent
) -> None:
    revise(team, Actor.for_user(member), 116, start=10)
    assert current_number(history) == 120
    first = dom(editor_client.get(LIST))
    assert numbers(first) == list(range(120, 70, -1))
    assert "Page 1 of 3 · 120 revisions" in first.one("class", "pager").squashed
    # Restore on every row but the newest, which is the one in force.
    assert restore_forms(first) == list(range(119, 70, -1))
    in_force = first.one("data-in-force").ancestor("tr")
    assert in_force is not None
    assert in_force.get("data-revision-number") == "120"
    third = dom(editor_client.get(f"{LIST}?page=3"))
    assert numbers(third) == list(range(20, 0, -1))
    assert restore_forms(third) == list(range(20, 0, -1))
    assert numbers(dom(editor_client.get(f"{LIST}?page=99"))) == numbers(third)
    assert numbers(dom(editor_client.get(f"{LIST}?page=x"))) == numbers(first)


def test_the_list_query_count_does_not_grow_with_revisions(
    editor_client: Client,
    team: Team,
    member: User,
    history: Agent,
    django_assert_max_num_queries: Any,
) -> None:
    Revision.objects.filter(agent=history, number=4).delete()  # back to 3 revisions
    editor_client.get(LIST)  # settle the session
    with django_assert_max_num_queries(12) as captured:
        assert editor_client.get(LIST).status_code == 200
    few = len(captured)
    revise(team, Actor.for_user(member), 57, start=10)
    assert current_number(history) == 60
    with django_assert_max_num_queries(few, info="the list of 60 revisions"):
        page = dom(editor_client.get(LIST))
    assert len(numbers(page)) == 50
    with django_assert_max_num_queries(few, info="page 2 of 60 revisions"):
        assert numbers(dom(editor_client.get(f"{LIST}?page=2"))) == list(range(10, 0, -1))


def test_the_revision_page_query_count_does_not_grow_with_revisions(
    member_client: Client,
    team: Team,
    member: User,
    history: Agent,
    django_assert_max_num_queries: Any,
) -> None:
    member_client.get(f"{LIST}3/")
    with django_assert_max_num_queries(20) as captured:
        assert member_client.get(f"{LIST}3/").status_code == 200
    revise(team, Actor.for_user(member), 56, start=10)
    with django_assert_max_num_queries(len(captured), info="revision 3 of 60"):
        assert member_client.get(f"{LIST}3/").status_code == 200


# --- comparing ---------------------------------------------------------------------


def test_the_compare_form_asks_the_list_and_is_sent_on(
    member_client: Client, history: Agent
) -> None:
    page = dom(member_client.get(LIST))
    form = page.one("data-compare-form")
    assert form.get("method") == "get"
    assert form.get("action") == LIST
    fields = {e.get("name"): e.get("value") for e in form.descendants() if e.tag == "input"}
    assert fields == {"from": "3", "to": "4"}  # the newest change, by default
    response = member_client.get(LIST, {"from": "1", "to": "3"})
    assert response.status_code == 302
    assert response["Location"] == f"{LIST}3/?against=1"
    shown = dom(member_client.get(response["Location"]))
    ends = shown.one("data-diff-ends")
    assert (ends.get("data-from"), ends.get("data-to")) == ("1", "3")
    words = [li.squashed for li in shown.one("data-diff-words").descendants() if li.tag == "li"]
    assert words == ["Persona changed"]
    # Backwards too: what going back from 4 to 2 would change.
    assert member_client.get(LIST, {"from": "4", "to": "2"})["Location"] == f"{LIST}2/?against=4"


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        ({"from": "0", "to": "2"}, "From: “0” is not a revision of this agent"),
        ({"from": "1", "to": "5"}, "To: “5” is not a revision of this agent"),
        ({"from": "1", "to": "two"}, "To: “two” is not a revision"),
        ({"from": "1"}, "To: nothing is not a revision"),
        ({"from": "-1", "to": "2"}, "From: “-1”"),
        ({"from": "1", "to": "9" * 40}, "To: “99999999999999999999”"),
        ({"from": "1", "to": "\u0663"}, "To: “\u0663”"),
    ],
)
def test_a_bad_comparison_is_said_and_the_list_shown(
    member_client: Client, history: Agent, query: dict[str, str], problem: str
) -> None:
    page = dom(member_client.get(LIST, query), status=400)
    error = page.one("data-compare-error").squashed
    assert problem in error
    assert "Choose a number from 1 to 4." in error
    assert numbers(page) == [4, 3, 2, 1]


def test_a_revision_compared_with_itself_has_no_diff(member_client: Client, history: Agent) -> None:
    page = dom(member_client.get(f"{LIST}3/?against=3"))
    assert page.one("data-same", "config").squashed == "The two configs are the same."
    assert page.one("data-same", "prompt").squashed == "The prompt text is the same."
    assert page.one("data-diff-words").squashed == "The two revisions declare the same."


# --- one revision ------------------------------------------------------------------


def test_a_revision_page_shows_its_facts_words_diffs_and_token_delta(
    member_client: Client, history: Agent
) -> None:
    page = dom(member_client.get(f"{LIST}3/"))
    facts = {e.get("data-fact"): e.squashed for e in page.all("data-fact")}
    revision = Revision.objects.get(agent=history, number=3)
    assert facts["number"] == "3 of 4"
    assert facts["actor"] == "mira"
    assert facts["via"] == "API"
    assert facts["sha256"] == revision.config_id
    assert revision.created_at.strftime("%Y-%m-%d %H:%M:%S") in facts["when"]
    assert [li.squashed for li in page.one("data-words").descendants() if li.tag == "li"] == [
        "Persona changed"
    ]
    found = revision_diff(history, 3)
    config_diff = page.one("data-diff", "config").text
    assert config_diff == found.config_diff
    changed = '-  "persona": "You are Wren, version 0.",\n+  "persona": "You are Wren, version 1.",'
    assert changed in config_diff
    prompt_diff = page.one("data-diff", "prompt").text
    assert prompt_diff == found.prompt_diff
    tokens = page.one("data-token-delta").squashed
    assert tokens.startswith(f"{found.tokens_from:,} → {found.tokens_to:,} tokens (")
    # Each line is marked with its kind, for colour.
    kinds = {e.get("class") for e in page.one("data-diff", "config").descendants()}
    assert kinds >= {"dl dl-add", "dl dl-delete", "dl dl-hunk", "dl dl-context"}


def test_the_first_revision_is_compared_with_nothing(member_client: Client, history: Agent) -> None:
    page = dom(member_client.get(f"{LIST}1/"))
    ends = page.one("data-diff-ends")
    assert ends.get("data-from") == "0"
    assert ends.squashed == "Nothing → revision 1 (the first)"
    found = revision_diff(history, 1)
    assert page.one("data-token-delta").squashed.startswith(f"{found.tokens_to:,} tokens")
    assert page.one("data-diff", "config").text == found.config_diff
    assert page.all("data-step-none", "previous")
    assert page.one("data-step", "next").get("href") == f"{LIST}2/"


def test_a_revision_page_links_its_neighbours_the_list_and_the_lens(
    member_client: Client, history: Agent
) -> None:
    page = dom(member_client.get(f"{LIST}2/"))
    steps = {e.get("data-step"): e.get("href") for e in page.all("data-step")}
    assert steps == {
        "previous": f"{LIST}1/",
        "next": f"{LIST}3/",
        "list": LIST,
        "lens": "/agents/wren/",
    }
    newest = dom(member_client.get(f"{LIST}4/"))
    assert newest.all("data-step-none", "next")
    assert newest.all("data-in-force")


@pytest.mark.parametrize(
    "url",
    [
        f"{LIST}5/",
        f"{LIST}0/",
        f"{LIST}99999999999999999999/",
        f"{LIST}2147483648/",
        f"{LIST}-1/",
        f"{LIST}x/",
        f"{LIST}2/?against=5",
        f"{LIST}2/?against=0",
        f"{LIST}2/?against=x",
        f"{LIST}2/?against=-1",
        f"{LIST}2/?against=99999999999999999999",
        f"{LIST}2/?against=%D9%A3",
        f"{LIST}5/config.diff",
        f"{LIST}2/config.diff?against=9",
        f"{LIST}2/other.diff",
        "/agents/nobody/revisions/",
        "/agents/nobody/revisions/1/",
    ],
)
def test_unknown_revisions_are_404(member_client: Client, history: Agent, url: str) -> None:
    response = member_client.get(url)
    assert response.status_code == 404, url
    assert b'data-error-page="404"' in response.content


def test_the_diff_downloads_are_the_whole_diffs(member_client: Client, history: Agent) -> None:
    found = revision_diff(history, 4, 1)
    response = member_client.get(f"{LIST}4/config.diff?against=1")
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="wren-revision-1-4-config.diff"'
    assert response.content.decode() == found.config_diff
    response = member_client.get(f"{LIST}4/prompt.diff?against=1")
    assert response.content.decode() == found.prompt_diff
    page = dom(member_client.get(f"{LIST}4/?against=1"))
    links = [e.get("href") for e in page.all("data-diff-download")]
    assert links == [f"{LIST}4/config.diff?against=1", f"{LIST}4/prompt.diff?against=1"]


def test_a_huge_diff_is_drawn_cut_short_with_a_count_and_a_download(
    member_client: Client, team: Team
) -> None:
    agent = create_agent(team, "wren", many_sections(40, 50))
    page = dom(member_client.get(f"{LIST}1/"))
    found = revision_diff(agent, 1)
    total = len(found.config_diff.splitlines())
    assert total > PAGE_LINES
    drawn = page.one("data-diff", "config")
    shown = [e for e in drawn.descendants() if e.tag == "span"]
    assert len(shown) == PAGE_LINES
    more = page.all("data-diff-more")[0]
    assert more.get("data-diff-more") == str(total - PAGE_LINES)
    assert f"This diff has {total} lines" in more.squashed
    response = member_client.get(f"{LIST}1/config.diff")
    assert response.content.decode() == found.config_diff
    # The list says the 42 sections in a line, not one each.
    row = dom(member_client.get(LIST)).one("data-revision-number", "1")
    assert [li.squashed for li in row.descendants() if li.tag == "li"] == [
        "Agent created",
        "Sections About the User (user_profile), User Preferences (user_preferences), "
        "Section 0 (section_0) and 39 more added",
    ]


def test_what_people_wrote_is_escaped(member_client: Client, team: Team, history: Agent) -> None:
    config = memory_config()
    config["background"]["sections"].append({"id": "x", "title": "<b>Bold</b> & co"})
    store_agent(
        team, "wren", AgentConfig.model_validate(config), actor=Actor(label="<script>x</script>")
    )
    for url in (LIST, f"{LIST}5/", "/agents/wren/"):
        html = member_client.get(url).content.decode()
        assert "<script>x</script>" not in html, url
        assert "&lt;script&gt;x&lt;/script&gt;" in html, url
    assert "<b>Bold</b>" not in member_client.get(LIST).content.decode()


# --- restoring ---------------------------------------------------------------------


def test_an_editor_restores_an_older_revision_as_a_new_one(
    editor_client: Client, history: Agent
) -> None:
    response = restore(editor_client, 2)
    assert response.status_code == 302
    assert response["Location"] == f"{LIST}?team=acme"
    rows = snapshot(history)
    assert rows[-1][0] == 5
    assert rows[-1][1:] == (rows[1][1], "eda", Via.RESTORE)
    page = dom(editor_client.get(response["Location"]))
    assert "Restored revision 2 as revision 5." in alert_text(page)
    assert numbers(page)[0] == 5
    assert page.one("data-via", "restore").ancestor("tr") is page.one("data-revision-number", "5")
    # Revision 2 now declares what is in force: it is offered as every older one is,
    # and says that restoring it changes nothing.
    assert restore_forms(page) == [4, 3, 2, 1]
    same = page.one("data-same-as-in-force")
    assert same.ancestor("tr") is page.one("data-revision-number", "2")
    assert same.squashed == "Declares what is in force"
    assert page.one("data-restore-link", "2").ancestor("tr") is same.ancestor("tr")
    two = dom(editor_client.get(f"{LIST}2/"))
    assert restore_forms(two) == [2]
    assert two.one("data-same-as-in-force").squashed == (
        "It declares what is in force now (revision 5): restoring it changes nothing."
    )


def test_restoring_the_config_in_force_changes_nothing(
    editor_client: Client, team: Team, history: Agent
) -> None:
    # Revision 5 declares what revision 2 did: restoring 2 is a no-op, and so is 5.
    revise(team, Actor(label="system"), 1, start=0)
    before = snapshot(history)
    assert before[-1][1] == before[1][1]
    page = dom(editor_client.get(LIST))
    assert 2 in restore_forms(page)  # offered, as on every older revision
    said = {
        2: "Revision 2 declares what is in force already (revision 5 has the same "
        "declarations): nothing changed, no revision written.",
        5: "Revision 5 is the one in force: nothing changed, no revision written.",
    }
    for number, message in said.items():
        response = restore(editor_client, number)
        assert response.status_code == 302
        page = dom(editor_client.get(response["Location"]))
        assert message in alert_text(page)
    assert snapshot(history) == before


def test_a_member_who_may_not_change_agents_sees_no_restore_and_is_told_why(
    member_client: Client, history: Agent
) -> None:
    for url in (LIST, f"{LIST}2/"):
        page = dom(member_client.get(url))
        assert restore_forms(page) == []
        assert "Restore" not in buttons(page)
        note = page.one("data-restore-note").squashed
        assert "needs the permission to change agents (lens.change_agent)" in note


def test_a_member_who_may_not_change_agents_is_told_an_older_revision_is_in_force(
    member_client: Client, team: Team, history: Agent
) -> None:
    revise(team, Actor(label="system"), 1, start=0)  # revision 5 declares what 2 did
    page = dom(member_client.get(f"{LIST}2/"))
    assert restore_forms(page) == []
    assert page.one("data-same-as-in-force").squashed == (
        "It declares what is in force now (revision 5): restoring it would change nothing."
    )
    assert not page.all("data-restore-note")


def test_a_forged_restore_is_refused_with_nothing_changed(
    member_client: Client, history: Agent
) -> None:
    before = snapshot(history)
    response = restore(member_client, 1)
    assert response.status_code == 403
    assert b"lens.change_agent" in response.content
    assert snapshot(history) == before


def test_a_refused_restore_is_logged_in_one_line_without_a_traceback(
    member_client: Client, history: Agent, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO):
        assert restore(member_client, 1).status_code == 403
    assert_refusal_logged(caplog, f"{LIST}1/restore/")


def test_a_restore_without_its_csrf_token_is_refused(team: Team, history: Agent) -> None:
    client = logged_in(editor_of(team), enforce_csrf_checks=True)
    before = snapshot(history)
    assert restore(client, 1).status_code == 403
    assert snapshot(history) == before


def test_the_restore_form_carries_its_token_and_team(editor_client: Client, history: Agent) -> None:
    page = dom(editor_client.get(f"{LIST}2/restore/"))
    form = page.one("data-restore-form", "2")
    assert form.get("method") == "post"
    assert form.get("action") == f"{LIST}2/restore/"
    names = {e.get("name"): e.get("value") for e in form.descendants() if e.tag == "input"}
    assert names["team"] == "acme"
    assert names["csrfmiddlewaretoken"]


def test_a_restore_for_another_team_or_none_is_refused_with_nothing_changed(
    team: Team, other_team: Team, history: Agent, stranger: User
) -> None:
    editor = logged_in(editor_of(team))
    before = snapshot(history)
    response = restore(editor, 1, team=None)
    assert response.status_code == 400
    assert b"does not say which team" in response.content
    assert restore(editor, 1, team="globex").status_code == 400
    # A stranger who may change agents: their own team has no wren, ours is not theirs.
    stranger.user_permissions.add(Permission.objects.get(codename="change_agent"))
    outsider = logged_in(stranger)
    assert restore(outsider, 1, team="globex").status_code == 404
    assert restore(outsider, 1, team="acme").status_code == 400
    assert snapshot(history) == before


def test_restoring_an_unknown_revision_is_404(editor_client: Client, history: Agent) -> None:
    before = snapshot(history)
    assert restore(editor_client, 9).status_code == 404
    assert editor_client.post(f"{LIST}0/restore/", {"team": "acme"}).status_code == 404
    assert editor_client.get(f"{LIST}9/restore/").status_code == 404
    assert editor_client.put(f"{LIST}1/restore/").status_code == 405
    assert snapshot(history) == before


# --- the lens's revision line ------------------------------------------------------


def test_the_lens_says_the_newest_revision_and_links_the_history(
    member_client: Client, team: Team, history: Agent
) -> None:
    page = dom(member_client.get("/agents/wren/"))
    line = page.one("data-revision")
    assert line.get("data-revision") == "4"
    assert line.squashed.startswith("Revision 4 by mira, ")
    assert line.squashed.endswith("ago · History")
    assert page.links("History") == [LIST]
    assert page.links("Revision 4") == [f"{LIST}4/"]
    logged_in(editor_of(team)).post(f"{LIST}1/restore/", {"team": "acme"})
    line = dom(member_client.get("/agents/wren/")).one("data-revision")
    assert line.squashed.startswith("Revision 5 by eda via restore, ")


def test_the_lens_of_an_agent_without_revisions_has_no_revision_line(
    member_client: Client, history: Agent
) -> None:
    Revision.objects.filter(agent=history).delete()
    page = dom(member_client.get("/agents/wren/"))
    assert page.all("data-revision") == []
    assert page.links("History") == []


def test_a_removed_section_is_named_by_its_last_title_on_its_revision_page(
    member_client: Client, team: Team, history: Agent
) -> None:
    config = memory_config()
    config["persona"] = "You are Wren, version 2."  # as revision 4 has it
    config["background"]["sections"].pop()  # user_preferences, "User Preferences"
    store_agent(team, "wren", AgentConfig.model_validate(config))
    said = "Section User Preferences (user_preferences) removed"
    page = dom(member_client.get(f"{LIST}5/"))
    assert [li.squashed for li in page.one("data-words").descendants() if li.tag == "li"] == [said]
    # The list says it in the same words: those of the revision's own time.
    row = dom(member_client.get(LIST)).one("data-revision-number", "5")
    assert [li.squashed for li in row.descendants() if li.tag == "li"] == [said]
