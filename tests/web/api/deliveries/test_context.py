"""Each delivery answer's ``context`` (SPEC §17, [Context windows] in docs/api.md): the
prompt's tokens against the window of the model the delivery named, else of the model
its agent declares, in the recording, the listing and the read alike.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings

from lens.models import Agent
from tests.api_calls import ApiClient
from tests.factories import remember

pytestmark = pytest.mark.django_db


def record(api: ApiClient, body: dict[str, str]) -> dict[str, Any]:
    response = api.post("/api/agents/wren/deliveries", body)
    assert response.status_code == 201, response.content
    return dict(response.json())


def answers(api: ApiClient, delivered: dict[str, Any]) -> list[dict[str, Any]]:
    """The delivery's ``context`` as recorded, read back and listed."""
    read = api.get(f"/api/deliveries/{delivered['delivery_id']}").json()
    rows = api.get("/api/agents/wren/deliveries").json()["deliveries"]
    (row,) = [row for row in rows if row["delivery_id"] == delivered["delivery_id"]]
    return [delivered["context"], read["context"], row["context"]]


def test_a_delivery_is_measured_against_the_model_it_named(api: ApiClient, wren: Agent) -> None:
    delivered = record(api, {"model": "gpt-4o-2024-08-06"})
    tokens = delivered["composition"]["tokens"]["total"]
    expected = {
        "model": "gpt-4o-2024-08-06",
        "window": 128_000,
        "share": tokens / 128_000,
        "level": "ok",
    }
    assert answers(api, delivered) == [expected] * 3


def test_a_delivery_naming_no_model_is_measured_against_the_agents(
    api: ApiClient, wren: Agent
) -> None:
    wren.model = "claude-sonnet-4"
    wren.save(update_fields=["model"])
    delivered = record(api, {"session": "s"})
    for context in answers(api, delivered):
        assert (context["model"], context["window"]) == ("claude-sonnet-4", 200_000)


@override_settings(MODEL_CONTEXT_WINDOWS={"tiny-1": 40})
def test_the_levels_follow_the_share_of_the_window(api: ApiClient, wren: Agent) -> None:
    remember(wren, "profile", "word " * 60, label="long")
    delivered = record(api, {"model": "tiny-1"})
    context = delivered["context"]
    assert context["window"] == 40
    assert context["share"] > 0.9
    assert context["level"] == "alarm"
    assert answers(api, delivered) == [context] * 3


def test_an_unknown_model_or_none_has_no_window(api: ApiClient, wren: Agent) -> None:
    unknown = record(api, {"model": "house-model-7"})
    assert answers(api, unknown)[0] == {
        "model": "house-model-7",
        "window": None,
        "share": None,
        "level": None,
    }
    nameless = record(api, {"session": "s"})
    assert nameless["context"] == {"model": None, "window": None, "share": None, "level": None}
