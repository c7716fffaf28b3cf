"""Slow and stalled clients against ``make serve`` itself: while they hold their
connections, another client on fresh connections is answered as usual.

The production server is the smallest shape a deployment could pick (one process of
two threads), so a server that gave a Python thread to each unfinished request would
be offline after two of them; every scenario here holds ten times that many or more.
Also over the real server: a refused oversized body closes its connection and says so,
and a long address still gets the API's error envelope.
"""

from __future__ import annotations

import http.client
import json
import socket
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, suppress

import pytest

from tests.serving import Server, clean_env, manage, serving, strong_key

pytestmark = pytest.mark.slow

# The victim's requests: every one must be answered, each within ANSWER_WITHIN seconds,
# half of them within MEDIAN_WITHIN (quiet, /healthz answers in a few milliseconds; the
# margins are for a busy 2-core machine running the rest of the suite).
VICTIM_REQUESTS = 12
ANSWER_WITHIN = 3.0
MEDIAN_WITHIN = 0.5


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str]]:
    """``make serve`` and a token of a team of its own."""
    tmp = tmp_path_factory.mktemp("slow-clients")
    env = clean_env(
        SECRET_KEY=strong_key(),
        ALLOWED_HOSTS="127.0.0.1",
        DATABASE_URL=f"sqlite:///{tmp / 'db.sqlite3'}",
        STATIC_ROOT=str(tmp / "static"),
        WEB_CONCURRENCY="1",
        SERVER_THREADS="2",
        ACCESS_LOG="0",
    )
    env.pop("DJANGO_SETTINGS_MODULE")
    with serving(env, tmp / "serve.log") as running:
        manage(env, "create_team", "slow")
        yield running, manage(env, "issue_token", "slow").splitlines()[-1]


@pytest.fixture
def server(served: tuple[Server, str]) -> Server:
    return served[0]


@pytest.fixture
def token(served: tuple[Server, str]) -> str:
    return served[1]


def victim(port: int) -> list[float]:
    """Seconds each of VICTIM_REQUESTS health checks took, each on a new connection."""
    times = []
    for _ in range(VICTIM_REQUESTS):
        began = time.perf_counter()
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=ANSWER_WITHIN)
        try:
            connection.request("GET", "/healthz", headers={"Host": "127.0.0.1"})
            response = connection.getresponse()
            assert response.status == 200
            response.read()
        finally:
            connection.close()
        times.append(time.perf_counter() - began)
        time.sleep(0.05)
    return times


def opened(port: int, stack: ExitStack, count: int, first: bytes) -> list[socket.socket]:
    sockets = []
    for _ in range(count):
        sock = stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=5))
        sock.sendall(first)
        sockets.append(sock)
    return sockets


def trickle(sockets: list[socket.socket], byte: bytes, stop: threading.Event) -> None:
    """One more byte on every socket each half second until ``stop``."""
    while not stop.wait(0.5):
        for sock in sockets:
            with suppress(OSError):  # the server may give up on a client; that is fine
                sock.sendall(byte)


def stalled_headers(port: int, token: str, stack: ExitStack, stop: threading.Event) -> None:
    opened(port, stack, 120, b"GET /healthz HTTP/1.1\r\nHost: 127")


def trickled_headers(port: int, token: str, stack: ExitStack, stop: threading.Event) -> None:
    sockets = opened(port, stack, 40, b"GET /healthz HTTP/1.1\r\nX-Slow: ")
    threading.Thread(target=trickle, args=(sockets, b"a", stop), daemon=True).start()


# Bodies go to a key/value write with a valid token, so the application reads them.
def put_head(token: str, framing: str) -> bytes:
    return (
        f"PUT /api/kv/slow HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
        f"{framing}\r\n\r\n"
    ).encode()


def trickled_body(port: int, token: str, stack: ExitStack, stop: threading.Event) -> None:
    head = put_head(token, "Content-Length: 100000")
    sockets = opened(port, stack, 40, head + b'{"payload": "')
    threading.Thread(target=trickle, args=(sockets, b"a", stop), daemon=True).start()


def trickled_chunks(port: int, token: str, stack: ExitStack, stop: threading.Event) -> None:
    head = put_head(token, "Transfer-Encoding: chunked")
    sockets = opened(port, stack, 40, head + b"1\r\n{\r\n")
    threading.Thread(target=trickle, args=(sockets, b"1\r\na\r\n", stop), daemon=True).start()


def slow_readers(port: int, token: str, stack: ExitStack, stop: threading.Event) -> None:
    # Each asks for a large static file twenty times over and reads none of it: about
    # 6 MB per connection waits for a reader that never comes.
    request = b"GET /static/admin/js/vendor/jquery/jquery.js HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    for sock in opened(port, stack, 20, b""):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        with suppress(OSError):
            sock.sendall(request * 20)


Scenario = Callable[[int, str, ExitStack, threading.Event], None]


@pytest.mark.parametrize(
    "hold",
    [stalled_headers, trickled_headers, trickled_body, trickled_chunks, slow_readers],
    ids=lambda scenario: scenario.__name__,
)
def test_slow_clients_do_not_hold_up_the_others(server: Server, token: str, hold: Scenario) -> None:
    stop = threading.Event()
    with ExitStack() as stack:
        stack.callback(stop.set)
        hold(server.port, token, stack, stop)
        time.sleep(0.5)  # let every one of them reach the server
        times = victim(server.port)
    assert max(times) < ANSWER_WITHIN, times
    assert statistics.median(times) < MEDIAN_WITHIN, times


def test_a_refused_body_closes_its_connection_and_says_so(server: Server) -> None:
    size = 1024 * 1024 + 1
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(
            f"PUT /api/kv/big HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {size}\r\n\r\n".encode()
        )
        # The server may answer, and close, before the whole body is sent: that is the point.
        with suppress(OSError):
            sock.sendall(b"x" * size)
        response = http.client.HTTPResponse(sock)
        response.begin()
        body = json.loads(response.read())
    assert response.status == 413
    assert body["error"]["code"] == "payload_too_large"
    # "Connection: close", not a promise of keep-alive on a socket it will not read again.
    assert response.getheader("connection") == "close"
    assert response.will_close
    # A client that reuses its connection object is told to open a new one, and can.
    status, _, _ = raw_get(server.port, "/healthz")
    assert status == 200


def raw_get(port: int, target: str) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", target, headers={"Host": "127.0.0.1"})
        response = connection.getresponse()
        head = {name.lower(): value for name, value in response.getheaders()}
        return response.status, head, response.read()
    finally:
        connection.close()


@pytest.mark.parametrize(
    "target",
    [
        "/api/kv/" + "k" * 5_000,
        "/api/kv/" + "k" * 60_000,
        "/api/kv?prefix=" + "p" * 8_000,
        "/api/agents/" + "a" * 20_000 + "/composition",
    ],
    ids=["5 KB key", "60 KB key", "8 KB query", "20 KB slug"],
)
def test_long_api_addresses_keep_the_error_envelope(server: Server, target: str) -> None:
    status, head, body = raw_get(server.port, target)
    assert status == 401  # no token: the API answered, not the server
    assert head["content-type"].startswith("application/json")
    assert json.loads(body)["error"]["code"] == "unauthorized"


def test_an_address_longer_than_the_server_reads_gets_no_html(server: Server) -> None:
    # Beyond 64 KiB the server itself refuses the request line, before the application
    # sees it: a bare 414 with an empty body, never a framework's page.
    status, head, body = raw_get(server.port, "/api/kv/" + "k" * 70_000)
    assert status == 414
    assert body == b""
    assert "html" not in head.get("content-type", "")
