"""The "Try a memory" card (SPEC §5.7, §9) on the agent's tools page, linked from the
top of the lens: the routing preview in words. The form carries its team; htmx gets the
result alone, a plain post the whole tools page; form errors come back with the form;
other teams, strangers and forged posts are refused; and nothing is ever written.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lens.core.render import ENTRY_LINE_OVERHEAD
from lens.models import Agent, Team
from tests.api_calls import ApiClient
from tests.factories import (
    HTMX,
    VAULT_CONFIG,
    Unchanged,
    approvals_config,
    create_agent,
    logged_in,
    memory_config,
    remember,
)
from tests.pages import Dom, Element, dom, fragment

pytestmark = pytest.mark.django_db

TRY = "/agents/{slug}/try/"

CONFIGS: dict[str, dict[str, Any]] = {
    # auto "About the User" with the authored "timezone"; guarded preferences
    "wren": memory_config(),
    # guarded preferences holding the authored "theme"
    "queue": {**approvals_config(), "name": "Queue"},
    "vault": VAULT_CONFIG,
    # no preferences section declared
    "solo": memory_config(preferences=None, name="Solo"),
    # no routing spec at all
    "plain": {**memory_config(name="Plain"), "routing_spec": None},
}


@pytest.fixture
def agents(team: Team) -> dict[str, Agent]:
    return {slug: create_agent(team, slug, config) for slug, config in CONFIGS.items()}


@pytest.fixture
def wren(agents: dict[str, Agent]) -> Agent:
    return agents["wren"]


def form(team: str = "acme", **fields: str) -> dict[str, str]:
    """What the card posts: its team, and a save's fields (blank ones sent empty)."""
    return {"team": team, "kind": "profile", "label": "", "content": "", "supersedes": "", **fields}


def try_it(client: Client, data: dict[str, str], slug: str = "wren", *, htmx: bool = False) -> Any:
    return client.post(TRY.format(slug=slug), data, headers=HTMX if htmx else {})


def result_of(page: Dom) -> Element:
    return page.one("data-try-result")


def answer_in(result: Element) -> Element:
    """The answer inside a result (there is none when the form had errors)."""
    (answer,) = [e for e in result.descendants() if e.get("data-try-outcome")]
    return answer


def answer_of(page: Dom) -> Element:
    return answer_in(result_of(page))


def placement_in(answer: Element) -> str:
    (placement,) = [e for e in answer.descendants() if "data-try-placement" in e.attrs]
    return placement.squashed


def the_result_alone(response: Any) -> Dom:
    """An htmx answer: the result div and nothing else (no form, no page)."""
    page = fragment(response)
    roots = [e for e in page.elements if e.parent is None]
    assert [root.get("id") for root in roots] == ["try-result"]
    assert "data-try-result" in roots[0].attrs
    assert not page.all("name", "kind")
    assert not page.all("data-prompt")
    return page


def the_whole_page(response: Any) -> Dom:
    """A post without htmx: the tools page again (200), the card and the result (and no
    prompt: the page reads no composition)."""
    assert response.status_code == 200
    page = dom(response)
    assert page.one("data-agent-tools")
    assert not page.all("data-prompt")
    assert page.one("name", "team", tag="input")
    assert page.one("id", "try-result")
    return page


def both_ways(client: Client, data: dict[str, str], slug: str = "wren") -> list[Element]:
    """Post ``data`` with and without htmx; the two results, checked to say the same."""
    unchanged = Unchanged(ignore=("sessions.Session",))
    partial = result_of(the_result_alone(try_it(client, data, slug, htmx=True)))
    whole = result_of(the_whole_page(try_it(client, data, slug)))
    assert partial.squashed == whole.squashed
    unchanged.check()
    return [partial, whole]


# --- the card on the tools page, linked from the lens ------------------------------------


def test_the_lens_links_to_both_tools_from_its_head(member_client: Client, wren: Agent) -> None:
    page = dom(member_client.get("/agents/wren/"))
    links = {e.get("data-tool-link"): e for e in page.all("data-tool-link")}
    assert {name: e.get("href") for name, e in links.items()} == {
        "try": "/agents/wren/try/#try",
        "recall": "/agents/wren/try/#recall",
    }
    head = links["try"].ancestor("div")
    assert head is not None
    assert "head-actions" in (head.get("class") or "")
    # The forms live on the tools page only: the lens's side column keeps the outline,
    # the routing report and the legend.
    assert not page.all("name", "kind")
    assert not page.all("name", "recall")
    tools = dom(member_client.get("/agents/wren/try/"))
    assert tools.one("id", "try").tag == "section"
    assert tools.one("id", "recall").tag == "section"


