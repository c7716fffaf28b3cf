"""Routing cases in the admin: added, changed and deleted through ``replace_cases``
(one audit event each), checked as the API checks them, nothing written when refused."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from lens.actors import SYSTEM
from lens.models import Agent, AuditEvent
from memory.core.routing_eval import CaseInput
from memory.models import RoutingCase
from memory.routing_cases import replace_cases
from tests.api_calls import db_snapshot

pytestmark = pytest.mark.django_db
ADD = "/admin/memory/routingcase/add/"


def fields(agent: Agent, **changes: Any) -> dict[str, Any]:
    return {
        "agent": agent.pk,
        "name": "the name",
        "kind": "profile",
        "content": "Ada.",
        "label": "",
        "tags": "[]",
        "expect_section": "user_profile",
        **changes,
    }


def changed_events() -> int:
    return AuditEvent.objects.filter(action="routing_cases.changed").count()


def test_adding_a_case_goes_through_the_operation(admin_client: Client, wren: Agent) -> None:
    response = admin_client.post(ADD, fields(wren))
    assert response.status_code == 302, response.content
    case = RoutingCase.objects.get()
    assert (case.name, case.expect_section, case.position) == ("the name", "user_profile", 0)
    assert changed_events() == 1
    event = AuditEvent.objects.get(action="routing_cases.changed")
    assert event.actor == "root"


def test_blank_expectation_means_declined(admin_client: Client, wren: Agent) -> None:
    admin_client.post(ADD, fields(wren, expect_section="", kind="fact"))
    assert RoutingCase.objects.get().expect_section is None


@pytest.mark.parametrize(
    "bad",
    [{"kind": "Nope"}, {"name": "x" * 65}, {"label": "a\u202eb"}, {"expect_section": "No Id"}],
)
def test_a_case_that_would_not_save_is_refused(
    admin_client: Client, wren: Agent, bad: dict[str, Any]
) -> None:
    before = db_snapshot()
    response = admin_client.post(ADD, fields(wren, **bad))
    assert response.status_code == 200  # the form again, with its errors
    assert b"errorlist" in response.content
    assert db_snapshot() == before


def test_a_name_taken_is_refused(admin_client: Client, wren: Agent) -> None:
    admin_client.post(ADD, fields(wren))
    before = db_snapshot()
    response = admin_client.post(ADD, fields(wren))
    assert b"Another case of this agent has this name." in response.content
    assert db_snapshot() == before


def test_changing_and_deleting_rewrite_the_list_in_order(admin_client: Client, wren: Agent) -> None:
    rows = [
        CaseInput.model_validate(
            {"name": f"c{i}", "kind": "fact", "content": f"{i}.", "expect": {"section": None}}
        )
        for i in range(3)
    ]
    replace_cases(wren, rows, SYSTEM)
    middle = RoutingCase.objects.get(name="c1")
    response = admin_client.post(
        f"/admin/memory/routingcase/{middle.pk}/change/",
        fields(wren, name="c1 renamed", kind="fact", expect_section=""),
    )
    assert response.status_code == 302, response.content
    assert list(RoutingCase.objects.order_by("position").values_list("name", flat=True)) == [
        "c0",
        "c1 renamed",
        "c2",
    ]
    first = RoutingCase.objects.get(name="c0")
    response = admin_client.post(f"/admin/memory/routingcase/{first.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert list(RoutingCase.objects.order_by("position").values_list("name", "position")) == [
        ("c1 renamed", 0),
        ("c2", 1),
    ]
    assert changed_events() == 3


def test_the_list_filters_by_team(admin_client: Client, wren: Agent) -> None:
    admin_client.post(ADD, fields(wren))
    response = admin_client.get("/admin/memory/routingcase/?agent__team__id__exact=1")
    assert response.status_code == 200
