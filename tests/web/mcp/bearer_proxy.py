"""A loopback HTTP proxy that adds ``Authorization: Bearer <token>`` to every request it
forwards, for clients that cannot send a header of their own.

The MCP conformance suite's CLI (``@modelcontextprotocol/conformance``) connects with a
bare URL: it has no option, and reads no variable, for a header. Rather than a way to
serve without a token (which a server could then be started with), the suite talks to
this proxy, and the proxy to the real ``manage.py mcp --http``, which checks the token
as it checks any client's. Bodies are read and written whole: the server answers JSON
(``json_response``), never a stream.
"""

from __future__ import annotations

import http.client
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

TIMEOUT = 60  # seconds one forwarded request may take
# Headers that belong to one hop, not to the request (RFC 9110 §7.6.1); Host is the
# upstream's, and any Authorization the client sent is replaced.
_NOT_FORWARDED = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "te", "upgrade", "host", "authorization"}
)


@contextmanager
def bearer_proxy(upstream: str, token: str) -> Iterator[str]:
    """A proxy to ``upstream`` (``http://host:port/path``) on a free loopback port that
    sends ``token`` as the bearer; yields the proxy's URL with the same path."""
    target = urlsplit(upstream)
    host, port = target.hostname or "127.0.0.1", target.port or 80

    class Forward(BaseHTTPRequestHandler):
        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            headers = {
                name: value
                for name, value in self.headers.items()
                if name.lower() not in _NOT_FORWARDED
            }
            headers["Host"] = f"{host}:{port}"
            headers["Authorization"] = f"Bearer {token}"
            connection = http.client.HTTPConnection(host, port, timeout=TIMEOUT)
            try:
                connection.request(self.command, self.path, body=body, headers=headers)
                response = connection.getresponse()
                data = response.read()
                self.send_response(response.status, response.reason)
                for name, value in response.getheaders():
                    if name.lower() not in _NOT_FORWARDED and name.lower() != "content-length":
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client went away first (it closes what it no longer waits for)
            finally:
                connection.close()

        do_GET = do_POST = do_DELETE = _forward

        def log_message(self, format: str, *args: object) -> None:
            return None  # quiet: the test reports what failed

    server = ThreadingHTTPServer(("127.0.0.1", 0), Forward)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="bearer-proxy", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{target.path}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=TIMEOUT)


def main(argv: list[str]) -> None:
    """``python -m tests.web.mcp.bearer_proxy URL TOKEN``: print the proxy's URL and
    serve until interrupted (running the conformance suite by hand, docs/mcp.md)."""
    upstream, token = argv
    with bearer_proxy(upstream, token) as url:
        print(url, flush=True)
        with suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main(sys.argv[1:])
