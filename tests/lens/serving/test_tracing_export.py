"""Traces leave a real server over OTLP/HTTP (SPEC §16): ``make serve`` (Granian, two
worker processes), ``make run``, ``manage.py runserver`` and ``manage.py mcp`` export to
a local receiver (``tests/otlp.py``) that decodes what arrives. A span per request and
the product's own spans come with their attributes, and no attribute, event or status
carries the memory content, prompt text, note or query text the requests sent.
Without an endpoint, or with the SDK switched off, nothing is sent.
"""

from __future__ import annotations

import http.client
import http.cookiejar
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.otlp import ReceivedSpan, Receiver, receiving
from tests.serving import (
    ROOT,
    clean_env,
    free_port,
    manage,
    run_python,
    scratch_database,
    serving,
    strong_key,
)

pytestmark = pytest.mark.slow

TEAM = "tracers"
AGENT = "wren"
USERNAME = "ada"
PASSWORD = "tracing-test-password-not-secret"
# What the requests carry that must never reach a span.
PROFILE = "The user's name is Quillon Marchbanks."
PREFERENCE = "Plum pudding on Thursdays, never on Mondays."
NOTE = "Confirmed with Quillon by telephone"
QUESTION = "What does Quillon eat on Thursdays?"
CONTENT = ("Quillon", "Marchbanks", "Plum pudding", "Thursdays", "telephone", PASSWORD)
BASIC = "Basic dGVzdDpzZWNyZXQ="  # what OTEL_EXPORTER_OTLP_HEADERS sends, as Langfuse's

SEED = f"""
import json
import django
django.setup()
from django.contrib.auth.models import User
from lens.models import ApiToken, Membership, Role, Team
from memory.configuring import store_agent
from lens.core.config import AgentConfig
from tests.factories import memory_config
team = Team.objects.create(slug={TEAM!r}, name="Tracers")
user = User.objects.create_user({USERNAME!r}, password={PASSWORD!r})
Membership.objects.create(team=team, user=user, role=Role.REVIEWER)
_token, raw = ApiToken.objects.issue(team, name="tracing")
store_agent(team, {AGENT!r}, AgentConfig.model_validate(memory_config()))
print(json.dumps({{"token": raw}}))
"""


def seed(env: dict[str, str]) -> str:
    """Migrate and create the team, its reviewer, a token and the agent; the token."""
    manage(env, "migrate", "--no-input", "-v0")
    result = subprocess.run(
        [sys.executable, "-c", SEED],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    token: str = json.loads(result.stdout.strip().splitlines()[-1])["token"]
    return token


def tracing_env(receiver: Receiver, **env: str) -> dict[str, str]:
    # Batches leave every 100 ms instead of every 5 s, so the test does not wait.
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "100", **env}


# --- HTTP ------------------------------------------------------------------------------


class Session:
    """A client with a cookie jar: the API with the token, the pages once signed in."""

    def __init__(self, port: int, token: str) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self.token = token
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def api(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        request = urllib.request.Request(self.base + path, data, headers, method=method)
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())

    def page(self, path: str, form: dict[str, str] | None = None) -> str:
        data = None if form is None else urllib.parse.urlencode(form).encode()
        headers = {} if form is None else {"X-CSRFToken": self.cookie("csrftoken")}
        request = urllib.request.Request(self.base + path, data, headers)
        with self.opener.open(request, timeout=30) as response:
            assert response.status == 200
            return str(response.read().decode())

    def cookie(self, name: str) -> str:
        return next(cookie.value or "" for cookie in self.jar if cookie.name == name)

    def sign_in(self) -> None:
        login = self.page("/accounts/login/")
        field = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login)
        assert field, login[:500]
        form = {"username": USERNAME, "password": PASSWORD, "csrfmiddlewaretoken": field[1]}
        self.page("/accounts/login/", form)
        assert self.cookie("sessionid")


@dataclass(frozen=True)
class Story:
    """What the requests did, as the API answered."""

    profile_id: str
    preference_id: str
    composition: dict[str, Any]
    delivery: dict[str, Any]


