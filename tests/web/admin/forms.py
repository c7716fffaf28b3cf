"""The admin's add-agent form, filled as a person would: a team, a slug, a name and
two locked Background sections (``first``, ``second``)."""

from __future__ import annotations

from django.test import Client

from lens.models import Team
from tests.pages import FormData, add_row, form_data, put

ADD_AGENT = "/admin/lens/agent/add/"


def new_agent_form(client: Client, team: Team, slug: str = "fresh") -> FormData:
    data = form_data(client, ADD_AGENT, "agent_form")
    put(data, "team", str(team.pk))
    put(data, "slug", slug)
    put(data, "name", slug.title())
    for section_id in ("first", "second"):
        add_row(
            data,
            "sections",
            section_id=section_id,
            title=section_id.title(),
            promotion="locked",
            position="",
            id="",
        )
    return data
