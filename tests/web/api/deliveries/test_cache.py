"""The prompt-cache figures in every delivery answer (SPEC §17): recording, the listing
and reading one; ``"cache": null`` for a delivery recorded before they were kept.
"""

from __future__ import annotations

from typing import Any

import pytest

from lens.core.token_counts import load_encoding
from lens.models import Agent
from memory.models import Delivery
from tests.api_calls import ApiClient, api_prompt_text
from tests.factories import remember
from tests.samples import leading_equal

pytestmark = pytest.mark.django_db

CACHE_KEYS = {"prefix_tokens", "prefix_chars", "total_tokens", "first_change"}
_encoding = load_encoding()


def post_delivery(api: ApiClient) -> dict[str, Any]:
    response = api.post("/api/agents/wren/deliveries", {"session": "s"})
    assert response.status_code == 201, response.content
    return dict(response.json())


def listed(api: ApiClient) -> dict[str, dict[str, Any]]:
    response = api.get("/api/agents/wren/deliveries")
    assert response.status_code == 200
    return {row["delivery_id"]: row for row in response.json()["deliveries"]}


def read(api: ApiClient, delivery_id: str) -> dict[str, Any]:
    response = api.get(f"/api/deliveries/{delivery_id}")
    assert response.status_code == 200
    return dict(response.json())


def test_every_answer_carries_the_figures_against_the_previous_delivery(
    api: ApiClient, wren: Agent
) -> None:
    first = post_delivery(api)
    tokens = first["composition"]["tokens"]["total"]
    assert first["cache"] == {
        "prefix_tokens": 0,
        "prefix_chars": 0,
        "total_tokens": tokens,
        "first_change": None,
    }

    same = post_delivery(api)
    chars = len(api_prompt_text(same["composition"]))
    assert same["cache"] == {
        "prefix_tokens": tokens,
        "prefix_chars": chars,
        "total_tokens": tokens,
        "first_change": None,
    }

    remember(wren, "profile", "The user's name is Ada.", label="name")
    changed = post_delivery(api)
    old, new = api_prompt_text(same["composition"]), api_prompt_text(changed["composition"])
    assert changed["cache"] == {
        "prefix_tokens": leading_equal(
            _encoding.encode_ordinary(old), _encoding.encode_ordinary(new)
        ),
        "prefix_chars": leading_equal(old, new),
        "total_tokens": changed["composition"]["tokens"]["total"],
        "first_change": {"section": "Context", "background_section": "user_profile"},
    }

    rows = listed(api)
    for answer in (first, same, changed):
        assert set(answer["cache"]) == CACHE_KEYS
        assert rows[answer["delivery_id"]]["cache"] == answer["cache"]
        assert read(api, answer["delivery_id"])["cache"] == answer["cache"]
        assert rows[answer["delivery_id"]]["tokens"] == answer["cache"]["total_tokens"]


def test_a_delivery_recorded_before_the_figures_answers_null(api: ApiClient, wren: Agent) -> None:
    old = post_delivery(api)
    # As the migration left the deliveries recorded before it.
    Delivery.objects.filter(pk=old["delivery_id"]).update(
        cache_prefix_tokens=None,
        cache_prefix_chars=None,
        changed_section=None,
        changed_background_section=None,
    )
    new = post_delivery(api)
    assert listed(api)[old["delivery_id"]]["cache"] is None
    assert read(api, old["delivery_id"])["cache"] is None
    assert "cache" in read(api, old["delivery_id"])
    assert listed(api)[new["delivery_id"]]["cache"]["first_change"] is None


def test_the_listing_reads_no_more_queries_for_the_figures(
    api: ApiClient, wren: Agent, django_assert_max_num_queries: Any
) -> None:
    for n in range(5):
        remember(wren, "profile", f"Fact {n}.", label=f"fact{n}")
        post_delivery(api)
    with django_assert_max_num_queries(4):
        rows = listed(api)
    assert all(row["cache"] is not None for row in rows.values())
