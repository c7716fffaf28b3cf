"""Management commands: create_team, issue_token, doctor and seed_demo (SPEC §10)."""

from __future__ import annotations

import json
import re
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import transaction
from django.test import Client

from demo.configs import DEMO_AGENTS
from lens.actors import Actor
from lens.models import (
    Agent,
    ApiToken,
    AuthoredEntry,
    AwarenessSource,
    Capability,
    Membership,
    Proposal,
    Revision,
    SectionDeclaration,
    StoredConfig,
    Team,
    Via,
)
from lens.proposals import is_proposer
from lens.revisions import current_number, record_revision
from memory.as_of import compose_as_of
from memory.deliveries.ledger import composition_data
from memory.models import Delivery
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def run(name: str, *args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(name, *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def members_of(slug: str) -> set[str]:
    return set(Membership.objects.filter(team__slug=slug).values_list("user__username", flat=True))


# --- create_team -----------------------------------------------------------------------


def test_create_team_creates_a_team() -> None:
    out, _ = run("create_team", "rocket")
    team = Team.objects.get(slug="rocket")
    assert team.name == "rocket"
    assert "Created team rocket" in out


def test_create_team_again_updates_without_a_duplicate() -> None:
    run("create_team", "rocket")
    out, _ = run("create_team", "rocket", "--name", "Rocket Science")
    assert Team.objects.filter(slug="rocket").count() == 1
    assert Team.objects.get(slug="rocket").name == "Rocket Science"
    assert "Updated team rocket" in out


def test_create_team_adds_each_repeated_member() -> None:
    make_user("ada")
    make_user("bob")
    out, _ = run("create_team", "rocket", "--member", "ada", "--member", "bob")
    assert members_of("rocket") == {"ada", "bob"}
    assert "ada, bob" in out


def test_create_team_adding_a_member_again_keeps_one_membership() -> None:
    make_user("ada")
    run("create_team", "rocket", "--member", "ada")
    run("create_team", "rocket", "--member", "ada")
    assert Membership.objects.filter(team__slug="rocket", user__username="ada").count() == 1


def test_create_team_adds_members_to_an_existing_team(team: Team, member: User) -> None:
    make_user("bob")
    run("create_team", "acme", "--member", "bob")
    assert members_of("acme") == {"mira", "bob"}
    assert Team.objects.get(slug="acme").name == "Acme"


def test_create_team_with_an_unknown_user_fails_and_creates_nothing() -> None:
    make_user("ada")
    with pytest.raises(CommandError, match="ghost"):
        run("create_team", "rocket", "--member", "ada", "--member", "ghost")
    assert not Team.objects.filter(slug="rocket").exists()
    assert not Membership.objects.exists()


def test_create_team_with_an_unknown_user_leaves_an_existing_team_alone(
    team: Team, member: User
) -> None:
    make_user("ada")
    with pytest.raises(CommandError):
        run("create_team", "acme", "--name", "Renamed", "--member", "ada", "--member", "ghost")
    assert Team.objects.get(slug="acme").name == "Acme"
    assert members_of("acme") == {"mira"}


def test_create_team_refuses_an_invalid_slug() -> None:
    with pytest.raises(CommandError):
        run("create_team", "Not A Slug")
    assert not Team.objects.exists()


# --- issue_token -----------------------------------------------------------------------


def test_the_last_line_of_issue_token_authenticates(team: Team, agent: Agent) -> None:
    out, _ = run("issue_token", "acme")
    token = out.strip().splitlines()[-1]
    response = Client().get("/api/agents", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200
    assert [a["slug"] for a in response.json()["agents"]] == ["wren"]


def test_an_issued_token_sees_only_its_team(team: Team, other_team: Team, agent: Agent) -> None:
    out, _ = run("issue_token", "globex")
    token = out.strip().splitlines()[-1]
    client = Client()
    headers: dict[str, Any] = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    assert client.get("/api/agents", **headers).json() == {"agents": []}
    assert client.get("/api/agents/wren", **headers).status_code == 404


def test_issue_token_stores_only_a_hash(team: Team) -> None:
    out, _ = run("issue_token", "acme", "--name", "ci")
    token = out.strip().splitlines()[-1]
    row = ApiToken.objects.get()
    assert row.name == "ci"
    for value in ApiToken.objects.values().get().values():
        assert token not in str(value)
    assert not ApiToken.objects.filter(digest=token).exists()


def test_each_issue_token_run_gives_a_new_token(team: Team) -> None:
    first, _ = run("issue_token", "acme")
    second, _ = run("issue_token", "acme")
    assert first.strip().splitlines()[-1] != second.strip().splitlines()[-1]
    assert ApiToken.objects.filter(team=team).count() == 2


def test_a_made_up_token_is_refused(team: Team) -> None:
    run("issue_token", "acme")
    response = Client().get("/api/agents", HTTP_AUTHORIZATION="Bearer cl_not-a-real-token")
    assert response.status_code == 401


def test_issue_token_for_an_unknown_team_fails() -> None:
    with pytest.raises(CommandError, match="nope"):
        run("issue_token", "nope")
    assert not ApiToken.objects.exists()


# --- doctor ----------------------------------------------------------------------------


def test_doctor_is_healthy_on_an_empty_database() -> None:
    out, _ = run("doctor")
    assert "database: ok" in out
    assert "teams: 0" in out
    assert "healthy" in out


def test_doctor_finds_declarations_changed_outside_their_revisions(
    team: Team, agent: Agent
) -> None:
    out, _ = run("doctor")
    assert "revisions: ok" in out
    Agent.objects.filter(pk=agent.pk).update(persona="Changed with SQL.")
    with pytest.raises(CommandError, match="1 problem"):
        run("doctor")
    err = StringIO()
    with pytest.raises(CommandError):
        call_command("doctor", stdout=StringIO(), stderr=err)
    assert "acme/wren: its declarations differ from its newest revision" in err.getvalue()
    # Saving it once through the product records the change.
    with transaction.atomic():
        record_revision(agent, Actor(label="root"), Via.ADMIN)
    out, _ = run("doctor")
    assert "revisions: ok" in out


def test_doctor_prints_counts(team: Team, agent: Agent) -> None:
    out, _ = run("doctor")
    assert "teams: 1" in out
    assert "agents: 1" in out
    assert "sections: 2" in out
    assert "authored entries: 4" in out
    assert out.rstrip().endswith("healthy")


# --- seed_demo -------------------------------------------------------------------------


def table_sizes() -> dict[str, int]:
    models = (
        Team,
        User,
        Membership,
        Agent,
        SectionDeclaration,
        AuthoredEntry,
        Capability,
        AwarenessSource,
        Revision,
        StoredConfig,
    )
    return {model.__name__: model.objects.count() for model in models}


LOGIN_LINE = re.compile(r"Log in at (\S+) as (\S+) / (\S+)")


def test_seed_demo_is_idempotent() -> None:
    first_out, _ = run("seed_demo", "--force")
    first = table_sizes()
    second_out, _ = run("seed_demo", "--force")
    assert table_sizes() == first
    assert first["Team"] == 1
    assert first["Agent"] == len(DEMO_AGENTS)
    assert LOGIN_LINE.search(first_out)
    assert LOGIN_LINE.search(second_out)


def test_the_demo_history_has_revisions_by_two_people_around_its_deliveries() -> None:
    run("seed_demo", "--force")
    revisions = list(Revision.objects.filter(agent__slug="wren").order_by("number"))
    assert [(r.number, r.via) for r in revisions] == [(1, "api"), (2, "admin"), (3, "admin")]
    assert [r.actor for r in revisions[1:]] == ["demo", "maya"]
    assert revisions[0].actor.startswith("token ")
    delivered = Delivery.objects.filter(agent__slug="wren").values_list("delivered_at", flat=True)
    # Every delivery was composed from revision 1: made after it, before the edits.
    assert revisions[0].created_at < min(delivered)
    assert max(delivered) < revisions[1].created_at < revisions[2].created_at
    # The whole demo is a history the product can go back through: every delivery is
    # the composition as of its time.
    for delivery in Delivery.objects.select_related("agent", "composition"):
        then = json.loads(compose_as_of(delivery.agent, delivery.delivered_at).model_dump_json())
        assert then["prompt"] == composition_data(delivery.composition)["prompt"]


def test_the_demo_has_a_protected_agent_with_a_change_waiting_for_a_reviewer() -> None:
    run("seed_demo", "--force")
    sentinel = Agent.objects.get(slug="sentinel")
    assert sentinel.protected
    [proposal] = Proposal.objects.filter(agent=sentinel)
    assert (proposal.status, proposal.proposed_by) == ("pending", "maya")
    assert proposal.base_revision == current_number(sentinel)
    assert {
        "change": "section_retitled",
        "section": "project_state",
        "from": "Project State",
        "to": "Work in Flight",
    } in proposal.summary
    # The demo user did not propose it: they may publish it.
    assert not is_proposer(proposal, Actor.for_user(User.objects.get(username="demo")))
    assert proposal.created_at > Revision.objects.get(agent=sentinel, number=2).created_at
    # Seeding again proposes nothing more.
    run("seed_demo", "--force")
    assert Proposal.objects.filter(agent=sentinel).count() == 1


def test_seed_demo_keeps_other_data(team: Team, agent: Agent) -> None:
    run("seed_demo", "--force")
    run("seed_demo", "--force")
    assert Agent.objects.filter(team=team, slug="wren").exists()
    assert Agent.objects.count() == len(DEMO_AGENTS) + 1


def test_the_demo_user_logs_in_with_the_printed_password_and_sees_both_agents() -> None:
    out, _ = run("seed_demo", "--force")
    match = LOGIN_LINE.search(out)
    assert match is not None
    url, username, password = match.groups()
    assert url.endswith("/accounts/login/")
    client = Client()
    assert client.login(username=username, password=password)
    response = client.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    for slug in Agent.objects.filter(team__slug="demo").values_list("slug", flat=True):
        assert f'href="/agents/{slug}/"' in html
    assert 'href="/agents/wren/"' in html
    assert 'href="/agents/sentinel/"' in html


def test_the_demo_agents_pass_the_doctor() -> None:
    run("seed_demo", "--force")
    out, _ = run("doctor")
    assert "agent configs: ok" in out
    assert f"agents: {len(DEMO_AGENTS)}" in out
