"""Recording a delivery through the API (SPEC §11): ``POST /api/agents/{slug}/deliveries``
answers the composition as it is at that moment and records exactly that; a refused
request records nothing.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime
from typing import Any

import pytest
from django.utils import timezone

from lens.models import Agent, ApiToken, Team
from memory.deliveries.ledger import composition_data
from memory.models import CompositionMemory, Delivery, StoredComposition
from tests.api_calls import (
    ApiClient,
    api_composed_ids,
    api_composition,
    api_prompt_text,
    assert_error,
)
from tests.factories import create_agent, memory_config, preference, remember
from tests.samples import GRINNING

pytestmark = pytest.mark.django_db

DELIVERED_KEYS = {
    "delivery_id",
    "delivered_at",
    "session",
    "model",
    "revision",
    "prompt_sha256",
    "composition",
    "cache",
    "context",
}
RECORD_ID = re.compile(r"[0-9a-z]{18}")
URL = "/api/agents/wren/deliveries"


def post_delivery(api: ApiClient, body: Any = None, slug: str = "wren") -> dict[str, Any]:
    """Record a delivery that must be accepted; return the answer."""
    # No body at all is sent as no bytes (the test client would send an empty form).
    url = f"/api/agents/{slug}/deliveries"
    response = api.post(url, raw="") if body is None else api.post(url, body)
    assert response.status_code == 201, response.content
    assert response["Content-Type"].startswith("application/json")
    return dict(response.json())


def delivery_rows() -> tuple[int, int, int]:
    """How many deliveries, stored compositions and memory index rows exist."""
    return (
        Delivery.objects.count(),
        StoredComposition.objects.count(),
        CompositionMemory.objects.count(),
    )


def prompt_sha256(composition: dict[str, Any]) -> str:
    """SPEC §11, independently: sections joined by a blank line, each the concatenation
    of its fragments' texts, hashed as UTF-8."""
    return hashlib.sha256(api_prompt_text(composition).encode("utf-8")).hexdigest()


# --- the answer ------------------------------------------------------------------------


def test_a_delivery_answers_201_with_the_composition_of_that_moment(
    api: ApiClient, wren: Agent
) -> None:
    name = remember(wren, "profile", "Doug", label="name")
    preference(wren, "Prefers tea.", label="drink")  # pending: dropped, not composed
    live = api_composition(api)

    answer = post_delivery(api, {"session": "sess-1", "model": "claude-opus-4"})

    assert set(answer) == DELIVERED_KEYS
    assert answer["composition"] == live
    assert api_composed_ids(answer["composition"]) == [name]
    assert RECORD_ID.fullmatch(answer["delivery_id"])
    assert (answer["session"], answer["model"]) == ("sess-1", "claude-opus-4")
    assert answer["revision"] == 1  # the agent's one revision
    assert answer["prompt_sha256"] == prompt_sha256(live)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", answer["delivered_at"])

    delivery = Delivery.objects.select_related("composition").get(pk=answer["delivery_id"])
    assert delivery.agent_id == wren.pk
    assert datetime.fromisoformat(answer["delivered_at"]) == delivery.delivered_at
    assert (delivery.session, delivery.model) == ("sess-1", "claude-opus-4")
    stored = delivery.composition
    assert composition_data(stored) == live
    assert stored.prompt_sha256 == answer["prompt_sha256"]
    assert stored.chars == len(api_prompt_text(live))
    assert stored.tokens == live["tokens"]["total"]
    assert (stored.sections, stored.entries) == (
        live["counts"]["sections"],
        live["counts"]["entries"],
    )
    assert stored.memory_ids == name
    assert list(CompositionMemory.objects.values_list("composition_id", "memory_id")) == [
        (stored.pk, name)
    ]


def test_the_composition_endpoint_still_records_nothing(api: ApiClient, wren: Agent) -> None:
    api_composition(api)
    assert delivery_rows() == (0, 0, 0)


@pytest.mark.parametrize("body", [None, {}, {"session": None, "model": None}])
def test_an_empty_body_records_a_delivery_without_session_or_model(
    api: ApiClient, wren: Agent, body: Any
) -> None:
    answer = post_delivery(api, body)
    assert (answer["session"], answer["model"]) == (None, None)
    delivery = Delivery.objects.get(pk=answer["delivery_id"])
    assert (delivery.session, delivery.model) == (None, None)
    assert answer["composition"] == api_composition(api)


def test_one_of_session_and_model_may_come_alone(api: ApiClient, wren: Agent) -> None:
    assert post_delivery(api, {"model": "m"})["session"] is None
    assert post_delivery(api, {"session": "s"})["model"] is None


def test_the_token_is_recorded_as_who_asked(
    api: ApiClient, wren: Agent, api_token: ApiToken
) -> None:
    answer = post_delivery(api)
    delivery = Delivery.objects.get(pk=answer["delivery_id"])
    assert delivery.actor_token == api_token
    assert api_token.prefix in delivery.actor


