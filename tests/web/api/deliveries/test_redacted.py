"""Delivery answers after an erasure (SPEC §11, §15): a redacted prompt says
``"redacted": true`` and keeps the ``prompt_sha256`` it was delivered with; every other
answer keeps the exact shape of §11."""

from __future__ import annotations

import pytest

from lens.actors import Actor
from lens.models import Agent
from memory.core.deliveries import sha256_hex
from memory.erasure import erase_memory
from tests.api_calls import ApiClient, api_prompt_text
from tests.factories import remember

pytestmark = pytest.mark.django_db

SECRET = "Ambrose Tillinghast hides the spare key in the teapot"


def delivered(api: ApiClient, session: str) -> dict[str, object]:
    response = api.post("/api/agents/wren/deliveries", {"session": session})
    assert response.status_code == 201
    body: dict[str, object] = response.json()
    assert "redacted" not in body  # a fresh delivery is never redacted
    return body


def test_redacted_deliveries_say_so_and_keep_their_hash(api: ApiClient, wren: Agent) -> None:
    record_id = remember(wren, "profile", SECRET, label="key")
    first = delivered(api, "s1")
    second = delivered(api, "s2")
    remember(wren, "profile", "Has a dog", label="pet")
    erase_memory(record_id, Actor(label="operator"), "request")
    third = delivered(api, "s3")

    for body in (first, second):
        got = api.get(f"/api/deliveries/{body['delivery_id']}").json()
        assert got["redacted"] is True
        assert got["prompt_sha256"] == body["prompt_sha256"]
        text = api_prompt_text(got["composition"])
        assert "Tillinghast" not in text
        assert "[erased]" in text.split("\n")
        assert sha256_hex(text) != got["prompt_sha256"]
    got = api.get(f"/api/deliveries/{third['delivery_id']}").json()
    assert "redacted" not in got
    assert sha256_hex(api_prompt_text(got["composition"])) == got["prompt_sha256"]

    rows = api.get("/api/agents/wren/deliveries").json()["deliveries"]
    assert [(row["session"], row.get("redacted")) for row in rows] == [
        ("s3", None),
        ("s2", True),
        ("s1", True),
    ]
    assert [row["prompt_sha256"] for row in rows[1:]] == [
        second["prompt_sha256"],
        first["prompt_sha256"],
    ]

    diff = api.get(f"/api/deliveries/{third['delivery_id']}/diff").json()
    assert diff["redacted"] == {"from": True, "to": False}
    assert "-[erased]" in diff["diff"].split("\n")
    assert "Tillinghast" not in diff["diff"]
    first_diff = api.get(f"/api/deliveries/{first['delivery_id']}/diff").json()
    assert first_diff["redacted"] == {"from": False, "to": True}
    same = api.get(f"/api/deliveries/{second['delivery_id']}/diff").json()
    assert same["redacted"] == {"from": True, "to": True}
    assert same["diff"] == ""


def test_without_an_erasure_no_answer_says_redacted(api: ApiClient, wren: Agent) -> None:
    remember(wren, "profile", SECRET, label="key")
    body = delivered(api, "s1")
    delivered(api, "s2")
    assert "redacted" not in api.get(f"/api/deliveries/{body['delivery_id']}").json()
    rows = api.get("/api/agents/wren/deliveries").json()["deliveries"]
    assert all("redacted" not in row for row in rows)
    assert "redacted" not in api.get(f"/api/deliveries/{body['delivery_id']}/diff").json()
