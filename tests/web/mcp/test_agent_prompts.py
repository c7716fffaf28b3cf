"""The agents' composed prompts as MCP resources and a prompt (SPEC §16), end to end
through the SDK's own client over stdio and over streamable HTTP: what is listed (the
token's team's agents only, paged), what reading answers (the composed prompt; the
composition exactly as the API answers it), that reading records nothing, and that
another team's agent is refused exactly as an agent that does not exist.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal
from django.utils import timezone
from mcp_types import INVALID_PARAMS, INVALID_REQUEST

from lens.agents import get_agent
from lens.models import Agent, ApiToken, AuditEvent
from memory.composition import compose
from memory.models import Delivery, MemoryEvent
from tests.api_calls import ApiClient, db_snapshot
from tests.factories import create_agent
from tests.web.mcp.harness import ROOT, TIMEOUT, McpTools, Raws, World, http_session
from web.mcp.agent_prompts import PAGE_AGENTS, VIEWS
from web.mcp.operations import agent_page

pytestmark = pytest.mark.django_db(transaction=True)

PROMPT_URI = "lens://agents/wren/prompt"
COMPOSITION_URI = "lens://agents/wren/composition"


def prompt_now(world: World) -> str:
    return compose(get_agent(world.team, "wren")).prompt.text


def recorded() -> dict[str, int]:
    """What reading must leave as it was: deliveries, audit events, memory events."""
    return {model.__name__: model.objects.count() for model in (Delivery, AuditEvent, MemoryEvent)}


def not_found(tools: McpTools, uri: str) -> dict[str, Any]:
    """The refusal of reading ``uri``: invalid params, the §8 envelope in its data."""
    error = tools.refused(lambda: tools.read_resource(uri))
    assert error.code == INVALID_PARAMS, error.error
    assert error.data["uri"] == uri
    assert error.data["error"]["code"] == "agent_not_found"
    assert error.message == error.data["error"]["message"]
    return {"message": error.message, "data": error.data}


# --- listing --------------------------------------------------------------------------


def test_the_list_has_the_prompt_and_composition_of_each_agent_of_the_team_only(
    tools: McpTools, world: World
) -> None:
    create_agent(world.team, "ada", {"name": "Ada", "background": {"sections": []}})
    listed = tools.list_resources()
    assert listed.next_cursor is None
    by_uri = {resource.uri: resource for resource in listed.resources}
    assert list(by_uri) == [
        "lens://agents/ada/prompt",
        "lens://agents/ada/composition",
        PROMPT_URI,
        COMPOSITION_URI,
    ]  # atlas, of the other team, is not there
    assert by_uri[PROMPT_URI].mime_type == "text/plain"
    assert by_uri[COMPOSITION_URI].mime_type == "application/json"
    assert by_uri[PROMPT_URI].title == "Wren: composed prompt"
    for resource in listed.resources:
        assert resource.name
        assert resource.description
        assert "records nothing" in resource.description


def test_a_large_team_is_listed_in_pages_each_agent_once(tools: McpTools, world: World) -> None:
    slugs = sorted(["wren", *(f"agent-{number:03}" for number in range(PAGE_AGENTS + 5))])
    for slug in slugs:
        if slug != "wren":
            create_agent(world.team, slug, {"name": slug, "background": {"sections": []}})
    pages, cursor = [], None
    while True:
        page = tools.list_resources(cursor)
        pages.append(page.resources)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert [len(page) for page in pages] == [2 * PAGE_AGENTS, 2 * (len(slugs) - PAGE_AGENTS)]
    uris = [resource.uri for page in pages for resource in page]
    assert uris == [f"lens://agents/{slug}/{view}" for slug in slugs for view in VIEWS]


def test_a_page_of_the_list_is_one_query_whatever_the_teams_size(
    world: World, django_assert_num_queries: Any
) -> None:
    for number in range(12):
        create_agent(
            world.team, f"agent-{number:02}", {"name": "A", "background": {"sections": []}}
        )
    with django_assert_num_queries(1):
        first, more = agent_page(world.token, None, 5)
    assert ([agent.slug for agent in first], more) == ([f"agent-{n:02}" for n in range(5)], True)
    with django_assert_num_queries(1):
        last, more = agent_page(world.token, "agent-09", 5)
    assert ([agent.slug for agent in last], more) == (["agent-10", "agent-11", "wren"], False)


def test_a_cursor_the_server_never_gave_is_invalid_params(tools: McpTools, world: World) -> None:
    error = tools.refused(lambda: tools.list_resources("not a cursor"))
    assert error.code == INVALID_PARAMS
    assert error.data["error"]["code"] == "invalid_request"


def test_the_templates_address_any_agent_by_slug(tools: McpTools, world: World) -> None:
    templates = {template.uri_template: template for template in tools.list_resource_templates()}
    assert set(templates) == {"lens://agents/{slug}/prompt", "lens://agents/{slug}/composition"}
    assert templates["lens://agents/{slug}/prompt"].mime_type == "text/plain"
    assert templates["lens://agents/{slug}/composition"].mime_type == "application/json"


def test_the_one_prompt_takes_the_agent_as_a_required_argument(
    tools: McpTools, world: World
) -> None:
    (prompt,) = tools.list_prompts()
    assert prompt.name == "agent_system_prompt"
    assert prompt.description
    assert "system prompt" in prompt.description
    assert prompt.arguments is not None
    (argument,) = prompt.arguments
    assert (argument.name, argument.required) == ("agent", True)


# --- reading --------------------------------------------------------------------------


def test_the_prompt_resource_is_the_composed_prompt_as_it_is_now(
    tools: McpTools, world: World
) -> None:
    tools.ok("memory_save", agent="wren", kind="profile", content="Doug works in UTC+1.")
    result = tools.read_resource(PROMPT_URI)
    (content,) = result.contents
    assert content.uri == PROMPT_URI
    assert content.mime_type == "text/plain"
    text = getattr(content, "text", None)
    assert text == prompt_now(world)
    assert "Doug works in UTC+1." in text  # the memory saved a moment ago is composed


def test_the_composition_resource_is_exactly_the_apis_body(
    tools: McpTools, world: World, raws: Raws
) -> None:
    tools.ok("memory_save", agent="wren", kind="profile", content="Doug works in UTC+1.")
    (content,) = tools.read_resource(COMPOSITION_URI).contents
    assert content.mime_type == "application/json"
    api = ApiClient(raws.ours).get("/api/agents/wren/composition")
    assert api.status_code == 200
    assert getattr(content, "text", None) == api.content.decode()
    assert json.loads(api.content)["agent"] == "wren"


def test_the_prompt_is_one_user_message_whose_text_is_the_composed_prompt(
    tools: McpTools, world: World
) -> None:
    result = tools.get_prompt("agent_system_prompt", agent="wren")
    (message,) = result.messages
    assert message.role == "user"
    assert message.content.type == "text"
    assert message.content.text == prompt_now(world)


def test_reading_records_no_delivery_and_no_event(tools: McpTools, world: World) -> None:
    tools.ok("memory_save", agent="wren", kind="profile", content="Doug works in UTC+1.")
    counts, before = recorded(), db_snapshot()
    assert counts["MemoryEvent"] > 0
    assert counts["AuditEvent"] > 0
    tools.list_resources()
    tools.read_resource(PROMPT_URI)
    tools.read_resource(COMPOSITION_URI)
    tools.get_prompt("agent_system_prompt", agent="wren")
    assert recorded() == counts
    assert db_snapshot() == before  # nothing at all


# --- refusals -------------------------------------------------------------------------


def test_another_teams_agent_is_refused_exactly_as_one_that_does_not_exist(
    tools: McpTools, world: World
) -> None:
    """atlas exists, in the other team: the refusal is the one it gets once gone."""
    refusals = [not_found(tools, f"lens://agents/atlas/{view}") for view in VIEWS]
    prompt = tools.refused(lambda: tools.get_prompt("agent_system_prompt", agent="atlas"))
    Agent.objects.filter(pk=world.other_agent.pk).delete()
    assert refusals == [not_found(tools, f"lens://agents/atlas/{view}") for view in VIEWS]
    gone = tools.refused(lambda: tools.get_prompt("agent_system_prompt", agent="atlas"))
    assert (prompt.code, prompt.message, prompt.data) == (gone.code, gone.message, gone.data)
    assert prompt.code == INVALID_PARAMS
    assert prompt.data == {"error": {"code": "agent_not_found", "message": prompt.message}}


def test_the_other_teams_token_cannot_read_our_agent(
    http_url: str, portal: BlockingPortal, world: World, raws: Raws
) -> None:
    with portal.wrap_async_context_manager(http_session(http_url, raws.theirs)) as client:
        theirs = McpTools(portal, client)
        assert [r.uri for r in theirs.list_resources().resources] == [
            "lens://agents/atlas/prompt",
            "lens://agents/atlas/composition",
        ]
        not_found(theirs, PROMPT_URI)
        not_found(theirs, COMPOSITION_URI)
        error = theirs.refused(lambda: theirs.get_prompt("agent_system_prompt", agent="wren"))
        assert error.data["error"]["code"] == "agent_not_found"


@pytest.mark.parametrize(
    "slug", ["nobody", "Wren", "wr%65n", "a" * 65, "wren\x00", "-wren", "wren prompt"]
)
def test_a_slug_no_agent_has_is_not_found(tools: McpTools, world: World, slug: str) -> None:
    not_found(tools, f"lens://agents/{slug}/prompt")


@pytest.mark.parametrize(
    "uri",
    [
        "lens://agents/wren",
        "lens://agents/wren/",
        "lens://agents//prompt",
        "lens://agents/wren/prompt/",
        "lens://agents/wren/memories",
        "lens://agents/a/b/prompt",
        "https://example.com/wren/prompt",
    ],
)
def test_a_uri_that_names_no_resource_is_invalid_params(
    tools: McpTools, world: World, uri: str
) -> None:
    error = tools.refused(lambda: tools.read_resource(uri))
    assert error.code == INVALID_PARAMS
    assert error.data["uri"] == uri
    assert error.data["error"]["code"] == "invalid_request"
    assert "lens://agents/{slug}/prompt" in error.message


@pytest.mark.parametrize(
    ("name", "arguments", "needle"),
    [
        ("agent_system_prompt", {}, "agent is required"),
        ("agent_system_prompt", {"agent": "wren", "tone": "dry"}, "tone"),
        ("agent_system_prompt", {"agent": "wr\x00en"}, "agent"),
        ("system_prompt", {"agent": "wren"}, "agent_system_prompt"),
    ],
)
def test_bad_prompt_requests_are_invalid_params_with_the_envelope(
    tools: McpTools, world: World, name: str, arguments: dict[str, str], needle: str
) -> None:
    before = db_snapshot()
    error = tools.refused(lambda: tools.get_prompt(name, **arguments))
    assert error.code == INVALID_PARAMS
    assert error.data["error"]["code"] == "invalid_request"
    assert needle in error.message
    assert db_snapshot() == before


def test_a_running_stdio_server_refuses_reads_once_its_token_is_revoked(
    stdio_tools: McpTools, world: World
) -> None:
    assert stdio_tools.read_resource(PROMPT_URI).contents
    ApiToken.objects.filter(pk=world.token.pk).update(revoked_at=timezone.now())
    for request in (
        stdio_tools.list_resources,
        lambda: stdio_tools.read_resource(PROMPT_URI),
        lambda: stdio_tools.get_prompt("agent_system_prompt", agent="wren"),
    ):
        error = stdio_tools.refused(request)
        assert error.code == INVALID_REQUEST
        assert error.data["error"]["code"] == "unauthorized"


# --- the manual's example -------------------------------------------------------------

MCP_PAGE = ROOT / "docs" / "mcp.md"
PAGE_URL = "http://127.0.0.1:8001/mcp"  # where the page's example looks for the server


def test_the_python_example_on_the_mcp_page_runs(http_url: str, world: World, raws: Raws) -> None:
    (script,) = re.findall(r"^```python\n(.*?)^```", MCP_PAGE.read_text(), re.M | re.S)
    assert PAGE_URL in script
    done = subprocess.run(
        [sys.executable, "-c", script.replace(PAGE_URL, http_url)],
        cwd=ROOT,
        env={**os.environ, "TOKEN": raws.ours},
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    uris = [f"lens://agents/wren/{view}" for view in VIEWS]
    assert done.stdout == f"{uris!r}\n{prompt_now(world)}\n"