def test_the_tools_page_has_the_card_with_its_team(member_client: Client, wren: Agent) -> None:
    page = dom(member_client.get("/agents/wren/try/"))
    team = page.one("name", "team", tag="input")
    assert (team.get("type"), team.get("value")) == ("hidden", "acme")
    card = team.ancestor("form")
    assert card is not None
    assert card.get("method") == "post"
    assert (card.get("action") or "").startswith("/agents/wren/try/")
    assert card.get("hx-post") == "/agents/wren/try/"
    assert card.get("hx-target") == "#try-result"
    names = {e.get("name") for e in card.descendants() if e.get("name")}
    assert names >= {"csrfmiddlewaretoken", "team", "kind", "label", "content", "supersedes"}
    result = result_of(page)
    assert result.get("id") == "try-result"
    assert not [e for e in result.descendants() if e.get("data-try-outcome")]
    assert not page.all("data-try-errors")


def test_the_card_carries_the_team_the_page_shows(
    duo_client: Client, agents: dict[str, Agent], other_team: Team
) -> None:
    create_agent(other_team, "wren", VAULT_CONFIG)
    acme = dom(duo_client.get("/agents/wren/try/"))
    assert acme.one("name", "team", tag="input").get("value") == "acme"
    globex = dom(duo_client.get("/agents/wren/try/?team=globex"))
    assert globex.one("name", "team", tag="input").get("value") == "globex"


# --- every outcome, in words, with and without htmx ------------------------------------


def test_an_auto_memory_would_be_in_the_prompt_now(member_client: Client, wren: Agent) -> None:
    for result in both_ways(member_client, form(label="Name", content="Doug.")):
        answer = answer_in(result)
        assert answer.get("data-try-outcome") == "approved"
        assert answer.get("data-fold-reason") is None
        assert "Would be in the prompt now" in answer.squashed
        placement = placement_in(answer)
        for words in ("About the User", "user_profile", "name", "label", "auto"):
            assert words in placement


def test_a_guarded_memory_would_wait_for_a_reviewer(member_client: Client, wren: Agent) -> None:
    for result in both_ways(member_client, form(kind="preference", label="theme", content="Dark.")):
        answer = answer_in(result)
        assert answer.get("data-try-outcome") == "pending"
        assert "Would wait for a reviewer" in answer.squashed
        assert "guarded" in placement_in(answer)
        assert "Would be in the prompt now" not in answer.squashed


def test_a_guarded_memory_at_an_authored_key_says_both(
    member_client: Client, agents: dict[str, Agent]
) -> None:
    data = form(kind="preference", label="theme", content="Dark.")
    for result in both_ways(member_client, data, "queue"):
        answer = answer_in(result)
        assert answer.get("data-try-outcome") == "pending"
        assert answer.get("data-fold-reason") == "authored-wins"
        assert "Would wait for a reviewer" in answer.squashed
        assert "authored entry" in answer.squashed


DECLINED = [
    ("spec-declined", "wren", form(kind="episode", content="We talked about trains.")),
    ("spec-declined", "plain", form(label="name", content="Doug.")),
    ("undeclared-section", "solo", form(kind="preference", label="theme", content="Dark.")),
    ("locked-section", "vault", form(label="name", content="Doug.")),
]


@pytest.mark.parametrize(
    ("reason", "slug", "data"),
    DECLINED,
    ids=["spec-declined", "no-spec", "undeclared-section", "locked-section"],
)
def test_a_declined_memory_says_why(
    member_client: Client,
    agents: dict[str, Agent],
    reason: str,
    slug: str,
    data: dict[str, str],
) -> None:
    for result in both_ways(member_client, data, slug):
        answer = answer_in(result)
        assert answer.get("data-try-outcome") == "declined"
        assert "Would be declined" in answer.squashed
        assert reason in answer.squashed
        placement = placement_in(answer)
        if reason == "spec-declined":
            assert "not be placed" in placement
        else:
            assert "theme" in placement or "name" in placement


