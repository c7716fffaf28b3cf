"""The restore confirmation (SPEC §18.2 "the restore confirmation"): Restore, from the
revisions list or a revision's page, opens a page that says what restoring would do —
the token change, the memories whose fate changes, how many of the last prompts would
change, the cached prefix before and after — with Confirm restore and Cancel. It works
without JavaScript, writes nothing until confirmed, and keeps who may restore (and the
four eyes of a protected agent) as they were."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from lens.actors import Actor
from lens.agents import get_agent
from lens.core.config import AgentConfig
from lens.models import Agent, Membership, Proposal, Revision, Team
from memory.configuring import store_agent, store_config
from memory.decisions import decide
from memory.deliveries.ledger import deliver
from tests.api_calls import db_snapshot
from tests.factories import create_agent, logged_in, make_user, memory_config, remember
from tests.pages import alert_text, dom
from tests.web.pages.test_revision_pages import editor_of

pytestmark = pytest.mark.django_db

LIST = "/agents/wren/revisions/"
CONFIRM = f"{LIST}1/restore/"
RUNTIME = Actor(label="runtime")


@pytest.fixture
def wren(team: Team, member: User) -> dict[str, str]:
    """Revision 1 declares the preferences section, where an approved memory composes;
    two deliveries; revision 2 leaves the section out (the memory drops); one more."""
    agent = create_agent(team, "wren", memory_config())
    remember(agent, "profile", "Mira", label="name")
    drink = remember(agent, "preference", "Tea, never coffee.", label="drink")
    decide(drink, True, Actor.for_user(member))
    deliver(get_agent(team, "wren"), RUNTIME)
    deliver(get_agent(team, "wren"), RUNTIME)
    store_config(team, "wren", AgentConfig.model_validate(memory_config(None)))
    deliver(get_agent(team, "wren"), RUNTIME)
    return {"drink": drink}


@pytest.fixture
def editor_client(team: Team) -> Client:
    return logged_in(editor_of(team))


def test_restore_on_the_list_and_on_a_revision_opens_the_confirmation(
    editor_client: Client, wren: dict[str, str]
) -> None:
    listed = dom(editor_client.get(LIST)).one("data-restore-link", "1")
    assert listed.tag == "a"
    assert listed.get("href") == f"{CONFIRM}?team=acme&from=list"
    own = dom(editor_client.get(f"{LIST}1/")).one("data-restore-link", "1")
    [link] = [e for e in own.descendants() if e.tag == "a"]
    assert link.get("href") == f"{CONFIRM}?team=acme"
    # Cancel goes back where Restore was pressed.
    back = dom(editor_client.get(f"{CONFIRM}?from=list")).one("data-restore-cancel")
    assert back.get("href") == f"{LIST}?team=acme"
    cancel = dom(editor_client.get(CONFIRM)).one("data-restore-cancel")
    assert cancel.get("href") == f"{LIST}1/?team=acme"


def test_the_confirmation_says_what_restoring_would_do_and_writes_nothing(
    editor_client: Client, wren: dict[str, str]
) -> None:
    editor_client.get(CONFIRM)  # the session exists
    before = db_snapshot()
    page = dom(editor_client.get(CONFIRM))
    after = db_snapshot()
    before.pop("sessions.Session"), after.pop("sessions.Session")
    assert after == before
    line = page.one("data-what-if")
    assert line.get("data-changed") == "1"
    assert int(str(line.get("data-tokens-delta"))) > 0
    assert "If restoring:" in line.squashed
    assert "brings in 1 memory" in line.squashed
    # Replayed with revision 1's declarations: the one delivery made under revision 2.
    assert "1 of the last 3 prompts would change" in line.squashed
    prefix = page.one("data-what-if-prefix").squashed
    assert prefix.startswith("Cached prefix ")
    assert " → " in prefix
    assert page.one("data-restore-tokens").squashed.startswith("The prompt now: ")
    [fate] = [e for e in page.all("data-memory-id") if e.tag == "li"]
    assert fate.get("data-memory-id") == wren["drink"]
    assert fate.squashed.endswith("→ in the prompt")
    form = page.one("data-restore-form", "1")
    assert form.get("method") == "post"
    assert form.get("action") == CONFIRM
    assert "Confirm restore" in form.squashed
    assert Revision.objects.filter(agent__slug="wren").count() == 2


def test_confirming_restores_as_before(editor_client: Client, wren: dict[str, str]) -> None:
    response = editor_client.post(CONFIRM, {"team": "acme"})
    assert response.status_code == 302
    assert "Restored revision 1 as revision 3." in alert_text(
        dom(editor_client.get(response["Location"]))
    )
    assert Revision.objects.filter(agent__slug="wren").count() == 3


def test_a_member_who_may_not_restore_sees_the_effect_but_no_button(
    member_client: Client, wren: dict[str, str]
) -> None:
    page = dom(member_client.get(CONFIRM))
    assert page.one("data-what-if") is not None
    assert page.all("data-restore-form") == []
    assert "lens.change_agent" in page.one("data-restore-note").squashed
    assert member_client.post(CONFIRM, {"team": "acme"}).status_code == 403
    assert Revision.objects.filter(agent__slug="wren").count() == 2


def test_strangers_get_404_and_anonymous_visitors_the_login(
    stranger_client: Client, wren: dict[str, str]
) -> None:
    assert stranger_client.get(CONFIRM).status_code == 404
    response = Client().get(CONFIRM)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    assert Client().post(CONFIRM, {"team": "acme"}).status_code == 302
    assert Revision.objects.filter(agent__slug="wren").count() == 2


def test_an_unknown_revision_has_no_confirmation(
    editor_client: Client, wren: dict[str, str]
) -> None:
    for number in (0, 3, 9):
        assert editor_client.get(f"{LIST}{number}/restore/").status_code == 404


def test_a_protected_agent_proposes_the_restore_for_another_reviewer(
    team: Team, member: User
) -> None:
    # Revision 1 as it was before Ada was protected; revision 2 protects it.
    create_agent(team, "ada", memory_config(name="Ada"))
    terse = memory_config(protected=True, name="Ada", persona="Terse.")
    store_agent(team, "ada", AgentConfig.model_validate(terse), actor=Actor(label="system"))
    ada: Agent = get_agent(team, "ada")
    editor = logged_in(editor_of(team))
    confirm = "/agents/ada/revisions/1/restore/"
    page = dom(editor.get(confirm))
    assert "Ada is protected" in page.one("data-restore-protected").squashed
    numbers = Revision.objects.filter(agent=ada).count()
    response = editor.post(confirm, {"team": "acme"})
    assert response.status_code == 302
    # Four eyes as before: a proposal waits, no revision is written.
    assert Revision.objects.filter(agent=ada).count() == numbers
    proposal = Proposal.objects.get(agent=ada)
    assert f"proposed as proposal {proposal.pk}, not applied" in alert_text(
        dom(editor.get(response["Location"]))
    )


def test_a_viewer_of_another_team_with_the_permission_still_gets_404(
    other_team: Team, wren: dict[str, str]
) -> None:
    outsider = logged_in(editor_of(other_team, "otto"))
    assert outsider.get(CONFIRM).status_code == 404


def test_restore_keeps_to_the_team_whose_revision_was_shown(team: Team, other_team: Team) -> None:
    """One person in two teams whose agents share a slug: Restore on the other team's
    revision (a link opened from elsewhere, so that team is not remembered) confirms
    and restores that team's agent, and Cancel goes back to it."""
    person = make_user("eda", team)
    Membership.objects.create(team=other_team, user=person)
    person.user_permissions.add(Permission.objects.get(codename="change_agent"))
    for owner, persona in ((team, "A"), (other_team, "B")):
        create_agent(owner, "wren", memory_config())
        store_config(owner, "wren", AgentConfig.model_validate(memory_config(persona=persona)))
    client = logged_in(person)
    client.get("/agents/?team=acme")  # the team this person works in
    shown = client.get(f"{LIST}1/?team=globex", HTTP_SEC_FETCH_SITE="cross-site")
    (link,) = [e for e in dom(shown).elements if e.tag == "a" and e.squashed == "Restore"]
    confirmation = dom(client.get(str(link.get("href")), HTTP_SEC_FETCH_SITE="same-origin"))
    (form,) = [e for e in confirmation.elements if "data-restore-form" in e.attrs]
    (team_field,) = [e for e in form.descendants() if e.get("name") == "team"]
    assert team_field.get("value") == "globex"
    (cancel,) = [e for e in confirmation.elements if "data-restore-cancel" in e.attrs]
    assert cancel.get("href") == f"{LIST}1/?team=globex"
    before = {t.slug: Revision.objects.filter(agent__team=t).count() for t in (team, other_team)}
    client.post(str(link.get("href")), {"team": "globex"})
    after = {t.slug: Revision.objects.filter(agent__team=t).count() for t in (team, other_team)}
    assert after == {"acme": before["acme"], "globex": before["globex"] + 1}
