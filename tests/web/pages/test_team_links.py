"""A link to an object works for every member of its team whatever team they last used
(SPEC §9): the page switches to the object's team and says so; a non-member still gets
404, ``?team=`` still names the team to look in, and where a slug or key exists in
several of the user's teams the current one wins."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from kvstore import store
from lens.actors import SYSTEM
from lens.core.config import AgentConfig
from lens.models import Membership, Team
from memory.configuring import store_config
from memory.core.deliveries import DeliveryInput
from memory.deliveries.ledger import deliver
from tests.factories import HTMX, create_agent, make_user, memory_config, remember, write_versions
from tests.pages import Dom, alert_text, dom
from web.pages.toolkit import SESSION_KEY

pytestmark = pytest.mark.django_db

SAME_SITE = {"Sec-Fetch-Site": "same-origin"}
KEY = "ops.cfg"


@dataclass(frozen=True)
class Links:
    """Globex's objects, and the pages that show them (what each one is)."""

    pages: dict[str, str]
    delivery: str
    earlier: str


@pytest.fixture
def links(other_team: Team) -> Links:
    gizmo = create_agent(other_team, "gizmo", memory_config(name="Gizmo"))
    memory = remember(gizmo, "profile", "Lives in Oslo.", label="city")
    earlier = deliver(gizmo, SYSTEM, DeliveryInput(session="s-1")).delivery.id
    remember(gizmo, "profile", "Works nights.", label="shift")
    delivery = deliver(gizmo, SYSTEM, DeliveryInput(session="s-1")).delivery.id
    write_versions(other_team, KEY, "globex v1", "globex v2")
    create_agent(other_team, "gadget", memory_config(name="Gadget", protected=True))
    proposed = store_config(
        other_team, "gadget", AgentConfig.model_validate(memory_config(name="Gadget 2"))
    ).proposal
    assert proposed is not None
    pages = {
        "/agents/gizmo/": "agent",
        "/agents/gizmo/deliveries/": "agent",
        f"/memories/{memory}/": "memory",
        f"/deliveries/{delivery}/": "delivery",
        f"/deliveries/{delivery}/diff/": "delivery",
        f"/deliveries/{delivery}/diff/?against={earlier}": "delivery",
        f"/deliveries/{delivery}/live/": "delivery",
        f"/kv/{KEY}/": "key",
        f"/kv/{KEY}/?version=1&from=1&to=2": "key",
        f"/proposals/{proposed.pk}/": "proposal",
    }
    return Links(pages, delivery, earlier)


def heading(page: Dom) -> str:
    return next(e.squashed for e in page.elements if e.tag == "h1")


def work_in(client: Client, slug: str) -> None:
    client.get(f"/?team={slug}", headers=SAME_SITE)
    assert client.session[SESSION_KEY] == slug


@pytest.mark.parametrize("foreign", [False, True])
def test_a_link_into_the_other_team_switches_to_it_and_says_so(
    duo_client: Client, team: Team, links: Links, foreign: bool
) -> None:
    # Pasted into a ticket or a chat, the link comes from another site.
    headers = {"Sec-Fetch-Site": "cross-site"} if foreign else {}
    for url, what in links.pages.items():
        work_in(duo_client, "acme")

        page = dom(duo_client.get(url, headers=headers))

        assert duo_client.session[SESSION_KEY] == "globex", url
        assert f"Switched to team Globex to show this {what}." in alert_text(page), url
        assert page.one("aria-label", "Switch team").squashed == "Team Globex", url
        # The next page is in the switched team, and says nothing more.
        again = dom(duo_client.get(url))
        assert "Switched to team" not in alert_text(again), url


def test_a_raw_version_link_switches_too(duo_client: Client, links: Links) -> None:
    work_in(duo_client, "acme")
    response = duo_client.get(f"/kv/{KEY}/raw/?version=1")
    assert response.status_code == 200
    assert response.content == b"globex v1"
    assert duo_client.session[SESSION_KEY] == "globex"


def test_the_object_in_the_current_team_says_nothing(duo_client: Client, links: Links) -> None:
    work_in(duo_client, "globex")
    for url in links.pages:
        page = dom(duo_client.get(url))
        assert "Switched to team" not in alert_text(page), url
        assert duo_client.session[SESSION_KEY] == "globex"


def test_a_non_member_gets_404(member_client: Client, links: Links) -> None:
    for url in [*links.pages, f"/kv/{KEY}/raw/?version=1"]:
        assert member_client.get(url).status_code == 404, url
        assert member_client.session[SESSION_KEY] == "acme"