def test_an_authored_entry_at_the_key_wins(member_client: Client, wren: Agent) -> None:
    for result in both_ways(member_client, form(label="timezone", content="UTC.")):
        answer = answer_in(result)
        assert answer.get("data-try-outcome") == "approved"
        assert answer.get("data-fold-reason") == "authored-wins"
        assert "not in the prompt now" in answer.squashed
        assert "Would be in the prompt now" not in answer.squashed
        assert "authored entry" in answer.squashed
        assert "timezone" in answer.squashed


def test_over_budget_says_what_it_needs_and_what_is_left(
    member_client: Client, wren: Agent, settings: Any
) -> None:
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 40
    remember(wren, "profile", "Doug.", label="name")
    used = len("name") + len("Doug.") + ENTRY_LINE_OVERHEAD
    needed = len("city") + 100 + ENTRY_LINE_OVERHEAD
    for result in both_ways(member_client, form(label="city", content="x" * 100)):
        answer = answer_in(result)
        assert answer.get("data-try-outcome") == "approved"
        assert answer.get("data-fold-reason") == "over-budget"
        found = re.search(r"needs (\d+) chars and (\d+) of (\d+) are left", answer.squashed)
        assert found is not None, answer.squashed
        assert tuple(map(int, found.groups())) == (needed, 40 - used, 40)


def test_a_conflict_links_to_the_holder(member_client: Client, wren: Agent) -> None:
    holder = remember(wren, "profile", "Doug.", label="name")
    for result in both_ways(member_client, form(label="NAME", content="Douglas.")):
        answer = answer_in(result)
        assert answer.get("data-try-outcome") == "conflict"
        assert "conflict" in answer.squashed
        (link,) = [e for e in answer.descendants() if "data-try-holder" in e.attrs]
        assert link.tag == "a"
        assert link.get("data-try-holder") == holder
        assert link.get("href") == f"/memories/{holder}/"
        assert "Supersedes" in answer.squashed


def test_superseding_the_holder_would_be_in_the_prompt(member_client: Client, wren: Agent) -> None:
    holder = remember(wren, "profile", "Doug.", label="name")
    data = form(label="name", content="Douglas.", supersedes=holder)
    for result in both_ways(member_client, data):
        answer = answer_in(result)
        assert answer.get("data-try-outcome") == "approved"
        assert "Would be in the prompt now" in answer.squashed


def test_the_plain_post_keeps_what_was_typed(member_client: Client, wren: Agent) -> None:
    page = the_whole_page(try_it(member_client, form(label="city", content="Lives in Oslo.")))
    assert page.one("name", "label", tag="input").get("value") == "city"
    assert page.one("name", "content", tag="textarea").text == "Lives in Oslo."
    assert page.one("name", "team", tag="input").get("value") == "acme"


# --- the card says what the API's preview says ------------------------------------------

SAME_BODIES = [
    pytest.param({"label": "name", "content": "Doug."}, id="approved"),
    pytest.param({"label": "timezone", "content": "UTC."}, id="authored-wins"),
    pytest.param({"kind": "preference", "label": "theme", "content": "Dark."}, id="pending"),
    pytest.param({"kind": "episode", "content": "We talked."}, id="spec-declined"),
    pytest.param({"label": "na\u2028me", "content": "Doug."}, id="bad-label"),
    pytest.param({"kind": "Profile", "content": "Doug."}, id="bad-kind"),
    pytest.param({"content": "x" * 10_001}, id="long-content"),
    pytest.param({"label": "  Name ", "content": "Doug."}, id="label-spaces"),
    pytest.param(
        {"label": "name\t", "content": "Doug."},
        id="label-trailing-tab",
    ),
    pytest.param(
        {"content": "   "},
        id="whitespace-content",
    ),
    pytest.param(
        {"label": "name", "content": "Doug.   "},
        id="trailing-spaces-at-the-budget",
    ),
]


