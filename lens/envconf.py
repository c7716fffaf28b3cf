"""Typed readers for settings that come from the environment.

Each helper fails loudly with ``ImproperlyConfigured`` on a value it cannot
understand, so a typo in a deployment shows up at start-up, not as a silent default.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass
from typing import overload
from urllib.parse import unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

from lens.core.context_windows import merged_windows, parse_windows

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be one of 1/0/true/false, got {raw!r}")


def env_int(name: str, default: int, *, minimum: int = 0) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {value}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    items = [item.strip() for item in raw.split(",")]
    return [item for item in items if item]


@overload
def env_str(name: str, default: str) -> str: ...
@overload
def env_str(name: str, default: None = None) -> str | None: ...
def env_str(name: str, default: str | None = None) -> str | None:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return raw


def env_choice(name: str, default: str, choices: Collection[str]) -> str:
    """One of ``choices`` (compared case-insensitively, returned as listed)."""
    raw = env_str(name, default)
    by_folded = {choice.casefold(): choice for choice in choices}
    if raw.strip().casefold() not in by_folded:
        raise ImproperlyConfigured(f"{name} must be one of {', '.join(choices)}, got {raw!r}")
    return by_folded[raw.strip().casefold()]


def env_context_windows(name: str) -> dict[str, int]:
    """The models' context windows: the default table with ``name``'s
    ``model=tokens`` items (comma-separated) added, or replacing the same names."""
    raw = os.environ.get(name)
    if raw is None:
        return merged_windows({})
    try:
        return merged_windows(parse_windows(raw))
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}: {exc}") from None


def https_origins(hosts: list[str]) -> list[str]:
    """The CSRF trusted origins for ``ALLOWED_HOSTS`` served over HTTPS.

    A leading dot (``.example.com``, any subdomain) becomes ``https://*.example.com``;
    ``*`` (any host) trusts no extra origin: same-origin POSTs pass without one.
    """
    origins = []
    for host in hosts:
        if host == "*":
            continue
        origins.append(f"https://*{host}" if host.startswith(".") else f"https://{host}")
    return origins


@dataclass(frozen=True)
class Smtp:
    host: str
    port: int
    user: str
    password: str
    use_tls: bool
    use_ssl: bool


# scheme -> (default port, STARTTLS, implicit TLS)
_SMTP_SCHEMES = {
    "smtp": (25, False, False),
    "smtp+tls": (587, True, False),
    "smtps": (465, False, True),
}


def smtp_settings(url: str | None) -> Smtp | None:
    """``EMAIL_URL`` (``smtp://``, ``smtp+tls://`` with STARTTLS, ``smtps://``), or None."""
    if url is None:
        return None
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _SMTP_SCHEMES or not parts.hostname:
        raise ImproperlyConfigured(
            f"EMAIL_URL must look like smtp[s|+tls]://user:password@host:port, got scheme {scheme!r}"
        )
    default_port, use_tls, use_ssl = _SMTP_SCHEMES[scheme]
    try:
        port = parts.port or default_port
    except ValueError:
        raise ImproperlyConfigured("EMAIL_URL has a port that is not a number") from None
    return Smtp(
        host=parts.hostname,
        port=port,
        user=unquote(parts.username or ""),
        password=unquote(parts.password or ""),
        use_tls=use_tls,
        use_ssl=use_ssl,
    )
