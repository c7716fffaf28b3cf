"""Who did something, in rows: a token's long label (``token cl_OrAbRfD… (demo seed)``)
shows by its name with its whole label in the title, so it no longer crowds a row."""

from __future__ import annotations

import pytest
from django.test import Client

from lens.actors import LABEL_MAX, Actor
from lens.models import Agent, ApiToken, Team
from tests.api_calls import ApiClient
from tests.factories import remember
from tests.pages import Dom, dom, with_class
from web.templatetags.lens_text import actor

pytestmark = pytest.mark.django_db


def test_a_token_label_shows_its_name_and_keeps_the_whole_label(team: Team) -> None:
    token, _raw = ApiToken.objects.issue(team, "demo seed")
    label = Actor.for_token(token).label
    shown = dom_of(actor(label))
    assert shown == ("token demo seed", label)


def test_an_unnamed_token_shows_its_prefix(team: Team) -> None:
    token, _raw = ApiToken.objects.issue(team)
    label = Actor.for_token(token).label
    assert dom_of(actor(label)) == (f"token {token.prefix}…", label)


@pytest.mark.parametrize(
    "label", ["mira", "system", "token", "token (x)", "<b>x</b>", "token a… (<i>)", ""]
)
def test_other_labels_are_shown_as_they_are_and_escaped(label: str) -> None:
    out = str(actor(label))
    assert "<b>" not in out
    assert "<i>" not in out
    if not label.startswith("token a…"):
        assert out == label.replace("<", "&lt;").replace(">", "&gt;")


def test_the_longest_label_is_read_in_bounded_time(team: Team) -> None:
    token, _raw = ApiToken.objects.issue(team, ")" * 200)
    label = Actor.for_token(token).label
    assert len(label) == LABEL_MAX
    assert "token" in str(actor(label))
    assert str(actor("token " + "…" * 5000 + " (" * 5000))  # no catastrophic backtracking


def test_the_audit_log_and_a_memory_s_history_show_tokens_by_name(
    member_client: Client, wren: Agent, team: Team
) -> None:
    token, _raw = ApiToken.objects.issue(team, "nightly sync")
    record = remember(wren, "profile", "Mira", label="name", actor=Actor.for_token(token))
    for path in ("/audit/", f"/memories/{record}/"):
        marks = with_class(dom(member_client.get(path)), "actor-token")
        assert marks, path
        assert marks[0].squashed == "token nightly sync"
        assert marks[0].get("title") == Actor.for_token(token).label


def dom_of(markup: str) -> tuple[str, str | None]:
    page = Dom()
    page.feed(f"<div>{markup}</div>")
    span = with_class(page, "actor-token")[0]
    return span.squashed, span.get("title")


def test_revisions_show_the_token_that_made_them_by_name(member_client: Client, team: Team) -> None:
    token, raw = ApiToken.objects.issue(team, "deploy pipeline")
    made = ApiClient(raw).put("/api/agents/helper", {"name": "Helper", "persona": "You help."})
    assert made.status_code in (200, 201), made.content
    label = Actor.for_token(token).label
    for path in ("/agents/helper/", "/agents/helper/revisions/", "/agents/helper/revisions/1/"):
        marks = with_class(dom(member_client.get(path)), "actor-token")
        assert [(m.squashed, m.get("title")) for m in marks][:1] == [
            ("token deploy pipeline", label)
        ], path