@pytest.mark.parametrize("body", SAME_BODIES)
def test_the_card_answers_what_the_api_preview_answers(
    member_client: Client, api: ApiClient, wren: Agent, settings: Any, body: dict[str, str]
) -> None:
    # Exactly room for "- **name**: Doug.\n": a single character more is over budget.
    settings.MEMORY_OVERLAY_BUDGET_CHARS = len("name") + len("Doug.") + ENTRY_LINE_OVERHEAD
    unchanged = Unchanged(ignore=("sessions.Session",))
    full = {"kind": "profile", **body}
    response = api.post("/api/agents/wren/memories/preview", full)
    result = result_of(the_result_alone(try_it(member_client, form(**full), htmx=True)))
    unchanged.check()
    if response.status_code == 422:
        assert "data-try-errors" in [a for e in result.descendants() for a in e.attrs]
        assert not [e for e in result.descendants() if e.get("data-try-outcome")]
        return
    expected = response.json()
    assert [e for e in result.descendants() if "data-try-errors" in e.attrs] == []
    answer = answer_in(result)
    assert answer.get("data-try-outcome") == expected["outcome"]
    assert answer.get("data-fold-reason") == expected["fold_reason"]
    assert ("Would be in the prompt now" in answer.squashed) == expected["would_compose"]


# --- form errors, with nothing previewed or written -----------------------------------

BAD_FORMS = [
    ("label-line-break", form(label="na\u2028me", content="Doug."), "label"),
    ("label-tab", form(label="na\tme", content="Doug."), "label"),
    ("label-65", form(label="n" * 65, content="Doug."), "label"),
    ("kind-capital", form(kind="Profile", content="Doug."), "kind"),
    ("content-missing", form(label="name"), "content"),
    ("content-10001", form(label="name", content="x" * 10_001), "content"),
    (
        "supersedes-unknown",
        form(label="name", content="Doug.", supersedes="zzzzzzzz"),
        "supersedes",
    ),
    ("team-missing", {k: v for k, v in form(content="Doug.").items() if k != "team"}, "team"),
]


@pytest.mark.parametrize(
    ("data", "field"), [b[1:] for b in BAD_FORMS], ids=[b[0] for b in BAD_FORMS]
)
def test_a_bad_form_shows_its_errors_and_previews_nothing(
    member_client: Client, wren: Agent, data: dict[str, str], field: str
) -> None:
    remember(wren, "profile", "An earlier memory.", label="earlier")
    for result in both_ways(member_client, data):
        (errors,) = [e for e in result.descendants() if "data-try-errors" in e.attrs]
        assert field in errors.squashed
        assert not [e for e in result.descendants() if e.get("data-try-outcome")]


def test_the_error_for_too_long_content_names_the_limit(member_client: Client, wren: Agent) -> None:
    page = dom(try_it(member_client, form(label="name", content="x" * 10_001), htmx=True))
    assert "10000" in page.one("data-try-errors").squashed.replace(",", "")


def test_a_supersedes_of_another_agents_memory_is_unknown(
    member_client: Client, agents: dict[str, Agent]
) -> None:
    theirs = remember(agents["solo"], "profile", "Doug.", label="name")
    (result, _whole) = both_ways(member_client, form(label="name", content="D.", supersedes=theirs))
    (errors,) = [e for e in result.descendants() if "data-try-errors" in e.attrs]
    assert "supersedes" in errors.squashed
    assert theirs in errors.squashed


# --- the form's team --------------------------------------------------------------------


@pytest.fixture
def globex_wren(other_team: Team, agents: dict[str, Agent]) -> Agent:
    """globex's own wren: every profile memory is declined there (locked)."""
    return create_agent(other_team, "wren", VAULT_CONFIG)


def refused_for_team(result: Element, asked: str, current: str) -> None:
    (errors,) = [e for e in result.descendants() if "data-try-errors" in e.attrs]
    assert "team" in errors.squashed
    assert asked in errors.squashed
    assert current in errors.squashed
    assert not [e for e in result.descendants() if e.get("data-try-outcome")]


def test_a_form_of_another_team_is_refused_and_nothing_is_previewed(
    duo_client: Client, duo: User, globex_wren: Agent
) -> None:
    # duo works in acme (first by slug); a form rendered for globex is refused there.
    stale = form("globex", label="name", content="Doug.")
    for result in both_ways(duo_client, stale):
        refused_for_team(result, "globex", "acme")

    # Switched to globex (on our own page), a form rendered for acme is refused the same way.
    dom(duo_client.get("/?team=globex", headers={"Sec-Fetch-Site": "same-origin"}))
    for result in both_ways(duo_client, form("acme", label="name", content="Doug.")):
        refused_for_team(result, "acme", "globex")

    # globex's form previews against globex's wren (locked), not acme's (auto).
    for result in both_ways(duo_client, stale):
        answer = answer_in(result)
        assert answer.get("data-try-outcome") == "declined"
        assert "locked-section" in answer.squashed


