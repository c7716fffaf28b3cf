"""OpenTelemetry traces over OTLP/HTTP (SPEC §16), switched on by the standard variables
alone: ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``.

Every process that serves calls ``start_tracing`` once, as it loads the application
(``lens/serving/served.py`` under Granian, ``lens/wsgi.py`` under ``runserver`` or
another WSGI server, ``lens/asgi.py``, and ``manage.py mcp``). Granian loads the
application in each worker process after it has forked, so each worker gets its own
exporter thread; nothing is started in the server's main process.

What is read from the environment is read by the SDK, as the OpenTelemetry
specification defines it: ``OTEL_SERVICE_NAME`` (default here ``composition-lens``),
``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_EXPORTER_OTLP_HEADERS`` and the other
``OTEL_EXPORTER_OTLP_*`` settings, ``OTEL_TRACES_SAMPLER`` and its argument, the batch
processor's ``OTEL_BSP_*``. ``OTEL_SDK_DISABLED=true`` or ``OTEL_TRACES_EXPORTER=none``
keep tracing off. Without an endpoint nothing is imported beyond the API, no thread
starts and no middleware is added.
"""

from __future__ import annotations

import atexit
import multiprocessing
import multiprocessing.util
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from opentelemetry import trace
from opentelemetry.trace import Span

from lens import tracing
from lens.core.query_strings import redact_query, redact_url

if TYPE_CHECKING:
    from django.http import HttpRequest, HttpResponse

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
DEFAULT_SERVICE_NAME = "composition-lens"

# The request span's attributes that may carry a query string, by semantic-conventions
# generation: http.url and http.target (the default), url.full and url.query (with
# OTEL_SEMCONV_STABILITY_OPT_IN=http).
URL_ATTRIBUTES = ("http.url", "http.target", "url.full")
QUERY_ATTRIBUTE = "url.query"
ROUTE_ATTRIBUTE = "http.route"

_started = False


def wanted(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the environment asks for traces: an OTLP endpoint is set, and neither
    the SDK nor the traces exporter is switched off."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return False
    return any(environ.get(name, "").strip() for name in ENDPOINT_VARIABLES)


def start_tracing(*, django: bool = True) -> bool:
    """Install the SDK's tracer provider with a batching OTLP/HTTP exporter, instrument
    Django (``django``: a span per request; call before the WSGI or ASGI handler is
    built, so its middleware is in the chain) and switch the product's own spans on.
    Once per process (a process forked from one that started keeps it: the SDK restarts
    its exporter thread in the child); False when the environment does not ask for
    traces."""
    global _started
    if _started:
        return True
    if not wanted():
        return False
    # Imported here: a process without an endpoint never loads the SDK.
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import SERVICE_NAME, OTELResourceDetector, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from_environment = OTELResourceDetector().detect().attributes
    defaults = {} if SERVICE_NAME in from_environment else {SERVICE_NAME: DEFAULT_SERVICE_NAME}
    # The sampler (OTEL_TRACES_SAMPLER) and span limits come from the environment.
    provider = TracerProvider(resource=Resource.create(defaults), shutdown_on_exit=False)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    _flush_at_exit(provider.shutdown)
    if django:
        from opentelemetry.instrumentation.django import DjangoInstrumentor

        DjangoInstrumentor().instrument(request_hook=redact_request, response_hook=name_route)
    tracing.switch_on()
    _started = True
    return True


def _flush_at_exit(shutdown: Callable[[], None]) -> None:
    """Export what is still batched when the process ends. A worker process that
    ``multiprocessing`` started (Granian's) leaves through ``os._exit``, which runs no
    ``atexit`` hook, only multiprocessing's own finalizers."""
    if multiprocessing.parent_process() is not None:
        multiprocessing.util.Finalize(None, shutdown, exitpriority=100)
    else:
        atexit.register(shutdown)


def redact_request(span: Span, request: HttpRequest) -> None:
    """The Django instrumentation's request hook: the request span keeps the path, and
    of its query string only the parameter names (a search's ``q`` is what someone
    typed)."""
    from opentelemetry.sdk.trace import ReadableSpan

    if not isinstance(span, ReadableSpan) or not span.is_recording():
        return
    attributes = span.attributes or {}
    for name in URL_ATTRIBUTES:
        value = attributes.get(name)
        if isinstance(value, str) and ("?" in value or "#" in value):
            span.set_attribute(name, redact_url(value))
    query = attributes.get(QUERY_ATTRIBUTE)
    if isinstance(query, str) and query:
        span.set_attribute(QUERY_ATTRIBUTE, redact_query(query))


def name_route(span: Span, request: HttpRequest, response: HttpResponse) -> None:
    """The Django instrumentation's response hook: the route template (``http.route``)
    of an API request too. The instrumentation sets it from the view middleware, which
    API requests skip (``ApiBypassMiddleware`` sends them straight to their view)."""
    from opentelemetry.sdk.trace import ReadableSpan

    if not isinstance(span, ReadableSpan) or not span.is_recording():
        return
    match = request.resolver_match
    if match is not None and match.route and ROUTE_ATTRIBUTE not in (span.attributes or {}):
        span.set_attribute(ROUTE_ATTRIBUTE, match.route)
