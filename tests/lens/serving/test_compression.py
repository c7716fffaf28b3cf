"""Large API JSON answers are gzipped for clients that accept it (lens/serving/compression.py);
small answers, other clients and pages are left as they were.
"""

from __future__ import annotations

import gzip
from typing import Any

import pytest
from django.test import Client

from lens.core.config import AgentConfig
from lens.models import ApiToken, Team
from lens.serving.compression import MIN_BYTES, accepts_gzip
from memory.configuring import store_agent
from tests.factories import with_background

pytestmark = pytest.mark.django_db


@pytest.fixture
def big_team(team: Team) -> Team:
    """acme with ``big``, an agent whose composition is well above the threshold."""
    sections = [
        {
            "id": f"s{s}",
            "title": f"Section {s}",
            "entries": [{"key": f"k{e}", "value": f"value {s}/{e} zażółć"} for e in range(20)],
        }
        for s in range(5)
    ]
    store_agent(team, "big", AgentConfig.model_validate(with_background(*sections)))
    store_agent(team, "tiny", AgentConfig(name="Tiny"))
    return team


def get(team: Team, path: str, **headers: str) -> Any:
    _token, raw = ApiToken.objects.issue(team)
    return Client().get(path, headers={"Authorization": f"Bearer {raw}", **headers})


def vary(response: Any) -> set[str]:
    return {part.strip().lower() for part in response.get("Vary", "").split(",") if part}


def test_a_large_answer_is_gzipped_when_accepted_and_reads_the_same(big_team: Team) -> None:
    plain = get(big_team, "/api/agents/big/composition")
    packed = get(big_team, "/api/agents/big/composition", **{"Accept-Encoding": "gzip, br"})

    assert len(plain.content) >= MIN_BYTES
    assert packed.status_code == plain.status_code == 200
    assert packed["Content-Encoding"] == "gzip"
    assert packed["Content-Type"] == plain["Content-Type"]
    assert int(packed["Content-Length"]) == len(packed.content) < len(plain.content) / 3
    assert gzip.decompress(packed.content) == plain.content
    assert "accept-encoding" in vary(packed)


def test_a_large_answer_is_plain_for_a_client_that_does_not_accept_gzip(
    big_team: Team,
) -> None:
    for headers in ({}, {"Accept-Encoding": "identity"}, {"Accept-Encoding": "gzip;q=0, br"}):
        response = get(big_team, "/api/agents/big/composition", **headers)

        assert response.status_code == 200
        assert "Content-Encoding" not in response
        assert response.json()["agent"] == "big"
        # A cache must still tell this answer from the gzipped one.
        assert "accept-encoding" in vary(response)


def test_small_answers_are_left_alone(big_team: Team) -> None:
    for path in ("/api/agents/tiny", "/api/agents/nobody"):
        response = get(big_team, path, **{"Accept-Encoding": "gzip"})

        assert len(response.content) < MIN_BYTES
        assert "Content-Encoding" not in response
        assert "accept-encoding" not in vary(response)
        assert "error" in response.json() or response.json()["name"] == "Tiny"


def test_pages_are_never_compressed(big_team: Team, member_client: Client) -> None:
    """Pages carry CSRF tokens beside text a visitor controls (BREACH)."""
    response = member_client.get("/agents/big/", headers={"Accept-Encoding": "gzip"})

    assert response.status_code == 200
    assert len(response.content) >= MIN_BYTES
    assert "Content-Encoding" not in response


def test_the_api_documents_are_not_json_but_the_schema_is(big_team: Team) -> None:
    docs = Client().get("/api/docs", headers={"Accept-Encoding": "gzip"})
    schema = Client().get("/api/openapi.json", headers={"Accept-Encoding": "gzip"})

    assert "Content-Encoding" not in docs
    assert schema["Content-Encoding"] == "gzip"
    assert b'"paths"' in gzip.decompress(schema.content)


@pytest.mark.parametrize(
    ("header", "accepted"),
    [
        ("gzip", True),
        ("GZIP", True),
        ("gzip, deflate, br", True),
        ("br;q=1.0, gzip;q=0.8, *;q=0.1", True),
        ("*", True),
        ("x-gzip", True),
        ("", False),
        ("identity", False),
        ("br", False),
        ("gzip;q=0", False),
        ("gzip; q=0.000", False),
        ("*;q=0", False),
        ("*, gzip;q=0", False),
        ("gzip;q=nonsense", False),
    ],
)
def test_accept_encoding_is_read_with_its_weights(header: str, accepted: bool) -> None:
    assert accepts_gzip(header) is accepted
