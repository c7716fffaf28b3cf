"""``/api/webhooks`` (SPEC §16): made, listed without their secret, deleted, rotated; URLs
a webhook may not call are refused and nothing is written."""

from __future__ import annotations

from typing import Any

import pytest

from lens.models import AuditEvent, Team
from tests.api_calls import ApiClient, assert_error, db_snapshot
from webhooks.endpoints import ENDPOINTS_MAX
from webhooks.models import Endpoint

pytestmark = pytest.mark.django_db
PUBLIC = "https://93.184.215.14/hooks/lens"  # a literal public address: no DNS needed


def make(api: ApiClient, url: str = PUBLIC, events: list[str] | None = None) -> dict[str, Any]:
    response = api.post("/api/webhooks", {"url": url, "events": events or ["*"]})
    assert response.status_code == 201, response.content
    return dict(response.json())


def test_a_webhook_is_made_listed_and_deleted(api: ApiClient, team: Team) -> None:
    made = make(api, events=["kv.written", "prompt.changed", "kv.written"])
    assert set(made) == {"id", "url", "events", "secret"}
    assert made["url"] == PUBLIC
    assert made["events"] == ["kv.written", "prompt.changed"]
    assert made["secret"].startswith("whsec_")
    listed = api.get("/api/webhooks").json()
    assert listed == {
        "webhooks": [
            {
                "id": made["id"],
                "url": PUBLIC,
                "events": ["kv.written", "prompt.changed"],
                "description": "",
                "failing": False,
            }
        ]
    }
    assert made["secret"] not in api.get("/api/webhooks").content.decode()
    assert api.delete(f"/api/webhooks/{made['id']}").status_code == 204
    assert api.get("/api/webhooks").json() == {"webhooks": []}
    actions = list(AuditEvent.objects.filter(team=team).values_list("action", "details"))
    assert actions[-2:] == [
        ("webhook.created", {"host": "93.184.215.14", "events": ["kv.written", "prompt.changed"]}),
        ("webhook.deleted", {"host": "93.184.215.14"}),
    ]


def test_another_teams_webhook_is_not_found(api: ApiClient, other_api: ApiClient) -> None:
    made = make(other_api)
    assert_error(api.delete(f"/api/webhooks/{made['id']}"), 404, "webhook_not_found")
    assert_error(api.post(f"/api/webhooks/{made['id']}/rotate"), 404, "webhook_not_found")
    assert_error(api.get(f"/api/webhooks/{made['id']}/attempts"), 404, "webhook_not_found")
    assert api.get("/api/webhooks").json() == {"webhooks": []}
    assert Endpoint.objects.count() == 1


def test_without_a_token_nothing_answers(anon_api: ApiClient) -> None:
    assert_error(anon_api.get("/api/webhooks"), 401)
    assert_error(anon_api.post("/api/webhooks", {"url": PUBLIC, "events": ["*"]}), 401)


@pytest.mark.parametrize(
    "url",
    [
        "https://127.0.0.1/hook",
        "https://localhost/hook",
        "https://10.0.0.8/hook",
        "https://192.168.1.20/hook",
        "https://169.254.169.254/latest/meta-data/",
        "https://[::1]/hook",
        "https://[::ffff:10.0.0.1]/hook",
        "https://0.0.0.0/hook",
        "https://100.64.0.1/hook",
        "http://93.184.215.14/hook",
        "https://user:pass@93.184.215.14/hook",
        "ftp://93.184.215.14/hook",
        "not a url",
        "https://93.184.215.14:0/hook",
        "https://93.184.215.14:65536/hook",
        "https://93.184.215.14:-443/hook",
    ],
)
def test_urls_a_webhook_may_not_call_are_refused(api: ApiClient, url: str) -> None:
    before = db_snapshot()
    error = assert_error(
        api.post("/api/webhooks", {"url": url, "events": ["*"]}), 422, "webhook_url_refused"
    )
    assert error["message"]
    assert db_snapshot() == before


def test_port_zero_is_refused_saying_so(api: ApiClient) -> None:
    # Not read as "no port" (which would call 443): port 0 names no port at all.
    before = db_snapshot()
    error = assert_error(
        api.post("/api/webhooks", {"url": "https://93.184.215.14:0/hook", "events": ["*"]}),
        422,
        "webhook_url_refused",
    )
    assert error["message"] == "A webhook URL's port must be a number from 1 to 65535."
    assert db_snapshot() == before


def test_unknown_events_and_long_descriptions_are_refused(api: ApiClient) -> None:
    before = db_snapshot()
    error = assert_error(
        api.post("/api/webhooks", {"url": PUBLIC, "events": ["kv.writen"]}), 422, "invalid_request"
    )
    assert "kv.writen" in error["message"]
    assert "kv.written" in error["known"]
    assert_error(api.post("/api/webhooks", {"url": PUBLIC, "events": []}), 422, "invalid_request")
    long = {"url": PUBLIC, "events": ["*"], "description": "d" * 501}
    assert "at most 500" in assert_error(api.post("/api/webhooks", long), 422)["message"]
    assert db_snapshot() == before
    longest = {"url": PUBLIC, "events": ["*"], "description": "é" * 500}
    assert api.post("/api/webhooks", longest).status_code == 201


def test_a_team_keeps_a_bounded_number_of_webhooks(api: ApiClient) -> None:
    for _ in range(ENDPOINTS_MAX):
        make(api)
    before = db_snapshot()
    assert_error(
        api.post("/api/webhooks", {"url": PUBLIC, "events": ["*"]}), 409, "too_many_webhooks"
    )
    assert db_snapshot() == before


def test_a_rotation_answers_a_new_secret_once(api: ApiClient, team: Team) -> None:
    made = make(api)
    rotated = api.post(f"/api/webhooks/{made['id']}/rotate").json()
    assert rotated["id"] == made["id"]
    assert rotated["secret"].startswith("whsec_")
    assert rotated["secret"] != made["secret"]
    endpoint = Endpoint.objects.get()
    assert endpoint.previous_secret == made["secret"]
    assert AuditEvent.objects.filter(team=team).last().action == "webhook.rotated"  # type: ignore[union-attr]  # the rotation's event exists
