"""The model an agent declares (``"model"`` in its config) through the agents API: stored
and answered as given, a revision like any change, absent from every config that has
none (so configs stored before it existed keep their hashes), and the composition's
``context``: the prompt's tokens against that model's context window."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import quote

import pytest
from django.utils import timezone

from lens.core.config import AgentConfig
from lens.core.revisions import canonical_config, config_sha256
from lens.models import Revision
from tests.api_calls import ApiClient, assert_error, db_snapshot, without_revision
from tests.samples import SAMPLE_CONFIG

pytestmark = pytest.mark.django_db


def put(api: ApiClient, config: dict[str, Any], slug: str = "wren") -> Any:
    return api.put(f"/api/agents/{slug}", config)


def newest(slug: str = "wren") -> Revision:
    return Revision.objects.filter(agent__slug=slug).order_by("-number").select_related("config")[0]


def context(api: ApiClient, query: str = "") -> dict[str, Any]:
    response = api.get(f"/api/agents/wren/composition{query}")
    assert response.status_code == 200, response.content
    body = response.json()
    found: dict[str, Any] = body["context"]
    assert found["window"] is None or found["share"] == body["tokens"]["total"] / found["window"]
    return found


# --- the config field ---------------------------------------------------------------


def test_a_declared_model_is_stored_and_answered_as_given(api: ApiClient) -> None:
    answer = put(api, {**SAMPLE_CONFIG, "model": "GPT-4o-2024-08-06"})
    assert answer.status_code == 201, answer.content
    assert answer.json()["model"] == "GPT-4o-2024-08-06"
    read = api.get("/api/agents/wren").json()
    assert read["model"] == "GPT-4o-2024-08-06"
    revision = newest()
    assert '"model":"GPT-4o-2024-08-06"' in revision.config.text
    assert revision.config_id == config_sha256(
        canonical_config(AgentConfig(**without_revision(read)))
    )


def test_a_config_without_a_model_has_no_model_key_anywhere(api: ApiClient) -> None:
    assert put(api, SAMPLE_CONFIG).status_code == 201
    assert "model" not in api.get("/api/agents/wren").json()
    text = newest().config.text
    assert '"model"' not in text
    # The text is exactly what was written before the field existed: still canonical.
    assert canonical_config(AgentConfig.model_validate_json(text)) == text
    listed = api.get("/api/agents/wren/revisions/1").json()
    assert "model" not in listed["config"]


def test_null_is_no_model_and_a_save_that_changes_nothing_writes_no_revision(
    api: ApiClient,
) -> None:
    put(api, SAMPLE_CONFIG)
    again = put(api, {**SAMPLE_CONFIG, "model": None})
    assert again.status_code == 200
    assert again.json()["revision"] == 1
    assert "model" not in again.json()
    put(api, {**SAMPLE_CONFIG, "model": "gpt-4o"})
    read_back = api.get("/api/agents/wren").json()
    assert put(api, read_back).json()["revision"] == 2  # sent back as read: no change
    assert Revision.objects.filter(agent__slug="wren").count() == 2


def test_declaring_changing_and_removing_the_model_are_revisions(api: ApiClient) -> None:
    put(api, SAMPLE_CONFIG)
    for model, number in (("gpt-4o", 2), ("claude-sonnet-4", 3), (None, 4)):
        config = {**SAMPLE_CONFIG, **({"model": model} if model else {})}
        assert put(api, config).json()["revision"] == number
        assert newest().summary == [{"change": "field_changed", "field": "model"}]
    diff = api.get("/api/agents/wren/revisions/3/diff").json()
    assert '-  "model": "gpt-4o",' in diff["config_diff"]
    assert '+  "model": "claude-sonnet-4",' in diff["config_diff"]
    assert diff["prompt_diff"] == ""  # the model is rendered nowhere in the prompt


@pytest.mark.parametrize(
    "model", ["", "gpt 4o", " gpt-4o", "gpt-4o\n", "x" * 129, 4, True, ["gpt-4o"], "gpt\u202e4o"]
)
def test_a_bad_model_is_refused_and_nothing_changes(api: ApiClient, model: Any) -> None:
    put(api, {**SAMPLE_CONFIG, "model": "gpt-4o"})
    before = db_snapshot()
    error = assert_error(put(api, {**SAMPLE_CONFIG, "model": model}), 422, "invalid_request")
    assert [problem["loc"] for problem in error["errors"]] == ["model"], error
    assert db_snapshot() == before


def test_an_unknown_model_is_accepted(api: ApiClient) -> None:
    answer = put(api, {**SAMPLE_CONFIG, "model": "acme/house-model-v3:latest"})
    assert answer.status_code == 201
    assert context(api) == {
        "model": "acme/house-model-v3:latest",
        "window": None,
        "share": None,
        "level": None,
    }


# --- the composition's context -------------------------------------------------------


def test_the_composition_measures_the_prompt_against_the_declared_model(api: ApiClient) -> None:
    put(api, {**SAMPLE_CONFIG, "model": "gpt-4o-mini-2024-07-18"})
    found = context(api)
    assert (found["model"], found["window"], found["level"]) == (
        "gpt-4o-mini-2024-07-18",
        128_000,
        "ok",
    )
    assert 0 < found["share"] < 0.01


def test_the_operators_table_decides_the_window_and_the_level(
    api: ApiClient, settings: Any
) -> None:
    put(api, {**SAMPLE_CONFIG, "model": "team-llama"})
    tokens = api.get("/api/agents/wren/composition").json()["tokens"]["total"]
    for window, level in ((tokens * 2 + 1, "ok"), (tokens * 2, "warning"), (tokens, "alarm")):
        settings.MODEL_CONTEXT_WINDOWS = {"team-llama": window}
        assert context(api)["level"] == level
    settings.MODEL_CONTEXT_WINDOWS = {"team-llama": tokens // 2}
    assert context(api)["share"] == tokens / (tokens // 2) > 1


def test_as_of_measures_against_the_model_declared_then(api: ApiClient) -> None:
    put(api, {**SAMPLE_CONFIG, "model": "gpt-4o"})
    then: datetime = timezone.now()
    put(api, {**SAMPLE_CONFIG, "model": "gemini-1.5-pro"})
    assert context(api)["window"] == 2_097_152
    past = context(api, f"?as_of={quote(then.isoformat())}")
    assert (past["model"], past["window"]) == ("gpt-4o", 128_000)


def test_a_delivery_stores_the_composition_without_the_context(api: ApiClient) -> None:
    put(api, {**SAMPLE_CONFIG, "model": "gpt-4o"})
    delivered = api.post("/api/agents/wren/deliveries", {"model": "gpt-4.1"}).json()
    assert "context" not in delivered["composition"]
    live = api.get("/api/agents/wren/composition").json()
    assert {k: v for k, v in live.items() if k != "context"} == delivered["composition"]
