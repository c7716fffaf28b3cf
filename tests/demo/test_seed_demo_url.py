"""``seed_demo`` prints where to log in at the address ``make run`` serves: the ``HOST``
and ``PORT`` environment, 127.0.0.1:8000 without them (SPEC §10)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError

from demo.management.commands.seed_demo import base_url

pytestmark = pytest.mark.django_db


def seed(monkeypatch: pytest.MonkeyPatch, **env: str) -> str:
    for name in ("HOST", "PORT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    out = StringIO()
    call_command("seed_demo", "--force", stdout=out)
    return out.getvalue()


def test_it_prints_the_host_and_port_it_is_served_at(monkeypatch: pytest.MonkeyPatch) -> None:
    out = seed(monkeypatch, HOST="192.168.1.20", PORT="9123")
    assert "Log in at http://192.168.1.20:9123/accounts/login/ as demo / demo" in out
    assert "8000" not in out


def test_without_host_and_port_it_prints_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "Log in at http://127.0.0.1:8000/accounts/login/ " in seed(monkeypatch)
    assert "http://127.0.0.1:8000/" in seed(monkeypatch, HOST="", PORT="")


@pytest.mark.parametrize(
    ("host", "port", "url"),
    [
        ("localhost", "1", "http://localhost:1"),
        ("127.0.0.1", "65535", "http://127.0.0.1:65535"),
        ("::1", "8001", "http://[::1]:8001"),
        # A wildcard bind is opened on the loopback of its family.
        ("0.0.0.0", "8000", "http://127.0.0.1:8000"),
        ("::", "8000", "http://[::1]:8000"),
    ],
)
def test_base_urls(host: str, port: str, url: str) -> None:
    assert base_url({"HOST": host, "PORT": port}) == url


@pytest.mark.parametrize("port", ["0", "65536", "80a", "-1", "٣٠٠٠", " 8000"])
def test_a_port_that_is_not_a_port_is_refused_before_seeding(
    monkeypatch: pytest.MonkeyPatch, port: str
) -> None:
    with pytest.raises(CommandError, match="PORT must be a port number"):
        seed(monkeypatch, PORT=port)
    assert not User.objects.filter(username="demo").exists()
