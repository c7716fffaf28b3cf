"""A local OTLP/HTTP traces receiver for tests: ``POST /v1/traces`` on a free loopback
port, served from a thread, every ``ExportTraceServiceRequest`` decoded with the
OpenTelemetry protocol's own messages (``opentelemetry-proto``) and its spans kept.
"""

from __future__ import annotations

import gzip
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span as SpanMessage

Value = str | bool | int | float | bytes | list[Any] | dict[str, Any] | None


def plain(value: AnyValue) -> Value:
    """An attribute's value as a Python value, whichever kind it was sent as."""
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "int_value":
        return value.int_value
    if kind == "double_value":
        return value.double_value
    if kind == "bytes_value":
        return value.bytes_value
    if kind == "array_value":
        return [plain(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return attributes_of(value.kvlist_value.values)
    return None


def attributes_of(pairs: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for pair in pairs:
        assert isinstance(pair, KeyValue)
        found[pair.key] = plain(pair.value)
    return found


@dataclass(frozen=True)
class ReceivedSpan:
    name: str
    kind: int  # SpanMessage.SpanKind: 2 is SERVER, 1 INTERNAL
    trace_id: str
    span_id: str
    parent_span_id: str
    attributes: dict[str, Any]
    # Each event's name and attributes (an exception's message would be one of them).
    events: list[tuple[str, dict[str, Any]]]
    status_code: int
    status_message: str
    resource: dict[str, Any]
    scope: str

    @property
    def is_server(self) -> bool:
        return self.kind == SpanMessage.SPAN_KIND_SERVER

    def everything(self) -> list[str]:
        """Every text the span carries besides its name, for "never content" checks."""
        texts = [self.status_message]
        for mapping in (self.attributes, self.resource, *(a for _, a in self.events)):
            texts.extend(_texts(mapping))
        return texts


def _texts(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [*value.keys(), *(t for item in value.values() for t in _texts(item))]
    if isinstance(value, list):
        return [t for item in value for t in _texts(item)]
    if isinstance(value, bytes):
        return [value.decode("utf-8", "replace")]
    return [str(value)]


def decode(body: bytes) -> list[ReceivedSpan]:
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans = []
    for resource_spans in request.resource_spans:
        resource = attributes_of(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    ReceivedSpan(
                        name=span.name,
                        kind=span.kind,
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex(),
                        attributes=attributes_of(span.attributes),
                        events=[(e.name, attributes_of(e.attributes)) for e in span.events],
                        status_code=span.status.code,
                        status_message=span.status.message,
                        resource=resource,
                        scope=scope_spans.scope.name,
                    )
                )
    return spans


@dataclass(frozen=True)
class Export:
    """One POST the receiver answered: where, with which headers, and its spans."""

    path: str
    headers: dict[str, str]
    spans: list[ReceivedSpan]


class Receiver:
    """What arrived so far; ``wait_for`` polls it."""

    def __init__(self) -> None:
        self.url = ""  # set once the server listens
        self.exports: list[Export] = []
        self._lock = threading.Lock()

    def add(self, export: Export) -> None:
        with self._lock:
            self.exports.append(export)

    @property
    def spans(self) -> list[ReceivedSpan]:
        with self._lock:
            return [span for export in self.exports for span in export.spans]

    def wait_for(
        self, done: Callable[[list[ReceivedSpan]], bool], seconds: float = 30
    ) -> list[ReceivedSpan]:
        deadline = time.monotonic() + seconds
        while not done(spans := self.spans):
            assert time.monotonic() < deadline, f"not all spans arrived: {_names(spans)}"
            time.sleep(0.05)
        return spans


def _names(spans: list[ReceivedSpan]) -> list[str]:
    return [span.name for span in spans]


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            encoding = self.headers.get("Content-Encoding", "")
            if encoding == "gzip":
                body = gzip.decompress(body)
            elif encoding == "deflate":
                body = zlib.decompress(body)
            headers = {name.lower(): value for name, value in self.headers.items()}
            receiver.add(Export(self.path, headers, decode(body)))
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet: the test reports what it needs

    return Handler


@contextmanager
def receiving() -> Iterator[Receiver]:
    """A receiver listening on a free loopback port until the block ends."""
    receiver = Receiver()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(receiver))
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="otlp-receiver", daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
