"""The two layers in front of Django under ``make serve``, without a server: the body
read before a thread is taken (``lens/serving/buffered.py``) and the proxy check
(``lens/serving/forwarded.py``). The real server runs them in ``test_slow_clients.py``."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from lens.serving import buffered
from lens.serving.buffered import BufferedWsgi, Message, wsgi_environ
from lens.serving.forwarded import TrustedProxies, behind_proxy
from tests.event_loops import run_async

Environ = dict[str, Any]


def scope(path: str = "/api/kv/a", headers: list[tuple[bytes, bytes]] | None = None) -> Message:
    return {
        "type": "http",
        "method": "PUT",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": headers or [],
        "server": ("127.0.0.1", "8000"),
        "client": ("10.1.2.3", "5555"),
        "scheme": "http",
        "http_version": "1.1",
    }


class Recorder:
    """A WSGI application that keeps what it was given and answers ``answer``."""

    def __init__(self, answer: Iterable[bytes] = (b"ok",)) -> None:
        self.answer = answer
        self.environ: Environ = {}
        self.body = b""
        self.threads: set[str] = set()

    def __call__(self, environ: Environ, start_response: Callable[..., Any]) -> Iterable[bytes]:
        self.environ = environ
        self.body = environ["wsgi.input"].read()
        self.threads.add(threading.current_thread().name)
        start_response("200 OK", [("Content-Type", "text/plain")])
        return self.answer


def run(
    app: BufferedWsgi, request: Message, chunks: list[bytes], pause: float = 0
) -> list[Message]:
    sent: list[Message] = []

    async def receive() -> Message:
        if pause:
            await asyncio.sleep(pause)
        body = chunks.pop(0) if chunks else b""
        return {"type": "http.request", "body": body, "more_body": bool(chunks)}

    async def send(message: Message) -> None:
        sent.append(message)

    run_async(app, request, receive, send)
    return sent


def bridge(app: Recorder, **options: Any) -> BufferedWsgi:
    settings = {"threads": 2, "max_body": 100, "body_seconds": 5.0, **options}
    return BufferedWsgi(app, **settings)


def test_the_body_arrives_whole_and_its_length_is_what_was_read() -> None:
    app = Recorder()
    sent = run(bridge(app), scope(headers=CHUNKED), [b'{"pay', b'load": ', b'"x"}'])
    assert app.body == b'{"payload": "x"}'
    assert app.environ["CONTENT_LENGTH"] == "16"
    assert sent[0]["status"] == 200
    assert sent[1]["body"] == b"ok"
    assert app.threads
    assert all(name.startswith("request") for name in app.threads)


def test_a_declared_body_over_the_limit_is_never_read_and_the_connection_closes() -> None:
    app = Recorder()
    request = scope(headers=[(b"content-length", b"101")])
    sent = run(bridge(app), request, [b"x" * 101])
    assert app.body == b""
    assert app.environ["CONTENT_LENGTH"] == "101"  # Django sees it and refuses it
    assert (b"connection", b"close") in sent[0]["headers"]


CHUNKED = [(b"transfer-encoding", b"chunked")]


def test_a_chunked_body_over_the_limit_stops_being_read() -> None:
    app = Recorder()
    chunks = [b"x" * 60, b"x" * 60, b"never read"]
    sent = run(bridge(app), scope(headers=CHUNKED), chunks)
    assert chunks == [b"never read"]
    assert int(app.environ["CONTENT_LENGTH"]) > 100
    assert (b"connection", b"close") in sent[0]["headers"]


@pytest.mark.parametrize(
    ("path", "kind"), [("/api/kv/a", b"application/json"), ("/memories/", b"text/plain")]
)
def test_a_body_that_does_not_arrive_in_time_is_refused_without_a_thread(
    path: str, kind: bytes
) -> None:
    app = Recorder()
    request = scope(path, [(b"content-length", b"2")])
    sent = run(bridge(app, body_seconds=0.2), request, [b"a", b"b"], pause=0.15)
    assert app.threads == set()  # the application never ran
    assert sent[0]["status"] == 408
    assert dict(sent[0]["headers"])[b"content-type"].startswith(kind)
    assert (b"connection", b"close") in sent[0]["headers"]
    if kind == b"application/json":
        assert json.loads(sent[1]["body"])["error"]["code"] == "request_timeout"


def test_a_large_answer_is_streamed_from_its_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(buffered, "BUFFER_BYTES", 10)
    app = Recorder([b"a" * 6, b"b" * 6, b"c" * 6])
    sent = run(bridge(app), scope(), [b""])
    assert sent[0]["status"] == 200
    bodies = [message["body"] for message in sent[1:]]
    assert b"".join(bodies) == b"a" * 6 + b"b" * 6 + b"c" * 6
    assert sent[-1].get("more_body", False) is False


def access_lines(caplog: pytest.LogCaptureFixture, expected: int = 0) -> list[str]:
    """The access log's lines, once ``expected`` of them are there: the request's thread
    writes its line after handing the answer back, so it may come a moment later."""
    deadline = time.monotonic() + 5
    while True:
        lines = [r.getMessage() for r in caplog.records if r.name == "granian.access"]
        if len(lines) >= expected or time.monotonic() > deadline:
            return lines
        time.sleep(0.01)


def test_each_answer_has_one_access_log_line(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", logger="granian.access")
    app = Recorder()
    run(bridge(app, access_log=True), scope("/api/kv/a b"), [b""])
    (line,) = access_lines(caplog, 1)
    assert re.fullmatch(r'10\.1\.2\.3 "PUT /api/kv/a b HTTP/1\.1" 200 \d+\.\d\dms', line)


def test_a_refusal_and_a_streamed_answer_are_logged_too(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level("INFO", logger="granian.access")
    request = scope("/api/kv/a", [(b"content-length", b"2")])
    run(bridge(Recorder(), body_seconds=0.2, access_log=True), request, [b"a", b"b"], pause=0.15)
    monkeypatch.setattr(buffered, "BUFFER_BYTES", 10)
    streamed = Recorder([b"a" * 6, b"b" * 6, b"c" * 6])
    run(bridge(streamed, access_log=True), scope(), [b""])
    statuses = [line.split('" ')[1].split()[0] for line in access_lines(caplog, 2)]
    assert statuses == ["408", "200"]


def test_no_access_log_when_it_is_off(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", logger="granian.access")
    run(bridge(Recorder()), scope(), [b""])
    assert access_lines(caplog) == []


def test_an_application_that_raises_fails_the_request() -> None:
    def broken(environ: Environ, start_response: Callable[..., Any]) -> Iterable[bytes]:
        raise RuntimeError("broken")

    with pytest.raises(RuntimeError, match="broken"):
        run(BufferedWsgi(broken, threads=1, max_body=100, body_seconds=5.0), scope(), [b""])


def test_a_request_without_a_body_is_not_waited_for() -> None:
    app = Recorder()
    sent = run(bridge(app, body_seconds=0.2), scope(), [b"ignored"], pause=1.0)
    assert sent[0]["status"] == 200
    assert app.environ["CONTENT_LENGTH"] == "0"


def test_the_environ_decodes_the_raw_path_and_keeps_headers_apart() -> None:
    request = scope(
        "/a/b",
        [
            (b"host", b"lens.example"),
            (b"a", b"1"),
            (b"a", b"2"),
            (b"content-type", b"application/json"),
            (b"content-length", b"999"),
            (b"x_forwarded_proto", b"https"),
        ],
    )
    request["raw_path"] = b"/a%FFb%2Fc"
    request["query_string"] = b"q=%FF&x=\xc3\xa9"
    environ = wsgi_environ(request, b"{}", 2)
    # PEP 3333: the decoded bytes as latin-1, so text that is not UTF-8 stays visible.
    assert environ["PATH_INFO"] == "/a\xffb/c"
    assert environ["QUERY_STRING"] == "q=%FF&x=\xc3\xa9"
    assert environ["HTTP_A"] == "1,2"
    assert environ["CONTENT_TYPE"] == "application/json"
    assert environ["CONTENT_LENGTH"] == "2"
    assert "HTTP_X_FORWARDED_PROTO" not in environ  # underscores could impersonate it
    assert environ["REMOTE_ADDR"] == "10.1.2.3"
    assert environ["SERVER_PORT"] == "8000"


# --- the proxy check ----------------------------------------------------------------


def through(trusted: list[str], environ: Environ) -> Environ:
    seen: Environ = {}

    def app(environ: Environ, start_response: Callable[..., Any]) -> list[bytes]:
        seen.update(environ)
        return []

    behind_proxy(app, TrustedProxies(trusted))(environ, lambda *args: None)
    return seen


FORWARDED = {
    "HTTP_X_FORWARDED_FOR": "6.6.6.6, 203.0.113.9, 10.0.0.2",
    "HTTP_X_FORWARDED_PROTO": "https",
    "wsgi.url_scheme": "http",
}


def test_the_proxy_names_the_client_and_the_scheme() -> None:
    seen = through(["10.0.0.0/8"], {"REMOTE_ADDR": "10.0.0.1", **FORWARDED})
    # The right-most hop that is not a proxy of ours; the left-most one is the client's say.
    assert seen["REMOTE_ADDR"] == "203.0.113.9"
    assert seen["wsgi.url_scheme"] == "https"
    assert seen["HTTP_X_FORWARDED_PROTO"] == "https"


def test_anyone_else_cannot_claim_https_or_an_address() -> None:
    seen = through(["10.0.0.1"], {"REMOTE_ADDR": "192.0.2.7", **FORWARDED})
    assert seen["REMOTE_ADDR"] == "192.0.2.7"
    assert seen["wsgi.url_scheme"] == "http"
    assert "HTTP_X_FORWARDED_PROTO" not in seen  # Django's SECURE_PROXY_SSL_HEADER sees none
    assert "HTTP_X_FORWARDED_FOR" not in seen


def test_a_proxy_entry_that_is_not_an_address_stops_start_up() -> None:
    with pytest.raises(ValueError, match="FORWARDED_ALLOW_IPS"):
        TrustedProxies(["proxy.internal"])
