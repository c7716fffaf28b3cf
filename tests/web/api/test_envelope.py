"""Every answer under /api/ keeps the error envelope, even where no endpoint answered."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path", ["/api/nowhere", "/api/kv/", "/api/agents/x/nowhere/deeper"])
def test_an_unknown_api_path_answers_404_in_the_envelope(path: str) -> None:
    response = Client().get(path)
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_a_wrong_method_answers_405_in_the_envelope_with_allow() -> None:
    response = Client().post("/api/kv/root")
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method_not_allowed"
    assert "PUT" in response["Allow"]


def test_the_api_docs_load_their_assets_locally_never_from_a_cdn() -> None:
    html = Client().get("/api/docs").content.decode()
    assert "/static/ninja/swagger-ui-bundle.js" in html
    assert "cdn." not in html
    assert Client().get("/static/ninja/swagger-ui-bundle.js").status_code == 200


def test_pages_outside_the_api_keep_their_html_404() -> None:
    response = Client().get("/no-such-page/")
    assert response.status_code == 404
    assert not response.get("Content-Type", "").startswith("application/json")
