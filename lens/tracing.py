"""Spans around the product's own operations (SPEC §16): ``lens.compose``,
``lens.deliver``, ``memory.save`` and ``memory.decide``.

Only the OpenTelemetry API is imported here: the SDK, the exporter and the Django
instrumentation are set up by ``lens.serving.telemetry`` when the standard ``OTEL_*``
variables ask for traces, and that calls ``switch_on``. Until then ``span`` hands back
one shared object that does nothing, so an operation pays a function call and a flag
test (well under a microsecond) and no context variable is touched.

Attributes name things, never hold them: an agent's slug, a team's slug, ids, the
prompt's SHA-256 and token count. No prompt text, memory content, key payload or note
goes on a span, and an operation's exception is recorded by its type alone (a message
may quote what someone typed).
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING

from opentelemetry import trace
from opentelemetry.trace import INVALID_SPAN, Span, Status, StatusCode
from opentelemetry.util.types import AttributeValue

if TYPE_CHECKING:
    from lens.models import Agent

# The attributes (SPEC §16); gen_ai.agent.name is OpenTelemetry's GenAI convention.
AGENT = "gen_ai.agent.name"
TEAM = "lens.team"
DELIVERY_ID = "lens.delivery.id"
PROMPT_SHA256 = "lens.prompt.sha256"
PROMPT_TOKENS = "lens.prompt.tokens"
MEMORY_ID = "lens.memory.id"
# What a memory.decide span did: approved, rejected, revoked, reopened.
DECISION = "lens.decision"
# OpenTelemetry's general attribute for what went wrong: here the exception's class.
ERROR_TYPE = "error.type"

# What a span is told: attribute names and plain values (str, bool, int, float).
Attributes = dict[str, AttributeValue]

# The instrumentation scope every span of ours carries.
SCOPE = "composition-lens"

# A proxy until a provider is installed: it then makes that provider's spans.
_tracer = trace.get_tracer(SCOPE)
_on = False


def switch_on(provider: trace.TracerProvider | None = None) -> None:
    """Start making real spans, from ``provider`` (the global one, installed by
    ``lens.serving.telemetry``, when None)."""
    global _on, _tracer
    if provider is not None:
        _tracer = provider.get_tracer(SCOPE)
    _on = True


def is_on() -> bool:
    return _on


class _Off:
    """The context manager of every span while tracing is off: enters to a span that
    records nothing (``is_recording()`` is False)."""

    __slots__ = ()

    def __enter__(self) -> Span:
        return INVALID_SPAN

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        return None


_OFF = _Off()


class _Current:
    """A span made current for a block; an exception ends it with an error status and
    the exception's type, never its message."""

    __slots__ = ("_manager", "_span")

    def __init__(self, name: str) -> None:
        self._manager = _tracer.start_as_current_span(
            name, record_exception=False, set_status_on_exception=False
        )
        self._span: Span = INVALID_SPAN

    def __enter__(self) -> Span:
        self._span = self._manager.__enter__()
        return self._span

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if kind is not None and self._span.is_recording():
            name = kind.__qualname__
            self._span.set_attribute(ERROR_TYPE, name)
            self._span.set_status(Status(StatusCode.ERROR, name))
        self._manager.__exit__(kind, error, traceback)


def span(name: str) -> _Off | _Current:
    """``with span("memory.save") as current:`` — a span around the block, current
    inside it. Set attributes only behind ``if current.is_recording():`` so that
    nothing is computed for them when tracing is off or the trace is not sampled."""
    if not _on:
        return _OFF
    return _Current(name)


def agent_attributes(agent: Agent) -> Attributes:
    """The agent's slug and its team's (the team read once more only when it is not
    loaded yet: that costs a query, and only while a span records)."""
    return {AGENT: agent.slug, TEAM: agent.team.slug}
