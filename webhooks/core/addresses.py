"""Which webhook URLs and addresses may be called (SPEC §16): ``https://`` only (``http``
when allowed), no credentials in the URL, and never a loopback, private, link-local or
reserved address (unless allowed) — a webhook must not become a way to reach what is
behind the server (SSRF). The URL is checked when an endpoint is created and every
address its host resolves to is checked again before each send.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

URL_MAX = 2000
PORT_MAX = 65535

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class Target:
    """Where a URL points: its scheme, host (IDNA-encoded, no brackets) and port."""

    scheme: str
    host: str
    port: int


class Refused(ValueError):
    """A URL or an address a webhook may not call; the message says why."""


def parse(url: str, *, allow_http: bool) -> Target:
    """The target of ``url``, or ``Refused`` naming the first thing wrong with it."""
    if len(url) > URL_MAX:
        raise Refused(f"A webhook URL is at most {URL_MAX} characters; this one has {len(url)}.")
    if any(ord(char) < 0x21 or ord(char) == 0x7F for char in url):
        raise Refused("A webhook URL may not hold spaces or control characters.")
    try:
        parts = urlsplit(url)
    except ValueError as error:
        raise Refused(f"This is not a URL: {error}.") from None
    port = _port(parts)
    schemes = ("https", "http") if allow_http else ("https",)
    if parts.scheme not in schemes:
        allowed = " or ".join(f"{scheme}://" for scheme in schemes)
        raise Refused(f"A webhook URL must start with {allowed}.")
    if parts.username is not None or parts.password is not None:
        raise Refused("A webhook URL may not hold a user name or password.")
    host = _host(parts)
    default = 443 if parts.scheme == "https" else 80
    return Target(parts.scheme, host, default if port is None else port)


def _port(parts: SplitResult) -> int | None:
    """The URL's port, or None when it names none. Port 0 is refused, not read as "no
    port": a connection to port 0 is no connection at all, and reading it as the default
    would call a port the URL never named."""
    try:
        port = parts.port
    except ValueError:
        raise Refused(f"A webhook URL's port must be a number from 1 to {PORT_MAX}.") from None
    if port is not None and not 1 <= port <= PORT_MAX:
        raise Refused(f"A webhook URL's port must be a number from 1 to {PORT_MAX}.")
    return port


def _host(parts: SplitResult) -> str:
    host = parts.hostname or ""
    if not host:
        raise Refused("A webhook URL must name a host.")
    try:
        return host.encode("idna").decode("ascii") if not host.isascii() else host
    except UnicodeError:
        raise Refused(f"{host[:80]!r} is not a valid host name.") from None


def refusal(address: IpAddress) -> str | None:
    """Why ``address`` may not be called, or None when it is a public address."""
    if isinstance(address, ipaddress.IPv6Address):
        mapped = address.ipv4_mapped or address.sixtofour
        if mapped is not None:
            return refusal(mapped)
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_private:
        return "a private address"
    if address.is_multicast or address.is_unspecified or address.is_reserved:
        return "a reserved address"
    if not address.is_global:
        return "a reserved address"
    return None