@pytest.mark.parametrize(
    "value", ["x" * 128, GRINNING * 128, "é" * 128, "s", "東京 session ✓", "a\u00a0b"]
)
def test_labels_up_to_128_code_points_are_kept_exactly(
    api: ApiClient, wren: Agent, value: str
) -> None:
    answer = post_delivery(api, {"session": value, "model": value})
    assert (answer["session"], answer["model"]) == (value, value)
    delivery = Delivery.objects.get(pk=answer["delivery_id"])
    assert (delivery.session, delivery.model) == (value, value)


def test_each_delivery_is_a_new_row_and_time_moves_on(api: ApiClient, wren: Agent) -> None:
    first, second = post_delivery(api), post_delivery(api)
    assert first["delivery_id"] != second["delivery_id"]
    assert first["composition"] == second["composition"]
    assert first["prompt_sha256"] == second["prompt_sha256"]
    assert datetime.fromisoformat(first["delivered_at"]) <= datetime.fromisoformat(
        second["delivered_at"]
    )
    assert delivery_rows()[:2] == (2, 1)


# --- refusals record nothing ------------------------------------------------------------

BAD_BODIES = {
    "empty session": '{"session": ""}',
    "empty model": '{"model": ""}',
    "129 code points": '{"session": "' + "x" * 129 + '"}',
    "129 astral code points": '{"model": "' + GRINNING * 129 + '"}',
    "a newline": '{"session": "a\\nb"}',
    "a tab": '{"model": "a\\tb"}',
    "a NUL": '{"session": "a\\u0000b"}',
    "U+001F": '{"session": "\\u001f"}',
    "U+007F": '{"model": "x\\u007f"}',
    "U+0085": '{"session": "x\\u0085"}',
    "U+2028": '{"model": "x\\u2028y"}',
    "U+2029": '{"session": "x\\u2029"}',
    "a lone surrogate": '{"session": "\\ud800"}',
    "a bidi override": '{"session": "a\\u202eb"}',
    "a bidi isolate": '{"model": "gpt\\u2066x\\u2069"}',
    "a right-to-left mark": '{"model": "\\u200f"}',
    "a number": '{"session": 7}',
    "a float": '{"model": 1.5}',
    "a boolean": '{"model": true}',
    "a list": '{"session": ["s"]}',
    "an object": '{"model": {"name": "m"}}',
    "an unknown field": '{"session": "s", "user": "u"}',
    "only an unknown field": '{"agent": "wren"}',
    "not an object": '["session"]',
    "a string": '"session"',
    "not JSON": '{"session": ',
}


@pytest.mark.parametrize("raw", BAD_BODIES.values(), ids=BAD_BODIES.keys())
def test_a_bad_body_is_refused_and_records_nothing(api: ApiClient, wren: Agent, raw: str) -> None:
    remember(wren, "profile", "Doug", label="name")  # so a delivery would index a memory
    before = delivery_rows()
    assert_error(api.post(URL, raw=raw), 422)
    assert delivery_rows() == before == (0, 0, 0)


def test_a_body_with_a_duplicate_key_is_refused_and_records_nothing(
    api: ApiClient, wren: Agent
) -> None:
    response = api.post(URL, raw='{"session": "a", "session": "b"}')
    assert delivery_rows() == (0, 0, 0)
    assert_error(response, 422)


def test_a_label_refusal_says_which_field_and_why(api: ApiClient, wren: Agent) -> None:
    error = assert_error(api.post(URL, {"session": "ok", "model": "x" * 129}), 422)
    assert error["code"] == "invalid_request"
    assert "model" in str(error)
    assert "128" in str(error)


@pytest.mark.parametrize("field", ["session", "model"])
def test_a_bidi_refusal_says_which_field_and_why(api: ApiClient, wren: Agent, field: str) -> None:
    error = assert_error(api.post(URL, {field: "a\u202eb"}), 422, "invalid_request")
    assert field in str(error)
    assert "bidirectional control" in str(error)
    assert "U+202E" in str(error)
    assert delivery_rows() == (0, 0, 0)


def test_an_unknown_agent_is_not_found_and_nothing_is_recorded(api: ApiClient, wren: Agent) -> None:
    assert_error(api.post("/api/agents/nobody/deliveries", {}), 404, "agent_not_found")
    assert delivery_rows() == (0, 0, 0)


def test_another_teams_agent_is_not_found_and_nothing_is_recorded(
    api: ApiClient, other_api: ApiClient, wren: Agent, other_team: Team
) -> None:
    create_agent(other_team, "orca", memory_config(name="Orca"))
    assert_error(api.post("/api/agents/orca/deliveries", {}), 404, "agent_not_found")
    assert_error(other_api.post(URL, {}), 404, "agent_not_found")
    assert delivery_rows() == (0, 0, 0)


@pytest.mark.parametrize("token", [None, "not-a-token", "cl_" + "0" * 40])
def test_without_a_valid_token_nothing_is_recorded(wren: Agent, token: str | None) -> None:
    assert_error(ApiClient(token).post(URL, {"session": "s"}), 401)
    assert delivery_rows() == (0, 0, 0)


def test_a_revoked_token_records_nothing(api: ApiClient, wren: Agent, api_token: ApiToken) -> None:
    post_delivery(api)
    ApiToken.objects.filter(pk=api_token.pk).update(revoked_at=timezone.now())
    assert_error(api.post(URL, {}), 401)
    assert delivery_rows()[0] == 1
