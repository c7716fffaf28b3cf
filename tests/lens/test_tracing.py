"""The product's own spans (SPEC §16, ``lens/tracing.py``): ``lens.compose``,
``lens.deliver``, ``memory.save`` and ``memory.decide``, with the names and ids they
carry and never the content, recorded here by the SDK into memory. That they leave a
real server over OTLP/HTTP is ``tests/lens/serving/test_tracing_export.py``.
"""

from __future__ import annotations

import hashlib
import json
import timeit
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from lens import tracing
from lens.actors import SYSTEM, Actor
from lens.models import Agent, Team
from memory.composition import compose, compose_many
from memory.core.records import MemoryInput
from memory.decisions import decide, decide_many, reopen, revoke
from memory.saving import UnknownSupersedes, save_memory
from tests.api_calls import ApiClient, api_prompt_text, memory_body, post_memory
from tests.factories import composed, create_agent, memory_config, preference, remember

SECRET = "Plum pudding on Thursdays, 7391"


class Recorded:
    """The spans ended so far, by name."""

    def __init__(self, exporter: InMemorySpanExporter) -> None:
        self.exporter = exporter

    def all(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [span for span in self.all() if span.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, [span.name for span in self.all()]
        return found[0]

    def clear(self) -> None:
        self.exporter.clear()


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[Recorded]:
    """Tracing on for this test, into memory, from a provider of its own (the process's
    global provider is left alone)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    # Whatever switch_on changes comes back after the test.
    monkeypatch.setattr(tracing, "_on", False)
    monkeypatch.setattr(tracing, "_tracer", tracing._tracer)
    tracing.switch_on(provider)
    yield Recorded(exporter)
    provider.shutdown()


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def texts(recorded: Recorded) -> str:
    """Every attribute, event and status of every span, as one text."""
    parts = []
    for span in recorded.all():
        parts.append(json.dumps(attributes(span), default=str))
        parts.extend(json.dumps(dict(e.attributes or {}), default=str) for e in span.events)
        parts.append(span.status.description or "")
    return "\n".join(parts)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# --- off ----------------------------------------------------------------------------


def test_while_tracing_is_off_a_span_is_one_shared_object_that_records_nothing() -> None:
    assert not tracing.is_on()
    before = trace.get_current_span()
    manager = tracing.span("lens.compose")
    assert manager is tracing.span("memory.save")  # nothing is made per call
    with manager as current:
        assert not current.is_recording()
        assert trace.get_current_span() is before  # no context was touched


def test_while_tracing_is_off_a_span_costs_well_under_a_microsecond() -> None:
    def traced() -> None:
        with tracing.span("lens.compose") as current:
            if current.is_recording():
                raise AssertionError("off")

    runs = 20_000
    # The best of five: a busy machine slows a run down, never speeds it up.
    seconds = min(timeit.repeat(traced, number=runs, repeat=5)) / runs
    assert seconds < 1e-6, f"{seconds * 1e9:.0f} ns a span"


def test_while_tracing_is_off_operations_make_no_spans(
    monkeypatch: pytest.MonkeyPatch, wren: Agent
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    # A real tracer in place, but not switched on: the flag alone keeps spans away.
    monkeypatch.setattr(tracing, "_tracer", provider.get_tracer("test"))
    monkeypatch.setattr(tracing, "_on", False)  # and back to off after the test
    remember(wren, "profile", SECRET)
    compose(wren)
    assert exporter.get_finished_spans() == ()
    tracing.switch_on()  # the flag is what stood in the way
    compose(wren)
    assert [span.name for span in exporter.get_finished_spans()] == ["lens.compose"]


# --- the four spans -------------------------------------------------------------------


def test_compose_names_the_agent_its_team_and_its_prompt_never_the_text(
    spans: Recorded, wren: Agent
) -> None:
    remember(wren, "profile", SECRET)
    spans.clear()
    composition = composed(wren)
    assert SECRET in composition.prompt.text
    span = spans.one("lens.compose")
    assert attributes(span) == {
        "gen_ai.agent.name": "wren",
        "lens.team": wren.team.slug,
        "lens.prompt.sha256": sha256(composition.prompt.text),
        "lens.prompt.tokens": composition.tokens.total,
    }
    assert span.kind == trace.SpanKind.INTERNAL
    assert SECRET not in texts(spans)


def test_composing_a_list_makes_one_span_naming_the_team(
    spans: Recorded, team: Team, wren: Agent
) -> None:
    other = create_agent(team, "robin", memory_config(name="Robin"))
    agents = list(Agent.objects.filter(pk__in=[wren.pk, other.pk]))
    compose_many(agents)
    assert attributes(spans.one("lens.compose")) == {"lens.team": team.slug}


def test_the_api_composition_is_a_compose_span(
    spans: Recorded, api: ApiClient, wren: Agent
) -> None:
    post_memory(api, memory_body(content=SECRET))
    spans.clear()
    answer = api.get("/api/agents/wren/composition").json()
    assert SECRET in api_prompt_text(answer)
    span = spans.one("lens.compose")
    assert attributes(span)["lens.prompt.tokens"] == answer["tokens"]["total"]
    assert attributes(span)["lens.prompt.sha256"] == sha256(api_prompt_text(answer))
    assert SECRET not in texts(spans)


def test_a_delivery_names_its_id_and_prompt_with_the_compose_inside_it(
    spans: Recorded, api: ApiClient, wren: Agent
) -> None:
    post_memory(api, memory_body(content=SECRET))
    spans.clear()
    response = api.post("/api/agents/wren/deliveries", {"session": "s-1", "model": "m-1"})
    assert response.status_code == 201, response.content
    delivered = response.json()
    deliver = spans.one("lens.deliver")
    assert attributes(deliver) == {
        "gen_ai.agent.name": "wren",
        "lens.team": wren.team.slug,
        "lens.delivery.id": delivered["delivery_id"],
        "lens.prompt.sha256": delivered["prompt_sha256"],
        "lens.prompt.tokens": delivered["composition"]["tokens"]["total"],
    }
    inner = spans.one("lens.compose")
    assert inner.parent is not None
    assert deliver.context is not None
    assert inner.parent.span_id == deliver.context.span_id
    assert attributes(inner)["lens.prompt.sha256"] == delivered["prompt_sha256"]
    assert SECRET not in texts(spans)


def test_a_save_names_the_memory_it_saved(spans: Recorded, api: ApiClient, wren: Agent) -> None:
    record_id = post_memory(api, memory_body(content=SECRET, label="pudding"))
    assert attributes(spans.one("memory.save")) == {
        "gen_ai.agent.name": "wren",
        "lens.team": wren.team.slug,
        "lens.memory.id": record_id,
    }
    assert SECRET not in texts(spans)
    assert "pudding" not in texts(spans)


def test_a_save_refused_by_the_gate_names_no_memory(spans: Recorded, wren: Agent) -> None:
    remember(wren, "profile", "The user's name is Doug.", label="name")
    spans.clear()
    conflict = save_memory(wren, MemoryInput(kind="profile", content=SECRET, label="name"), SYSTEM)
    assert not hasattr(conflict, "id")
    assert "lens.memory.id" not in attributes(spans.one("memory.save"))


def test_a_failed_operation_records_the_error_by_its_type_only(
    spans: Recorded, wren: Agent
) -> None:
    with pytest.raises(UnknownSupersedes):
        save_memory(
            wren,
            MemoryInput(kind="profile", content=SECRET, supersedes="nosuchmemory"),
            SYSTEM,
        )
    span = spans.one("memory.save")
    assert span.status.status_code == StatusCode.ERROR
    assert span.status.description == "UnknownSupersedes"
    assert attributes(span) == {"error.type": "UnknownSupersedes"}
    assert span.events == ()  # no exception event: its message may quote input
    assert "nosuchmemory" not in texts(spans)


def test_decisions_name_the_memory_the_decision_agent_and_team(
    spans: Recorded, wren: Agent, reviewer: User
) -> None:
    team = wren.team
    actor = Actor.for_user(reviewer)
    first = preference(wren, SECRET, label="pudding")
    second, third = preference(wren, "Tea, not coffee."), preference(wren, "Dark mode.")
    spans.clear()
    decide(first, True, actor, note="Confirmed by the user", team=team)
    revoke(first, actor, team=team)
    reopen(first, actor)  # no team given: read from the agent
    decide_many(team, [second, third], False, actor)
    decided = [attributes(span) for span in spans.named("memory.decide")]
    agent = {"gen_ai.agent.name": "wren", "lens.team": team.slug}
    assert decided == [
        {"lens.memory.id": first, "lens.decision": "approved", **agent},
        {"lens.memory.id": first, "lens.decision": "revoked", **agent},
        {"lens.memory.id": first, "lens.decision": "reopened", **agent},
        {"lens.memory.id": (second, third), "lens.decision": "rejected", "lens.team": team.slug},
    ]
    assert SECRET not in texts(spans)
    assert "Confirmed" not in texts(spans)
