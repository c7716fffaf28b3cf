"""``X-Forwarded-*`` taken only from the proxy in front of the server.

The production server (``lens/serving/server.py``) hands every request to this wrapper first.
From a trusted proxy address, ``X-Forwarded-For`` names the client (the last hop that is
not itself a trusted proxy) and ``X-Forwarded-Proto`` the scheme. From anywhere else the
headers are removed before Django sees them, so a client talking to the server directly
cannot claim HTTPS (``SECURE_PROXY_SSL_HEADER`` under ``HTTPS=1``) or another address.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable
from typing import Any

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

FORWARDED = ("HTTP_X_FORWARDED_FOR", "HTTP_X_FORWARDED_PROTO", "HTTP_X_FORWARDED_HOST")
_Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class TrustedProxies:
    """Addresses and networks (``10.0.0.0/8``) whose forwarded headers are believed."""

    def __init__(self, entries: Iterable[str]) -> None:
        self.networks: list[_Network] = []
        for entry in entries:
            try:
                self.networks.append(ipaddress.ip_network(entry.strip(), strict=False))
            except ValueError:
                raise ValueError(
                    f"FORWARDED_ALLOW_IPS: {entry!r} is not an IP address or network"
                ) from None

    def __contains__(self, host: object) -> bool:
        if not isinstance(host, str) or not host:
            return False
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return False
        return any(address in network for network in self.networks)

    def client(self, forwarded_for: str) -> str:
        """The right-most hop that is not one of our proxies: the left-most entries are
        whatever the client chose to send."""
        hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
        for hop in reversed(hops):
            if hop not in self:
                return hop
        return hops[0] if hops else ""


def behind_proxy(app: WsgiApp, trusted: TrustedProxies) -> WsgiApp:
    def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if environ.get("REMOTE_ADDR") in trusted:
            if client := trusted.client(environ.get("HTTP_X_FORWARDED_FOR", "")):
                environ["REMOTE_ADDR"] = client
            proto = environ.get("HTTP_X_FORWARDED_PROTO", "").strip().lower()
            if proto in ("http", "https"):
                environ["wsgi.url_scheme"] = proto
        else:
            for name in FORWARDED:
                environ.pop(name, None)
        return app(environ, start_response)

    return application