def test_anonymous_is_sent_to_sign_in(client: Client, links: Links) -> None:
    for url in [*links.pages, f"/kv/{KEY}/raw/?version=1"]:
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/accounts/login/?next="), url


def test_an_explicit_team_still_rules(duo_client: Client, links: Links) -> None:
    work_in(duo_client, "globex")
    for url in links.pages:
        joined = "&" if "?" in url else "?"
        assert duo_client.get(f"{url}{joined}team=acme").status_code == 404, url
        assert duo_client.get(f"{url}{joined}team=initech").status_code == 404, url
        assert duo_client.get(f"{url}{joined}team=globex").status_code == 200, url


def test_a_delivery_diff_against_another_teams_delivery_is_404(
    duo_client: Client, team: Team, links: Links
) -> None:
    ours = create_agent(team, "wren")
    acme_delivery = deliver(ours, SYSTEM, DeliveryInput()).delivery.id
    work_in(duo_client, "acme")
    url = f"/deliveries/{links.delivery}/diff/?against={acme_delivery}"
    assert duo_client.get(url).status_code == 404
    url = f"/deliveries/{acme_delivery}/diff/?against={links.earlier}"
    assert duo_client.get(url).status_code == 404
    assert duo_client.session[SESSION_KEY] == "acme"


@pytest.mark.parametrize("current", ["acme", "globex"])
def test_the_same_slug_and_key_in_both_teams_open_in_the_current_one(
    duo_client: Client, team: Team, other_team: Team, current: str
) -> None:
    create_agent(team, "wren", memory_config(name="Acme Wren"))
    create_agent(other_team, "wren", memory_config(name="Globex Wren"))
    write_versions(team, KEY, "acme v1")
    write_versions(other_team, KEY, "globex v1")
    work_in(duo_client, current)
    name = {"acme": "Acme", "globex": "Globex"}[current]

    lens = dom(duo_client.get("/agents/wren/"))
    key = duo_client.get(f"/kv/{KEY}/").content.decode()

    assert heading(lens) == f"{name} Wren"
    assert f"{current} v1" in key
    assert "Switched to team" not in alert_text(lens) + key
    assert duo_client.session[SESSION_KEY] == current


def test_among_several_other_teams_the_first_by_slug_has_it(team: Team, other_team: Team) -> None:
    initech = Team.objects.create(slug="initech", name="Initech")
    create_agent(initech, "wren", memory_config(name="Initech Wren"))
    create_agent(other_team, "wren", memory_config(name="Globex Wren"))
    client = Client()
    client.force_login(make_user("trio", team, other_team, initech))
    work_in(client, "acme")

    lens = dom(client.get("/agents/wren/"))

    assert heading(lens) == "Globex Wren"
    assert client.session[SESSION_KEY] == "globex"


def test_a_posted_form_acts_in_its_own_team_only(duo_client: Client, links: Links) -> None:
    work_in(duo_client, "acme")
    response = duo_client.post(
        f"/kv/{KEY}/",
        {"team": "acme", "action": "write", "payload": "acme?", "if_version": "2"},
    )
    assert response.status_code == 404
    assert duo_client.session[SESSION_KEY] == "acme"
    assert store.read(Team.objects.get(slug="globex"), KEY).payload == "globex v2"


def test_an_htmx_swap_switches_without_a_message_for_later(
    duo_client: Client, links: Links
) -> None:
    work_in(duo_client, "acme")
    swap = {**HTMX, "HX-Target": "diff-panel"}
    assert duo_client.get(f"/kv/{KEY}/?from=1&to=2", headers=swap).status_code == 200
    assert duo_client.session[SESSION_KEY] == "globex"
    assert "Switched to team" not in alert_text(dom(duo_client.get("/")))


def test_the_lookup_costs_the_same_whatever_the_number_of_teams(
    team: Team, other_team: Team, links: Links
) -> None:
    def queries(teams: int) -> int:
        user = make_user(f"u{teams}", team, other_team)
        for n in range(teams - 2):
            Membership.objects.create(
                team=Team.objects.create(slug=f"t{teams}-{n:02}", name=f"T{n}"), user=user
            )
        client = Client()
        client.force_login(user)
        work_in(client, "acme")
        with CaptureQueriesContext(connection) as captured:
            assert client.get(f"/deliveries/{links.delivery}/").status_code == 200
        return len(captured)

    assert queries(3) == queries(40)