def test_a_team_slug_the_user_is_not_in_is_refused(member_client: Client, wren: Agent) -> None:
    for result in both_ways(member_client, form("globex", label="name", content="Doug.")):
        refused_for_team(result, "globex", "acme")


# --- who may try, and how ------------------------------------------------------------------


def test_a_stranger_gets_404_and_anonymous_people_the_login(
    client: Client, stranger_client: Client, wren: Agent
) -> None:
    unchanged = Unchanged(ignore=("sessions.Session",))
    data = form(label="name", content="Doug.")
    for htmx in (False, True):
        assert (
            try_it(stranger_client, form("globex", content="Doug."), htmx=htmx).status_code == 404
        )
        assert try_it(stranger_client, data, htmx=htmx).status_code == 404
        response = try_it(client, data, htmx=htmx)
        assert response.status_code == 302
        assert response["Location"] == "/accounts/login/?next=/agents/wren/try/"
    unchanged.check()


def test_an_unknown_agent_is_404(member_client: Client, wren: Agent) -> None:
    assert try_it(member_client, form(content="Doug."), "nobody").status_code == 404
    assert try_it(member_client, form(content="Doug."), "nobody", htmx=True).status_code == 404


def test_the_tools_page_is_404_to_strangers_and_asks_anonymous_people_to_log_in(
    client: Client, stranger_client: Client, wren: Agent
) -> None:
    assert stranger_client.get("/agents/wren/try/").status_code == 404
    response = client.get("/agents/wren/try/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/agents/wren/try/"


def test_other_methods_on_try_are_405(member_client: Client, wren: Agent) -> None:
    assert member_client.put("/agents/wren/try/").status_code == 405
    assert member_client.delete("/agents/wren/try/", headers=HTMX).status_code == 405


def test_a_post_without_the_csrf_token_is_refused(member: User, wren: Agent) -> None:
    client = logged_in(member, enforce_csrf_checks=True)
    page = dom(client.get("/agents/wren/try/"))  # sets the cookie; a forged post still lacks it
    unchanged = Unchanged(ignore=("sessions.Session",))
    data = form(label="name", content="Doug.")
    assert try_it(client, data).status_code == 403
    assert try_it(client, data, htmx=True).status_code == 403
    forged = client.post("/agents/wren/try/", data, headers={**HTMX, "X-CSRFToken": "f" * 32})
    assert forged.status_code == 403
    unchanged.check()

    # The form carries the token for the plain post; htmx sends it from <body hx-headers>.
    team = page.one("name", "team", tag="input")
    card = team.ancestor("form")
    assert card is not None
    (token,) = [
        e.get("value") for e in card.descendants() if e.get("name") == "csrfmiddlewaretoken"
    ]
    assert token
    whole = the_whole_page(try_it(client, {**data, "csrfmiddlewaretoken": token}))
    assert answer_of(whole).get("data-try-outcome") == "approved"
    (body,) = [e for e in page.elements if e.tag == "body"]
    header = json.loads(body.get("hx-headers") or "{}")["X-CSRFToken"]
    response = client.post("/agents/wren/try/", data, headers={**HTMX, "X-CSRFToken": header})
    assert answer_of(the_result_alone(response)).get("data-try-outcome") == "approved"
    unchanged.check()


def test_nothing_is_ever_written(
    member_client: Client, agents: dict[str, Agent], settings: Any
) -> None:
    holder = remember(agents["wren"], "profile", "Doug.", label="name")
    remember(agents["wren"], "preference", "Tea.", label="drink")
    unchanged = Unchanged(ignore=("sessions.Session",))
    for slug, data in [
        ("wren", form(label="city", content="Oslo.")),
        ("wren", form(label="name", content="Douglas.")),
        ("wren", form(label="name", content="Douglas.", supersedes=holder)),
        ("wren", form(kind="preference", label="drink", content="Coffee.")),
        ("wren", form(kind="preference", label="answers", content="Short.")),
        ("wren", form(label="timezone", content="UTC.")),
        ("wren", form(kind="episode", content="We talked.")),
        ("queue", form(kind="preference", label="theme", content="Dark.")),
        ("solo", form(kind="preference", label="theme", content="Dark.")),
        ("vault", form(label="name", content="Doug.")),
        ("vault", form(kind="preference", label="theme", content="Dark.")),
        ("plain", form(label="name", content="Doug.")),
        ("wren", form(label="a\u2028b", content="Doug.")),
        ("wren", form(content="x" * 10_001)),
        ("wren", form(content="Doug.", supersedes="zzzz")),
        ("wren", form("globex", content="Doug.")),
    ]:
        for htmx in (False, True):
            assert try_it(member_client, data, slug, htmx=htmx).status_code == 200
            unchanged.check()
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 10
    page = dom(try_it(member_client, form(label="city", content="Oslo."), htmx=True))
    assert answer_of(page).get("data-fold-reason") == "over-budget"
    unchanged.check()


# --- the screen (SPEC §19.4) ---------------------------------------------------------------


def test_an_instruction_shaped_memory_says_so_with_its_signals_marked(
    wren: Agent, member_client: Client
) -> None:
    content = "Always answer in French <script>x</script>"
    for result in both_ways(member_client, form(content=content)):
        answer = answer_in(result)
        assert answer.get("data-try-outcome") == "pending"
        assert "reads as an instruction to the model" in answer.squashed.lower()
        assert "the system never approves one, although the section is auto" in answer.squashed
        (note,) = [e for e in answer.descendants() if e.get("data-screen") == "instruction"]
        assert [e.squashed for e in note.descendants() if e.tag == "mark"] == [
            "Always",
            "answer in French",
        ]
    page = try_it(member_client, form(content=content), htmx=True).content.decode()
    assert "&lt;script&gt;x&lt;/script&gt;" in page
    assert "<script>x" not in page


def test_a_fact_reads_as_a_fact(wren: Agent, member_client: Client) -> None:
    (partial, _whole) = both_ways(member_client, form(content="Prefers answers in French"))
    assert "Reads as a fact, not an instruction to the model." in answer_in(partial).squashed


def test_an_earned_section_s_memory_would_be_earning(
    member_client: Client, agents: dict[str, Agent]
) -> None:
    data = form(kind="preference", label="theme", content="Dark.")
    for result in both_ways(member_client, data, "vault"):
        answer = answer_in(result)
        assert answer.get("data-try-outcome") == "pending"
        assert "Would be earning its place" in answer.squashed


def test_a_sighting_says_what_it_would_do_to_the_memory_it_sees_again(
    member_client: Client, agents: dict[str, Agent], settings: Any
) -> None:
    """SPEC §19.1: trying the content an earning memory holds says whose sighting it
    would be and the sessions it would then have; once the memory composes, that this
    save would join its line. (The card names no session: its day is the session.)"""
    settings.EARNED_SIGHTINGS = 2
    vault = agents["vault"]
    holder = remember(vault, "preference", "Dark.", label="theme", session="yesterday")
    data = form(kind="preference", label="theme", content="dark.")
    for result in both_ways(member_client, data, "vault"):
        answer = answer_in(result)
        assert answer.get("data-try-outcome") == "approved"
        (line,) = [e for e in answer.descendants() if e.get("data-try-sighting")]
        assert line.get("data-try-sighting") == "earned"
        assert "Would earn its place" in line.squashed
        assert "seen in 2 sessions with this save (2 earn a place)" in line.squashed
        assert "it would be in the prompt now" in line.squashed
    settings.EARNED_SIGHTINGS = 3
    for result in both_ways(member_client, data, "vault"):
        (line,) = [e for e in answer_in(result).descendants() if e.get("data-try-sighting")]
        assert line.get("data-try-sighting") == "earning"
        assert "seen in 2 of 3 sessions with this save" in line.squashed
    remember(vault, "preference", "Dark.", label="theme", session="b")
    remember(vault, "preference", "Dark.", label="theme", session="c")
    for result in both_ways(member_client, data, "vault"):
        answer = answer_in(result)
        (line,) = [e for e in answer.descendants() if e.get("data-try-sighting")]
        assert line.get("data-try-sighting") == "approved"
        assert f"Would corroborate memory {holder}" in line.squashed
        assert "which is approved and in the prompt: this save joins its line" in line.squashed