def tell_story(session: Session) -> Story:
    """Save two memories, compose, recall with a question in the query string, deliver,
    and approve the pending memory with a note through the queue."""
    base = f"/api/agents/{AGENT}"
    _, profile = session.api("POST", f"{base}/memories", {"kind": "profile", "content": PROFILE})
    _, preference = session.api(
        "POST", f"{base}/memories", {"kind": "preference", "content": PREFERENCE}
    )
    _, composition = session.api("GET", f"{base}/composition")
    question = urllib.parse.urlencode({"message": QUESTION})
    status, _ = session.api("GET", f"{base}/recall?{question}")
    assert status == 200
    _, delivery = session.api("POST", f"{base}/deliveries", {"session": "s-1"})
    session.sign_in()
    session.page(
        f"/approvals/{preference['id']}/decide/",
        {"decision": "approve", "reason": NOTE, "team": TEAM},
    )
    return Story(profile["id"], preference["id"], composition, delivery)


# --- what arrived -----------------------------------------------------------------------

LENS_SPANS = ("memory.save", "lens.compose", "lens.deliver", "memory.decide")


def named(spans: list[ReceivedSpan], name: str) -> list[ReceivedSpan]:
    return [span for span in spans if span.name == name]


def every_lens_span(spans: list[ReceivedSpan]) -> bool:
    names = [span.name for span in spans]
    # Two saves, two composes (the endpoint's and the delivery's), one of the others.
    wanted = {"memory.save": 2, "lens.compose": 2, "lens.deliver": 1, "memory.decide": 1}
    servers = [span for span in spans if span.is_server]
    routes = {span.attributes.get("http.route") for span in servers}
    # A span can arrive a batch before its parent (the page the decision redirects to
    # composes, and its request span ends later): wait for every lens span's parent too.
    ids = {span.span_id for span in spans}
    parented = all(span.parent_span_id in ids for span in spans if span.name in LENS_SPANS)
    return (
        parented
        and all(names.count(name) >= n for name, n in wanted.items())
        and any(route and "decide" in str(route) for route in routes)
    )


def parent_of(span: ReceivedSpan, spans: list[ReceivedSpan]) -> ReceivedSpan:
    (parent,) = [s for s in spans if s.span_id == span.parent_span_id]
    assert parent.trace_id == span.trace_id
    return parent


def assert_no_content(spans: list[ReceivedSpan]) -> None:
    for span in spans:
        for text in span.everything():
            leaked = [word for word in CONTENT if word.lower() in text.lower()]
            assert not leaked, f"{span.name} carries {leaked}: {text!r}"


def check_story(spans: list[ReceivedSpan], story: Story) -> None:
    agent = {"gen_ai.agent.name": AGENT, "lens.team": TEAM}
    saves = named(spans, "memory.save")
    assert sorted(s.attributes["lens.memory.id"] for s in saves) == sorted(
        [story.profile_id, story.preference_id]
    )
    for save in saves:
        assert save.attributes == {**agent, "lens.memory.id": save.attributes["lens.memory.id"]}
        request = parent_of(save, spans)
        assert request.is_server
        assert request.attributes["http.method"] == "POST"
        assert request.attributes["http.status_code"] == 201

    delivered = story.delivery
    (deliver,) = named(spans, "lens.deliver")
    assert deliver.attributes == {
        **agent,
        "lens.delivery.id": delivered["delivery_id"],
        "lens.prompt.sha256": delivered["prompt_sha256"],
        "lens.prompt.tokens": delivered["composition"]["tokens"]["total"],
    }
    assert parent_of(deliver, spans).is_server

    composes = named(spans, "lens.compose")
    inside = [c for c in composes if c.parent_span_id == deliver.span_id]
    assert len(inside) == 1
    assert inside[0].attributes["lens.prompt.sha256"] == delivered["prompt_sha256"]
    (endpoint,) = [
        c
        for c in composes
        if str(parent_of(c, spans).attributes.get("http.route")).endswith("composition")
    ]
    assert endpoint.attributes == {
        **agent,
        "lens.prompt.sha256": delivered["prompt_sha256"],  # nothing changed in between
        "lens.prompt.tokens": story.composition["tokens"]["total"],
    }

    (decision,) = named(spans, "memory.decide")
    assert decision.attributes == {
        **agent,
        "lens.memory.id": story.preference_id,
        "lens.decision": "approved",
    }
    assert parent_of(decision, spans).attributes["http.method"] == "POST"

    for span in spans:
        if span.name in LENS_SPANS:
            assert span.scope == "composition-lens"
            assert span.kind == 1  # INTERNAL
    (recall,) = [s for s in spans if s.is_server and "recall" in str(s.attributes)]
    url = recall.attributes.get("http.url") or recall.attributes.get("http.target")
    assert str(url).endswith("/recall?message=REDACTED"), recall.attributes
    assert_no_content(spans)


