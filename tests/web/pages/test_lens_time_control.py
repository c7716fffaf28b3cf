"""The way into the lens as of a moment (SPEC §14 "As of"): a time control on the lens (a
GET form whose field is ``as_of``), a link from each delivery and each revision to the
lens at its moment, a past view that offers nothing to edit, try or decide and says so
at the top, and a form error (never a 500) for a time that does not read."""

from __future__ import annotations

from datetime import UTC
from urllib.parse import quote

import pytest
from django.test import Client

from lens.actors import SYSTEM
from lens.agents import get_agent
from lens.core.config import AgentConfig
from lens.models import Agent, Revision, Team
from memory.configuring import store_agent
from memory.deliveries.ledger import deliver
from tests.factories import create_agent, memory_config, remember
from tests.pages import Dom, dom, inside

pytestmark = pytest.mark.django_db


def lens_page(client: Client, query: str = "", status: int = 200) -> Dom:
    return dom(client.get(f"/agents/wren/{query}"), status)


def time_control(page: Dom) -> dict[str, str | None]:
    form = page.one("data-as-of-form", tag="form")
    assert form.get("method") == "get"
    assert form.get("action") == "/agents/wren/"
    field = [e for e in inside(form, "input") if e.get("name") == "as_of"][0]
    return {"value": field.get("value"), "invalid": field.get("aria-invalid")}


def lens_at(moment_iso: str) -> str:
    return f"/agents/wren/?as_of={quote(moment_iso, safe='')}"


def test_the_lens_has_a_time_control_now_and_in_the_past(
    member_client: Client, wren: Agent
) -> None:
    assert time_control(lens_page(member_client)) == {"value": "", "invalid": None}
    moment = wren.created_at.astimezone(UTC).isoformat()
    then = lens_page(member_client, f"?as_of={quote(moment)}")
    # The moment shown to the microsecond, so submitting it again shows the same.
    assert time_control(then) == {"value": moment, "invalid": None}
    # Submitted empty, the form is the lens now.
    assert "data-past-view" not in member_client.get("/agents/wren/?as_of=").content.decode()
    # The memory-only filter keeps its place in the form.
    only = lens_page(member_client, "?only=memory").one("data-as-of-form", tag="form")
    hidden = {
        e.get("name"): e.get("value") for e in inside(only, "input") if e.get("type") == "hidden"
    }
    assert hidden == {"only": "memory"}


def test_the_past_view_says_so_and_offers_nothing_to_edit_try_or_decide(
    admin_client: Client, team: Team
) -> None:
    # A staff member (who may edit in the admin) and a protected agent: every action shows.
    agent = create_agent(team, "wren", memory_config(protected=True))
    now_html = admin_client.get("/agents/wren/").content.decode()
    now = dom(admin_client.get("/agents/wren/"))
    for hook in ("data-agent-tools-links", "data-edit-link", "data-protected"):
        assert now.all(hook), hook
    assert 'id="stability"' in now_html
    assert now.all("data-past-view") == []

    then_html = admin_client.get(lens_at(agent.created_at.isoformat())).content.decode()
    then = dom(admin_client.get(lens_at(agent.created_at.isoformat())))
    banner = then.one("data-past-view")
    assert banner.squashed.startswith("Past view · read only")
    # It comes before the page's heading.
    assert then_html.index("data-past-view") < then_html.index("<h1")
    assert then.one("data-back-to-now").get("href") == "/agents/wren/"
    for hook in ("data-agent-tools-links", "data-edit-link", "data-protected"):
        assert then.all(hook) == [], hook
    assert 'id="stability"' not in then_html
    assert "/try/" not in then_html
    assert "/admin/lens/" not in then_html
    # No form but the time control: nothing posts from a past view.
    forms = [e for e in then.elements if e.tag == "form"]
    assert [f.get("method") for f in forms if "data-as-of-form" in f.attrs] == ["get"]
    assert [
        f for f in forms if f.get("method") == "post" and "logout" not in (f.get("action") or "")
    ] == []


@pytest.mark.parametrize(
    "asked",
    [
        "yesterday",
        "2026-13-45T00:00:00",
        "2026-12-01T09:00:00+25:00",
        "9999-12-31T23:59:59-12:00",
        "0001-01-01T00:00:00+01:00",
        "x" * 5000,
        "<script>alert(1)</script>",
    ],
)
def test_a_time_that_does_not_read_is_a_form_error_on_the_lens(
    member_client: Client, wren: Agent, asked: str
) -> None:
    response = member_client.get(f"/agents/wren/?as_of={quote(asked)}")
    page = dom(response, 400)
    control = time_control(page)
    assert control["invalid"] == "true"
    error = page.one("data-as-of-error")
    assert "is not an ISO 8601 date and time" in error.squashed
    assert len(error.squashed) < 200  # said back bounded
    assert page.one("data-as-of-problem")
    assert page.all("data-prompt")  # the lens now, still usable
    assert "<script>alert" not in response.content.decode()


def test_the_time_control_is_the_members_only(
    stranger_client: Client, client: Client, wren: Agent
) -> None:
    assert stranger_client.get("/agents/wren/?as_of=yesterday").status_code == 404
    response = client.get("/agents/wren/?as_of=yesterday")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_each_delivery_links_to_the_lens_at_its_moment(
    member_client: Client, stranger_client: Client, client: Client, wren: Agent
) -> None:
    remember(wren, "profile", "The user's name is Doug.", label="name")
    delivery = deliver(get_agent(wren.team, "wren"), SYSTEM).delivery
    remember(wren, "profile", "Doug moved to Lisbon.", label="city")
    href = lens_at(delivery.delivered_at.astimezone(UTC).isoformat())

    detail = dom(member_client.get(f"/deliveries/{delivery.id}/"))
    link = detail.one("data-lens-at", tag="a")
    assert (link.get("href"), link.squashed) == (href, "The lens at this moment")
    timeline = dom(member_client.get("/agents/wren/deliveries/"))
    row = timeline.one("data-delivery-id", delivery.id, tag="tr")
    assert [a.get("href") for a in inside(row, "a") if "data-lens-at" in a.attrs] == [href]

    then = member_client.get(href).content.decode()
    assert "data-past-view" in then
    assert "Doug" in then
    assert "Lisbon" not in then
    # The link is no way in for anyone else.
    assert stranger_client.get(href).status_code == 404
    assert client.get(href).status_code == 302


def test_each_revision_links_to_the_lens_at_its_moment(
    member_client: Client, stranger_client: Client, client: Client, wren: Agent
) -> None:
    store_agent(wren.team, "wren", AgentConfig.model_validate(memory_config(tone="Brisk.")))
    first, second = Revision.objects.filter(agent=wren).order_by("number")
    hrefs = [lens_at(r.created_at.astimezone(UTC).isoformat()) for r in (second, first)]

    listing = dom(member_client.get("/agents/wren/revisions/"))
    assert [a.get("href") for a in listing.all("data-lens-at")] == hrefs
    page = dom(member_client.get("/agents/wren/revisions/1/"))
    assert [a.get("href") for a in page.all("data-lens-at")] == [hrefs[1]]

    then = dom(member_client.get(hrefs[1]))
    assert then.one("data-revision").get("data-revision") == "1"
    assert "Brisk." not in then.one("data-prompt").squashed
    assert stranger_client.get("/agents/wren/revisions/1/").status_code == 404
    assert client.get("/agents/wren/revisions/").status_code == 302
