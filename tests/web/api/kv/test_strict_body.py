"""The key/value write body is strict JSON (SPEC §8): an unknown field or a key named twice
is refused with 422 and writes nothing; the body is read as JSON whatever its
``Content-Type``, so ``curl -d`` (which sends a form type) works.
"""

from __future__ import annotations

from typing import Any

import pytest

from kvstore import store
from lens.models import Team
from tests.api_calls import ApiClient, assert_error, kv_put, kv_url
from tests.factories import Unchanged, write_versions

pytestmark = pytest.mark.django_db


@pytest.fixture
def unchanged(team: Team) -> Unchanged:
    write_versions(team, "cfg", "one")
    return Unchanged()


def put_raw(api: ApiClient, body: str | bytes, content_type: str) -> Any:
    return api.client.put(kv_url("cfg"), body, content_type=content_type, headers=api.headers)


@pytest.mark.parametrize(
    "extra",
    [{"ifversion": 1}, {"if_Version": 1}, {"version": 2}, {"payload2": "x"}, {"": None}],
)
def test_an_unknown_field_is_422_and_writes_nothing(
    api: ApiClient, unchanged: Unchanged, extra: dict[str, Any]
) -> None:
    error = assert_error(kv_put(api, "cfg", "two", **extra), 422, "invalid_request")
    (name,) = extra
    assert [problem["loc"] for problem in error["errors"]] == [name or "body"]
    assert "Extra inputs are not permitted" in error["message"]
    unchanged.check()


@pytest.mark.parametrize(
    "body",
    [
        '{"payload": "two", "payload": "three"}',
        '{"payload": "two", "if_version": 1, "if_version": 0}',
    ],
)
def test_a_key_named_twice_is_422_and_writes_nothing(
    api: ApiClient, unchanged: Unchanged, body: str
) -> None:
    error = assert_error(api.put(kv_url("cfg"), raw=body), 422, "invalid_request")
    assert "duplicate key" in error["message"]
    unchanged.check()


@pytest.mark.parametrize(
    "content_type",
    ["application/json", "application/x-www-form-urlencoded", "text/plain", "application/xml"],
)
def test_the_body_is_json_whatever_its_content_type(
    api: ApiClient, team: Team, unchanged: Unchanged, content_type: str
) -> None:
    response = put_raw(api, '{"payload": "two", "if_version": 1}', content_type)
    assert response.status_code == 200, response.content
    assert store.read(team, "cfg").payload == "two"


def test_a_form_encoded_body_is_not_json_and_is_refused(
    api: ApiClient, unchanged: Unchanged
) -> None:
    response = put_raw(api, "payload=two", "application/x-www-form-urlencoded")
    error = assert_error(response, 422, "invalid_request")
    assert "not valid JSON" in error["message"]
    unchanged.check()


def test_the_known_fields_still_write(api: ApiClient, team: Team, unchanged: Unchanged) -> None:
    assert kv_put(api, "cfg", "two", if_version=1).status_code == 200
    assert kv_put(api, "fresh", "new", if_version=0).status_code == 201
    assert store.read(team, "cfg").payload == "two"
