"""``seed_demo`` again over a demo people have used: it adds only what is missing and never
reverts, or proposes over, a person's change (SPEC §10, §14); and the demo's second
person logs in with the printed password and plays their part in four eyes."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from lens.actors import Actor
from lens.agents import config_of, with_config
from lens.core.config import AgentConfig
from lens.models import Agent, Proposal, ProposalStatus, Revision, Team, Via
from memory.configuring import publish_proposal, store_config
from tests.factories import post_proposal

pytestmark = pytest.mark.django_db

SECOND_LOGIN = re.compile(r"as the team's second reviewer, (\S+) / (\S+?)[:\s]")


def seed() -> str:
    out = StringIO()
    call_command("seed_demo", "--force", stdout=out)
    return out.getvalue()


def person(username: str) -> Actor:
    return Actor.for_user(User.objects.get(username=username))


def config(slug: str) -> AgentConfig:
    return config_of(with_config(Agent.objects.filter(team__slug="demo", slug=slug)).get())


def retitled(slug: str, section_id: str, title: str) -> AgentConfig:
    changed = config(slug).model_dump(mode="json")
    for section in changed["background"]["sections"]:
        if section["id"] == section_id:
            section["title"] = title
    return AgentConfig.model_validate(changed)


def titles(slug: str) -> dict[str, str]:
    return {section.id: section.title for section in config(slug).background.sections}


def test_seeding_again_keeps_a_rename_and_a_published_proposal() -> None:
    seed()
    team = Team.objects.get(slug="demo")
    # A person renames a section of Atlas, through the operation the admin calls.
    store_config(
        team,
        "atlas",
        retitled("atlas", "policies", "House Policies"),
        actor=person("demo"),
        via=Via.ADMIN,
    )
    # On protected Sentinel, the demo user publishes the change maya proposed.
    [waiting] = Proposal.objects.filter(agent__slug="sentinel", status=ProposalStatus.PENDING)
    published = publish_proposal(team, waiting.pk, person("demo"))
    assert published.status == ProposalStatus.PUBLISHED
    sentinel_titles = titles("sentinel")
    assert sentinel_titles["project_state"] == "Work in Flight"
    revisions = Revision.objects.count()
    proposals = Proposal.objects.count()

    out = seed()

    assert Revision.objects.count() == revisions
    assert Proposal.objects.count() == proposals
    assert titles("atlas")["policies"] == "House Policies"
    assert titles("sentinel") == sentinel_titles
    # What it says it did is what it did.
    assert "0 new revisions, 0 new proposals" in out
    assert "agents wren, sentinel, atlas already there, left as they are" in out


def test_the_first_run_says_what_it_made() -> None:
    out = seed()
    made = Revision.objects.count()
    assert "new agents wren, sentinel, atlas (" in out
    assert f"{made} new revisions, 1 new proposal," in out
    assert "already there" not in out


def test_a_deleted_demo_agent_is_made_again_and_the_others_left_alone() -> None:
    seed()
    team = Team.objects.get(slug="demo")
    store_config(
        team,
        "wren",
        retitled("wren", "ground_rules", "House Rules"),
        actor=person("maya"),
        via=Via.ADMIN,
    )
    Agent.objects.get(team=team, slug="atlas").delete()
    out = seed()
    assert "new agents atlas; agents wren, sentinel already there, left as they are" in out
    assert titles("wren")["ground_rules"] == "House Rules"
    assert Revision.objects.filter(agent__slug="atlas").count() == 1


def second_login(out: str) -> tuple[str, str]:
    match = SECOND_LOGIN.search(out)
    assert match is not None, out
    return match.group(1), match.group(2)


def test_the_second_reviewer_logs_in_and_publishes_what_demo_proposed() -> None:
    out = seed()
    username, password = second_login(out)
    assert username == "maya"
    team = Team.objects.get(slug="demo")
    # demo proposes a change of protected Sentinel ...
    stored = store_config(
        team,
        "sentinel",
        retitled("sentinel", "team_context", "The Team"),
        actor=person("demo"),
        via=Via.ADMIN,
    )
    assert stored.proposal is not None
    # ... and maya, logged in with the printed password, publishes it.
    maya = Client()
    assert maya.login(username=username, password=password)
    response = post_proposal(maya, stored.proposal.pk, "publish", team="demo")
    assert response.status_code == 302
    stored.proposal.refresh_from_db()
    assert (stored.proposal.status, stored.proposal.decided_by) == ("published", "maya")
    assert titles("sentinel")["team_context"] == "The Team"
    # She may change the agents' declarations in the admin (a change of Sentinel there
    # is proposed), and restore revisions.
    sentinel = Agent.objects.get(team=team, slug="sentinel")
    assert maya.get(f"/admin/lens/agent/{sentinel.pk}/change/").status_code == 200
    assert User.objects.get(username="maya").has_perm("lens.change_agent")


def test_demo_publishes_what_maya_proposed_and_neither_publishes_their_own() -> None:
    out = seed()
    username, password = second_login(out)
    [waiting] = Proposal.objects.filter(agent__slug="sentinel", status=ProposalStatus.PENDING)
    assert waiting.proposed_by == "maya"
    maya = Client()
    assert maya.login(username=username, password=password)
    assert post_proposal(maya, waiting.pk, "publish", team="demo").status_code == 403
    demo = Client()
    assert demo.login(username="demo", password="demo")
    assert post_proposal(demo, waiting.pk, "publish", team="demo").status_code == 302
    waiting.refresh_from_db()
    assert (waiting.status, waiting.decided_by) == ("published", "demo")


def test_an_older_demo_s_second_person_becomes_a_login_once() -> None:
    seed()
    maya = User.objects.get(username="maya")
    # As older demos left her: a name in the history, no password, no rights.
    maya.set_unusable_password()
    maya.is_staff = False
    maya.save()
    maya.user_permissions.clear()
    out = seed()
    username, password = second_login(out)
    assert Client().login(username=username, password=password)
    assert User.objects.get(username="maya").has_perm("lens.change_agent")
    # A password a person gave her since is theirs: kept, and the summary says so.
    maya = User.objects.get(username="maya")
    maya.set_password("a long secret of maya's")
    maya.save()
    out = seed()
    assert "maya / maya (unless you changed that password)" in out
    assert Client().login(username="maya", password="a long secret of maya's")
