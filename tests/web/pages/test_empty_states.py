"""Empty states point people where they can act: staff to the admin, everyone else to
the API and to whoever administers the deployment — never to a page they cannot open."""

from __future__ import annotations

import pytest

from lens.models import Team
from tests.factories import create_agent, logged_in, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def empty_team() -> Team:
    return Team.objects.create(slug="quiet", name="Quiet")


def test_no_agents_sends_a_member_to_the_api_not_the_admin(empty_team: Team) -> None:
    page = logged_in(make_user("mel", empty_team)).get("/").content.decode()
    assert "No agents yet" in page
    assert "/admin/" not in page
    assert "PUT /api/agents/&lt;slug&gt;" in page
    assert "issue_token quiet" in page


def test_no_agents_offers_staff_the_admin(empty_team: Team) -> None:
    page = logged_in(make_user("sam", empty_team, is_staff=True)).get("/").content.decode()
    assert 'href="/admin/lens/agent/add/"' in page


def test_an_empty_agent_says_how_to_fill_it(empty_team: Team) -> None:
    agent = create_agent(empty_team, "blank", {"name": "Blank"})
    member = logged_in(make_user("mel", empty_team)).get("/agents/blank/").content.decode()
    assert "Nothing to compose" in member
    assert "PUT /api/agents/blank" in member
    assert f"/admin/lens/agent/{agent.pk}/change/" not in member.split("Nothing to compose")[1]
    staff = logged_in(make_user("sam", empty_team, is_staff=True)).get("/agents/blank/")
    assert (
        f"/admin/lens/agent/{agent.pk}/change/"
        in staff.content.decode().split("Nothing to compose")[1]
    )
