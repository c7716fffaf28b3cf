"""Fixtures of the lens tests: the admin's superuser, a client logged in as them, the
sample agent's section that holds authored entries, and the forms of their admin pages
as a browser would submit them unchanged."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lens.models import Agent, SectionDeclaration, Team
from tests.factories import logged_in, make_user
from tests.pages import FormData, admin_agent_url, admin_section_url, form_data


@pytest.fixture
def root(team: Team) -> User:
    """A superuser who is also a member of acme (so the lens opens for them too)."""
    return make_user("root", team, is_staff=True, is_superuser=True)


@pytest.fixture
def admin_client(root: User) -> Client:
    return logged_in(root)


@pytest.fixture
def ground_rules(agent: Agent) -> SectionDeclaration:
    """The sample agent's locked section of four authored entries."""
    return agent.sections.get(section_id="ground_rules")


@pytest.fixture
def agent_form(admin_client: Client, agent: Agent) -> FormData:
    return form_data(admin_client, admin_agent_url(agent), "agent_form")


@pytest.fixture
def section_form(admin_client: Client, ground_rules: SectionDeclaration) -> FormData:
    return form_data(admin_client, admin_section_url(ground_rules), "sectiondeclaration_form")