# --- make serve: everything, from worker processes ------------------------------------


@pytest.fixture
def database_url(tmp_path: Path) -> Iterator[str]:
    with scratch_database(tmp_path, "lens_tracing") as url:
        yield url


def test_make_serve_exports_a_span_per_request_and_the_lens_spans(
    tmp_path: Path, database_url: str
) -> None:
    with receiving() as receiver:
        env = clean_env(
            SECRET_KEY=strong_key(),
            ALLOWED_HOSTS="127.0.0.1",
            DATABASE_URL=database_url,
            STATIC_ROOT=str(tmp_path / "static"),
            WEB_CONCURRENCY="2",
            # Composed on every read: whether the delivery composes would otherwise depend
            # on which of the two processes answered the composition before it (a process
            # that kept it composes nothing, and has no lens.compose span to show).
            COMPOSITION_CACHE="0",
            **tracing_env(
                receiver,
                OTEL_EXPORTER_OTLP_HEADERS=f"Authorization={BASIC}",
                OTEL_RESOURCE_ATTRIBUTES="deployment.environment.name=test",
            ),
        )
        token = seed(env)
        with serving(env, tmp_path / "serve.log") as server:
            story = tell_story(Session(server.port, token))
            spans = receiver.wait_for(every_lens_span)
        exports = receiver.exports
    check_story(spans, story)
    assert {export.path for export in exports} == {"/v1/traces"}
    assert {export.headers["authorization"] for export in exports} == {BASIC}
    assert {export.headers["content-type"] for export in exports} == {"application/x-protobuf"}
    resource = spans[0].resource
    assert resource["service.name"] == "composition-lens"
    assert resource["deployment.environment.name"] == "test"
    assert resource["telemetry.sdk.name"] == "opentelemetry"


def test_what_is_still_batched_when_a_worker_stops_is_sent(
    tmp_path: Path, database_url: str
) -> None:
    # A minute between batches: only the flush at exit can send the spans in time.
    with receiving() as receiver:
        env = clean_env(
            SECRET_KEY=strong_key(),
            ALLOWED_HOSTS="127.0.0.1",
            DATABASE_URL=database_url,
            STATIC_ROOT=str(tmp_path / "static"),
            WEB_CONCURRENCY="1",
            **tracing_env(receiver, OTEL_BSP_SCHEDULE_DELAY="60000"),
        )
        token = seed(env)
        with serving(env, tmp_path / "serve.log") as server:
            Session(server.port, token).api("GET", f"/api/agents/{AGENT}/composition")
            time.sleep(0.5)
            assert receiver.spans == []
        spans = receiver.wait_for(lambda found: bool(named(found, "lens.compose")), 10)
    assert any(span.is_server for span in spans)


# --- make run, runserver, the MCP server ------------------------------------------------


@contextmanager
def runserver(env: dict[str, str], log: Path) -> Iterator[int]:
    """``manage.py runserver`` (its autoreloader on: the application loads in a child
    process) on a free port, once it answers."""
    port = free_port()
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                connection.request("GET", "/healthz")
                if connection.getresponse().status == 200:
                    break
            except OSError:
                pass
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        yield port
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


def one_composition(spans: list[ReceivedSpan]) -> bool:
    return bool(named(spans, "lens.compose")) and any(
        str(span.attributes.get("http.route", "")).endswith("composition")
        for span in spans
        if span.is_server
    )


def test_runserver_exports_too_with_the_service_name_from_the_environment(
    tmp_path: Path, database_url: str
) -> None:
    with receiving() as receiver:
        env = clean_env(
            DEBUG="1",
            DATABASE_URL=database_url,
            **tracing_env(receiver, OTEL_SERVICE_NAME="lens-staging"),
        )
        token = seed(env)
        with runserver(env, tmp_path / "runserver.log") as port:
            Session(port, token).api("GET", f"/api/agents/{AGENT}/composition")
            spans = receiver.wait_for(one_composition)
    (compose,) = named(spans, "lens.compose")
    assert compose.attributes["gen_ai.agent.name"] == AGENT
    assert parent_of(compose, spans).is_server
    assert compose.resource["service.name"] == "lens-staging"
    assert_no_content(spans)


