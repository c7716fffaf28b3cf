"""A JSON body that nests deeper than any body the API takes (``lens.core.nesting``) is
refused as every unreadable body is, 422 ``invalid_request`` in the envelope, on every
endpoint that reads a body: never a ``RecursionError`` and a 500.
"""

from __future__ import annotations

import logging

import pytest

from lens.core.nesting import MAX_DEPTH
from lens.models import Agent
from tests.api_calls import ApiClient, assert_error, kv_url
from tests.factories import Unchanged

pytestmark = pytest.mark.django_db

ENDPOINTS = [
    ("put", "/api/agents/wren"),
    ("post", "/api/agents/wren/memories"),
    ("post", "/api/agents/wren/memories/preview"),
    ("post", "/api/agents/wren/deliveries"),
    ("put", kv_url("cfg")),
    ("post", "/api/webhooks"),
]


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(("method", "path"), ENDPOINTS)
@pytest.mark.parametrize(
    "body",
    [
        nested(100_000),  # past the parser's own recursion
        '{"payload": ' + nested(100_000) + "}",
        '{"persona": ' + nested(MAX_DEPTH) + "}",  # parses; too deep for what reads it
    ],
    ids=["brackets", "in-a-field", "just-too-deep"],
)
def test_a_body_nested_too_deep_is_422_and_changes_nothing(
    api: ApiClient,
    wren: Agent,
    method: str,
    path: str,
    body: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    unchanged = Unchanged()
    with caplog.at_level(logging.ERROR):
        response = getattr(api, method)(path, raw=body)
    error = assert_error(response, 422, "invalid_request")
    assert error["message"] == f"Request body nests arrays and objects more than {MAX_DEPTH} deep."
    assert not [record for record in caplog.records if record.exc_info]
    unchanged.check()


def test_a_body_as_deep_as_allowed_is_read(api: ApiClient, wren: Agent) -> None:
    # ``{"payload": [[…]]}``: the object is one level, the brackets the other 63.
    body = '{"payload": ' + nested(MAX_DEPTH - 1) + "}"
    error = assert_error(api.put(kv_url("cfg"), raw=body), 422, "invalid_request")
    assert "nests" not in error["message"]  # read, then refused for its type
