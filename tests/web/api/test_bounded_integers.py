"""Integers from a request are bounded (SPEC §8): an offset, a limit or a version beyond
what the database's integer columns hold is refused with 422 by the API and answered
with 400 or 404 by the pages, never a 500 (SQLite cannot bind an integer over 2**63 - 1;
PostgreSQL's integer columns stop at 2**31 - 1).
"""

from __future__ import annotations

import re

import pytest
from django.test import Client

from kvstore import store
from lens.models import Agent, Team
from tests.api_calls import ApiClient, assert_error
from tests.factories import kv_page_url, write_versions

pytestmark = pytest.mark.django_db

LARGEST = 2**31 - 1
HUGE = ["2147483648", "9223372036854775808", "99999999999999999999"]

API_QUERIES = [
    "/api/agents/wren/memories?offset={}",
    "/api/agents/wren/memories?q=tea&offset={}",
    "/api/agents/wren/memories?limit={}",
    "/api/agents/wren/deliveries?offset={}",
    "/api/agents/wren/deliveries?limit={}",
    "/api/kv?offset={}",
    "/api/kv?limit={}",
    "/api/kv/cfg/history?offset={}",
    "/api/kv/cfg/history?limit={}",
    "/api/kv/cfg?version={}",
    "/api/kv/cfg/diff?from={}&to=1",
    "/api/kv/cfg/diff?from=1&to={}",
]


@pytest.fixture
def cfg(team: Team, wren: Agent) -> None:
    write_versions(team, "cfg", "one\n", "two\n")


@pytest.mark.parametrize("number", HUGE)
@pytest.mark.parametrize("path", API_QUERIES)
def test_an_api_integer_out_of_range_is_422(
    api: ApiClient, cfg: None, path: str, number: str
) -> None:
    error = assert_error(api.get(path.format(number)), 422, "invalid_request")
    (name,) = re.findall(r"(\w+)=\{\}", path)
    assert error["errors"][0]["loc"] == f"query.{name}", error


@pytest.mark.parametrize(
    "path",
    [
        "/api/agents/wren/memories?offset={}",
        "/api/agents/wren/memories?q=tea&offset={}",
        "/api/agents/wren/deliveries?offset={}",
        "/api/kv?offset={}",
        "/api/kv/cfg/history?offset={}",
    ],
)
def test_the_largest_offset_is_an_empty_page(api: ApiClient, cfg: None, path: str) -> None:
    response = api.get(path.format(LARGEST))
    assert response.status_code == 200, response.content
    assert response.json()["next_offset"] is None


@pytest.mark.parametrize("path", ["/api/kv/cfg?version={}", "/api/kv/cfg/diff?from={}&to=1"])
def test_the_largest_version_is_not_found(api: ApiClient, cfg: None, path: str) -> None:
    assert_error(api.get(path.format(LARGEST)), 404, "version_not_found")


@pytest.mark.parametrize("number", [2**31, 10**20])
def test_an_if_version_out_of_range_is_422_and_writes_nothing(
    api: ApiClient, team: Team, cfg: None, number: int
) -> None:
    response = api.put("/api/kv/cfg", {"payload": "three\n", "if_version": number})
    error = assert_error(response, 422, "invalid_request")
    assert error["errors"][0]["loc"] == "if_version"
    assert store.read(team, "cfg").version == 2


def test_the_largest_if_version_is_a_conflict(api: ApiClient, cfg: None) -> None:
    response = api.put("/api/kv/cfg", {"payload": "three\n", "if_version": LARGEST})
    assert assert_error(response, 409, "version_conflict")["current_version"] == 2


# --- pages ---------------------------------------------------------------------------


@pytest.mark.parametrize("number", [*HUGE, str(LARGEST)])
@pytest.mark.parametrize("path", ["/kv/cfg/?version={}", "/kv/cfg/raw/?version={}"])
def test_a_page_version_out_of_range_is_404(
    member_client: Client, cfg: None, path: str, number: str
) -> None:
    assert member_client.get(path.format(number)).status_code == 404


@pytest.mark.parametrize("number", HUGE)
@pytest.mark.parametrize("query", ["?from={}&to=2", "?from=1&to={}"])
def test_a_page_comparison_out_of_range_is_400(
    member_client: Client, cfg: None, query: str, number: str
) -> None:
    response = member_client.get(kv_page_url("cfg") + query.format(number))
    assert response.status_code == 400
    assert "must be a version number from 1 to 2" in response.content.decode()


@pytest.mark.parametrize("number", HUGE)
@pytest.mark.parametrize(
    "path", ["/memories/?page={}", "/kv/?page={}", "/approvals/?page={}", "/kv/cfg/?page={}"]
)
def test_a_page_number_out_of_range_shows_the_last_page(
    member_client: Client, cfg: None, path: str, number: str
) -> None:
    assert member_client.get(path.format(number)).status_code == 200


@pytest.mark.parametrize("number", [str(2**31), "99999999999999999999"])
def test_a_page_form_if_version_out_of_range_writes_nothing(
    member_client: Client, team: Team, cfg: None, number: str
) -> None:
    data = {"action": "write", "team": team.slug, "payload": "three\n", "if_version": number}
    response = member_client.post(kv_page_url("cfg"), data)
    assert response.status_code in (200, 400), response.status_code
    assert store.read(team, "cfg").version == 2
