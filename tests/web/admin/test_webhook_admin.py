"""Webhook endpoints in the admin go through the operations: adding one is
``create_endpoint`` (the URL guard, the audit event) and shows the secret once, on its
own page; deleting is ``delete_endpoint`` (audited); an endpoint's page is read-only and
lists its recent tries, never its secret."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.sessions.models import Session
from django.test import Client
from django.utils import timezone

from lens.actors import SYSTEM
from lens.models import AuditEvent, Team
from tests.factories import Unchanged
from tests.pages import assert_refused, dom
from webhooks.endpoints import create_endpoint
from webhooks.models import Attempt, Dispatch, Endpoint

pytestmark = pytest.mark.django_db

PUBLIC = "https://93.184.215.14/hooks/lens"
ADMIN = "/admin/webhooks/endpoint/"


def add(client: Client, team: Team, **fields: Any) -> Any:
    data: dict[str, Any] = {
        "team": str(team.pk),
        "url": PUBLIC,
        "events": ["kv.written", "prompt.changed"],
        "description": "relay",
        **fields,
    }
    return client.post(f"{ADMIN}add/", data)


def test_adding_goes_through_the_operation_and_shows_the_secret_once(
    admin_client: Client, team: Team
) -> None:
    response = add(admin_client, team)
    page = dom(response)
    secret = page.one("data-secret").squashed
    made = Endpoint.objects.get()
    assert (made.secret, made.url, made.events, made.created_by) == (
        secret,
        PUBLIC,
        ["kv.written", "prompt.changed"],
        "root",
    )
    assert "won't see it again" in page.one("role", "alert").squashed
    assert "no-store" in response["Cache-Control"]
    assert response.content.decode().count(secret) == 1
    event = AuditEvent.objects.filter(team=team).latest("seq")
    assert (event.action, event.actor, event.object_id) == ("webhook.created", "root", str(made.pk))
    assert LogEntry.objects.get().object_id == str(made.pk)

    for later in (admin_client.get(ADMIN), admin_client.get(f"{ADMIN}{made.pk}/change/")):
        assert later.status_code == 200
        assert secret not in later.content.decode()
    assert secret not in str(admin_client.cookies)
    assert all(secret not in json.dumps(s.get_decoded()) for s in Session.objects.all())


def test_a_refused_url_is_a_form_error_and_nothing_is_written(
    admin_client: Client, team: Team
) -> None:
    unchanged = Unchanged(ignore=("sessions.Session",))
    response = add(admin_client, team, url="https://10.0.0.8/hook")
    assert_refused(response, "10.0.0.8 resolves to 10.0.0.8, a private address.")
    unchanged.check()


def test_no_event_is_a_form_error(admin_client: Client, team: Team) -> None:
    assert_refused(add(admin_client, team, events=[]), "Choose at least one event type")
    assert not Endpoint.objects.exists()


def test_all_events_beside_others_is_all_events(admin_client: Client, team: Team) -> None:
    add(admin_client, team, events=["*", "kv.written"])
    assert Endpoint.objects.get().events == ["*"]


def test_an_endpoints_page_is_read_only_with_its_tries_and_no_secret(
    admin_client: Client, team: Team
) -> None:
    endpoint = create_endpoint(team, SYSTEM, PUBLIC, ["*"], "relay").endpoint
    dispatch = Dispatch.objects.get()
    Attempt.objects.create(
        dispatch=dispatch,
        endpoint=endpoint,
        at=timezone.now(),
        status_code=502,
        duration_ms=31,
        error="HTTP 502",
    )
    response = admin_client.get(f"{ADMIN}{endpoint.pk}/change/")
    html = response.content.decode()
    assert response.status_code == 200
    assert endpoint.secret not in html
    assert 'name="url"' not in html  # nothing to edit
    assert dispatch.message_id in html
    assert "HTTP 502" in html
    assert f"/settings/webhooks/{endpoint.pk}/?team=acme" in html
    # A post to the page changes nothing.
    before = Endpoint.objects.values().get()
    admin_client.post(f"{ADMIN}{endpoint.pk}/change/", {"url": "https://93.184.215.15/"})
    assert Endpoint.objects.values().get() == before


def test_deleting_goes_through_the_operation(admin_client: Client, team: Team) -> None:
    endpoint = create_endpoint(team, SYSTEM, PUBLIC, ["*"]).endpoint
    confirm = admin_client.get(f"{ADMIN}{endpoint.pk}/delete/")
    assert confirm.status_code == 200
    assert "Messages (sent or waiting): 1" in confirm.content.decode()
    response = admin_client.post(f"{ADMIN}{endpoint.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not Endpoint.objects.exists()
    event = AuditEvent.objects.filter(team=team).latest("seq")
    assert (event.action, event.actor) == ("webhook.deleted", "root")


def test_deleting_several_writes_an_audit_event_for_each(admin_client: Client, team: Team) -> None:
    made = [create_endpoint(team, SYSTEM, f"{PUBLIC}/{n}", ["kv.written"]).endpoint for n in (1, 2)]
    response = admin_client.post(
        ADMIN,
        {
            "action": "delete_selected",
            "_selected_action": [str(e.pk) for e in made],
            "post": "yes",
        },
    )
    assert response.status_code == 302
    assert not Endpoint.objects.exists()
    deleted = AuditEvent.objects.filter(team=team, action="webhook.deleted")
    assert sorted(deleted.values_list("object_id", flat=True)) == sorted(str(e.pk) for e in made)


def test_the_list_reads_the_same_queries_for_two_endpoints_or_twenty(
    admin_client: Client, team: Team, django_assert_max_num_queries: Any
) -> None:
    for n in range(2):
        create_endpoint(team, SYSTEM, f"{PUBLIC}/{n}", ["*"])
    admin_client.get(ADMIN)
    with django_assert_max_num_queries(12) as captured:
        assert admin_client.get(ADMIN).status_code == 200
    for n in range(2, 20):
        create_endpoint(team, SYSTEM, f"{PUBLIC}/{n}", ["*"])
    with django_assert_max_num_queries(len(captured), info="20 webhooks"):
        assert admin_client.get(ADMIN).status_code == 200


def test_a_member_without_the_admin_cannot_add(member_client: Client, team: Team) -> None:
    response = add(member_client, team)
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")
    assert not Endpoint.objects.exists()