def test_make_run_exports_too(tmp_path: Path) -> None:
    # make run seeds the demo first; its team's agents answer the token issued after.
    with receiving() as receiver:
        env = clean_env(
            DEBUG="1",
            DATABASE_URL=f"sqlite:///{tmp_path / 'run.sqlite3'}",
            **tracing_env(receiver),
        )
        with serving(env, tmp_path / "run.log", target="run") as server:
            token = manage(env, "issue_token", "demo").strip().splitlines()[-1]
            status, agents = Session(server.port, token).api("GET", "/api/agents")
            assert status == 200
            slug = agents["agents"][0]["slug"]
            Session(server.port, token).api("GET", f"/api/agents/{slug}/composition")
            spans = receiver.wait_for(one_composition)
    (compose,) = [s for s in named(spans, "lens.compose") if s.attributes.get("gen_ai.agent.name")]
    assert compose.attributes["gen_ai.agent.name"] == slug
    assert compose.attributes["lens.team"] == "demo"


def test_the_mcp_server_exports_its_tools_spans(tmp_path: Path, database_url: str) -> None:
    with receiving() as receiver:
        env = clean_env(DEBUG="1", DATABASE_URL=database_url, **tracing_env(receiver))
        token = seed(env)
        log = tmp_path / "mcp.log"
        with log.open("wb") as stderr:
            process = subprocess.Popen(
                [sys.executable, "manage.py", "mcp", "--http", "127.0.0.1:0"],
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
        try:
            deadline = time.monotonic() + 60
            while not (found := re.search(r"MCP server on (http://\S+/mcp)", log.read_text())):
                assert process.poll() is None, log.read_text()
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
            call = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {
                    "name": "memory_save",
                    "arguments": {"agent": AGENT, "kind": "profile", "content": PROFILE},
                },
            }
            request = urllib.request.Request(
                found[1],
                json.dumps(call).encode(),
                {
                    "Authorization": f"Bearer {token}",
                    "Content-Type": "application/json",
                    "Accept": "application/json, text/event-stream",
                },
            )
            with urllib.request.urlopen(request, timeout=30) as response:
                assert response.status == 200
            spans = receiver.wait_for(lambda found: bool(named(found, "memory.save")))
        finally:
            process.terminate()
            process.wait(timeout=30)
    (save,) = named(spans, "memory.save")
    assert save.attributes["gen_ai.agent.name"] == AGENT
    assert save.attributes["lens.team"] == TEAM
    assert save.attributes["lens.memory.id"]
    assert_no_content(spans)


# --- off ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "off",
    [{"OTEL_SDK_DISABLED": "true"}, {"OTEL_TRACES_SAMPLER": "always_off"}],
    ids=["sdk-disabled", "sampler-always-off"],
)
def test_switched_off_nothing_arrives(
    tmp_path: Path, database_url: str, off: dict[str, str]
) -> None:
    with receiving() as receiver:
        env = clean_env(DEBUG="1", DATABASE_URL=database_url, **tracing_env(receiver, **off))
        token = seed(env)
        with runserver(env, tmp_path / "runserver.log") as port:
            session = Session(port, token)
            session.api(
                "POST", f"/api/agents/{AGENT}/memories", {"kind": "profile", "content": PROFILE}
            )
            session.api("GET", f"/api/agents/{AGENT}/composition")
            time.sleep(1.0)  # ten batch intervals
        assert receiver.exports == []


PROBE = """
import sys, threading
import lens.serving.served
from django.conf import settings
from opentelemetry import trace
from lens import tracing
with tracing.span("lens.compose") as current:
    recording = current.is_recording()
print(tracing.is_on(), recording, "opentelemetry.sdk" in sys.modules,
      any("opentelemetry" in m for m in settings.MIDDLEWARE),
      type(trace.get_tracer_provider()).__name__,
      sorted(t.name for t in threading.enumerate()))
"""


def test_without_an_endpoint_the_sdk_is_never_loaded_and_spans_are_no_ops(
    tmp_path: Path,
) -> None:
    # The production application as Granian loads it, with every other OTEL_* setting.
    result = run_python(
        PROBE,
        DEBUG="1",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        OTEL_SERVICE_NAME="composition-lens",
        OTEL_EXPORTER_OTLP_HEADERS=f"Authorization={BASIC}",
        OTEL_TRACES_SAMPLER="always_on",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().split(maxsplit=5) == [
        "False",
        "False",
        "False",
        "False",
        "ProxyTracerProvider",
        "['MainThread']",
    ]
