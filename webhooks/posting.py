"""One HTTP POST to a webhook endpoint, bounded in every way a receiver could stretch it.

- The URL is checked again and its host resolved here; every address is checked
  (``webhooks.core.addresses``), and the connection goes to an address that was
  checked, so a DNS answer that changes between check and connect (rebinding) cannot
  send the request elsewhere.
- Redirects are never followed: a 3xx is a failed try, whatever it points to.
- The whole exchange (connect, TLS, request, answer) has one deadline; a receiver that
  drips its answer a byte at a time is cut off at it. At most ``ANSWER_MAX`` bytes of the
  answer are read.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from webhooks.core.addresses import IpAddress, Refused, Target, parse, refusal

ANSWER_MAX = 64 * 1024
ERROR_MAX = 300


@dataclass(frozen=True)
class Outcome:
    status: int | None  # the receiver's HTTP status; None when it never answered
    duration_ms: int
    error: str  # empty on success

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300 and not self.error


def resolve(target: Target) -> list[IpAddress]:
    """Every address ``target``'s host resolves to (``Refused`` when it resolves to none)."""
    import ipaddress

    try:
        found = socket.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as error:
        raise Refused(f"{target.host} does not resolve ({error}).") from None
    addresses: list[IpAddress] = []
    for _family, _type, _proto, _name, sockaddr in found:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise Refused(f"{target.host} does not resolve.")
    return addresses


def checked(url: str, *, allow_http: bool, allow_private: bool) -> tuple[Target, list[IpAddress]]:
    """The target of ``url`` and its addresses, or ``Refused`` saying why it may not be
    called: at creation and before every send."""
    target = parse(url, allow_http=allow_http)
    addresses = resolve(target)
    if not allow_private:
        for address in addresses:
            why = refusal(address)
            if why is not None:
                raise Refused(f"{target.host} resolves to {address}, {why}.")
    return target, addresses


def post(
    url: str,
    headers: dict[str, str],
    body: bytes,
    *,
    timeout: float,
    allow_http: bool,
    allow_private: bool,
) -> Outcome:
    started = time.monotonic()

    def outcome(status: int | None, error: str) -> Outcome:
        elapsed = int((time.monotonic() - started) * 1000)
        return Outcome(status, elapsed, error[:ERROR_MAX])

    try:
        target, addresses = checked(url, allow_http=allow_http, allow_private=allow_private)
    except Refused as refused:
        return outcome(None, f"refused: {refused}")
    parts = urlsplit(url)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    deadline = started + timeout
    try:
        sock = _connect(addresses, target.port, deadline)
    except OSError as error:
        return outcome(None, f"could not connect: {_said(error)}")
    # The deadline covers the whole exchange: past it the socket is shut, which ends
    # any read or write still waiting on it.
    watchdog = threading.Timer(max(0.0, deadline - time.monotonic()), _shut, [sock])
    watchdog.start()
    try:
        if target.scheme == "https":
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=target.host)
        connection = _Connection(target.host, target.port, sock)
        connection.request("POST", path, body=body, headers={**headers, "host": _host(target)})
        answer = connection.getresponse()
        answer.read(ANSWER_MAX)
        status = answer.status
    except (OSError, http.client.HTTPException, ValueError) as error:
        late = time.monotonic() >= deadline
        return outcome(None, f"no answer within {timeout:g} s" if late else _said(error))
    finally:
        watchdog.cancel()
        sock.close()
    if 300 <= status < 400:
        return outcome(status, f"redirect ({status}) not followed")
    if not 200 <= status < 300:
        return outcome(status, f"HTTP {status}")
    return outcome(status, "")


def _connect(addresses: list[IpAddress], port: int, deadline: float) -> socket.socket:
    last: OSError = OSError("no address")
    for address in addresses:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("timed out")
        try:
            return socket.create_connection((str(address), port), timeout=remaining)
        except OSError as error:
            last = error
    raise last


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _host(target: Target) -> str:
    host = f"[{target.host}]" if ":" in target.host else target.host
    default = 443 if target.scheme == "https" else 80
    return host if target.port == default else f"{host}:{target.port}"


def _said(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    return text.replace("\n", " ")


class _Connection(http.client.HTTPConnection):
    """An HTTP connection over a socket already connected (and checked)."""

    def __init__(self, host: str, port: int, sock: socket.socket) -> None:
        super().__init__(host, port)
        self.sock = sock

    def connect(self) -> None:  # the socket is given; never dial again
        pass
