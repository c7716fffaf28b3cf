"""Who may use the MCP tools (SPEC §12): ``LENS_TOKEN`` checked before stdio serves
anything, a bearer token checked on every HTTP request, and a team's token reaching
only its own team.
"""

from __future__ import annotations

import pytest
from anyio.from_thread import BlockingPortal
from django.utils import timezone

from kvstore import store
from lens.models import ApiToken
from memory.models import EventKind, MemoryEvent, MemoryRecord
from tests.api_calls import db_snapshot
from tests.web.mcp.harness import (
    McpTools,
    Raws,
    World,
    http_session,
    manage_mcp,
    raw_post,
    row_counts,
    server_env,
    tools_call,
)

pytestmark = pytest.mark.django_db(transaction=True)

# Well formed, never issued.
UNISSUED = "cl_" + "A" * 43

WRITE_ROOT = tools_call("kv_store", {"command": "write", "id": "root", "payload": "owned"})


def revoke(token: ApiToken) -> None:
    ApiToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())


# --- stdio: LENS_TOKEN, checked before serving ----------------------------------------


def test_stdio_refuses_to_start_without_lens_token(mcp_database: str) -> None:
    done = manage_mcp(env=server_env(mcp_database))
    assert done.returncode != 0
    assert "LENS_TOKEN is not set" in done.stderr
    assert done.stdout == ""  # nothing was served


def test_stdio_refuses_to_start_with_an_unknown_token(mcp_database: str, world: World) -> None:
    done = manage_mcp(env=server_env(mcp_database, LENS_TOKEN=UNISSUED))
    assert done.returncode != 0
    assert "LENS_TOKEN is not a valid API token" in done.stderr
    assert done.stdout == ""


def test_stdio_refuses_to_start_with_a_revoked_token(
    mcp_database: str, world: World, raws: Raws
) -> None:
    revoke(world.token)
    done = manage_mcp(env=server_env(mcp_database, LENS_TOKEN=raws.ours))
    assert done.returncode != 0
    assert "not a valid API token (unknown or revoked)" in done.stderr
    assert done.stdout == ""


def test_a_running_stdio_server_stops_at_once_when_its_token_is_revoked(
    stdio_tools: McpTools, world: World
) -> None:
    assert stdio_tools.ok("kv_store", command="list", id="")["total"] == 0
    revoke(world.token)
    before = db_snapshot()
    error = stdio_tools.error(
        "kv_store", "unauthorized", command="write", id="root", payload="late"
    )
    assert "revoked" in error["message"]
    assert db_snapshot() == before


def test_http_needs_a_valid_host_and_port(mcp_database: str) -> None:
    done = manage_mcp("--http", "localhost", env=server_env(mcp_database))
    assert done.returncode != 0
    assert "--http takes HOST:PORT" in done.stderr


# --- HTTP: a bearer token on every request --------------------------------------------


def test_http_without_a_valid_token_is_401_and_does_nothing(
    http_url: str, world: World, raws: Raws, subtests: pytest.Subtests
) -> None:
    before = row_counts()
    for authorization in [
        None,
        "",
        "Bearer",
        "Bearer ",
        "Bearer not-a-token",
        f"Bearer {UNISSUED}",
        "Basic abc",
    ]:
        with subtests.test(msg=repr(authorization)):
            status, body = raw_post(http_url, WRITE_ROOT, authorization)
            assert status == 401, body
            assert row_counts() == before
    # The same request with our token does write: only the token stopped it.
    status, body = raw_post(http_url, WRITE_ROOT, f"Bearer {raws.ours}")
    assert status == 200, body
    assert store.read(world.team, "root").payload == "owned"


def test_http_with_a_revoked_token_is_401(http_url: str, world: World, raws: Raws) -> None:
    revoke(world.token)
    before = row_counts()
    status, _ = raw_post(http_url, WRITE_ROOT, f"Bearer {raws.ours}")
    assert status == 401
    assert row_counts() == before


def test_another_teams_token_cannot_read_or_write_our_keys_or_agents(
    http_url: str, portal: BlockingPortal, world: World, raws: Raws
) -> None:
    store.write(world.team, "root", "ours")
    with portal.wrap_async_context_manager(http_session(http_url, raws.theirs)) as client:
        theirs = McpTools(portal, client)
        theirs.error("kv_store", "key_not_found", command="read", id="root")
        theirs.error("kv_store", "key_not_found", command="history", id="root")
        theirs.error("kv_store", "key_not_found", command="delete", id="root")
        theirs.error("kv_bootstrap", "key_not_found")
        assert theirs.ok("kv_store", command="list", id="")["keys"] == []
        written = theirs.ok("kv_store", command="write", id="root", payload="theirs")
        assert written["version"] == 1  # their own key, in their own team
        theirs.error(
            "kv_store",
            "version_conflict",
            command="write",
            id="root",
            payload="x",
            if_version=0,
        )
        for tool, arguments in [
            ("memory_save", {"kind": "fact", "content": "Planted."}),
            ("memory_search", {"query": "planted"}),
            ("memory_recall", {"message": "planted"}),
        ]:
            theirs.error(tool, "agent_not_found", agent="wren", **arguments)
        saved = theirs.ok("memory_save", agent="atlas", kind="fact", content="Their own.")
    ours = store.read(world.team, "root")
    assert (ours.version, ours.payload) == (1, "ours")
    assert store.read(world.other_team, "root").payload == "theirs"
    assert not MemoryRecord.objects.filter(agent=world.agent).exists()
    # The request's token acted: it is the actor of what it saved.
    event = MemoryEvent.objects.get(record_id=saved["id"], kind=EventKind.SAVED)
    assert event.actor_token == world.other_token
