"""``GET /healthz`` (SPEC §13): 200 when the database answers ``SELECT 1``, else 503."""

from __future__ import annotations

from typing import Any, NoReturn

import pytest
from django.db import OperationalError, connections
from django.test import Client

pytestmark = pytest.mark.django_db


def test_healthz_answers_ok_without_login_or_token() -> None:
    response = Client().get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert "no-cache" in response["Cache-Control"]


def test_healthz_answers_head_and_refuses_writes() -> None:
    assert Client().head("/healthz").status_code == 200
    assert Client().post("/healthz").status_code == 405


def test_healthz_is_unavailable_when_the_database_does_not_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Simulates an outage: every attempt to talk to the database fails as it would with
    # the server down.
    def outage(*args: Any, **kwargs: Any) -> NoReturn:
        raise OperationalError("connection refused")

    monkeypatch.setattr(connections["default"], "cursor", outage)
    response = Client().get("/healthz")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable"}


def test_healthz_is_exempt_from_the_https_redirect(settings: Any) -> None:
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
    client = Client()
    assert client.get("/healthz").status_code == 200
    assert client.get("/accounts/login/").status_code == 301
