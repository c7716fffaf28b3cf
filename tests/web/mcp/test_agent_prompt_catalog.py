"""The resources' names and the prompt as a client and a reader see them, without a
server process: the URIs name what they say and nothing else, a cursor this server
never gave is refused, the manual's MCP page names them, and a crash while reading is
logged and answered without its detail.
"""

from __future__ import annotations

import logging
from typing import cast

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, ReadResourceRequestParams

from lens.core.config import is_agent_slug
from tests.event_loops import run_async
from tests.web.mcp.harness import ROOT
from web.mcp.agent_prompts import (
    PROMPT,
    TEMPLATES,
    VIEWS,
    AgentPrompts,
    Context,
    View,
    agent_uri,
    cursor_after,
    named_by,
)
from web.mcp.tools import LensMCP

MCP_PAGE = ROOT / "docs" / "mcp.md"

slugs = st.from_regex(r"[a-z0-9][a-z0-9-]{0,63}", fullmatch=True)


@given(slug=slugs, view=st.sampled_from(VIEWS))
def test_a_uri_names_its_agent_and_view(slug: str, view: View) -> None:
    assert named_by(agent_uri(slug, view)) == (slug, view)


@given(uri=st.text(max_size=80))
def test_whatever_a_uri_names_it_is_named_back_the_same(uri: str) -> None:
    """Nothing is read into a URI: it names a slug and view only when it is exactly
    that resource's URI."""
    named = named_by(uri)
    if named is not None:
        assert agent_uri(*named) == uri
        assert named[0]
        assert "/" not in named[0]


@pytest.mark.parametrize(
    "uri",
    ["lens://agents/wren", "lens://agents//prompt", "lens://agents/a/b/prompt", "lens://x/prompt"],
)
def test_other_uris_name_nothing(uri: str) -> None:
    assert named_by(uri) is None


@given(slug=slugs)
def test_a_slug_is_a_cursor(slug: str) -> None:
    assert cursor_after(slug) == slug


@pytest.mark.parametrize("cursor", ["", "Wren", "a b", "x" * 65, "wren\x00"])
def test_a_cursor_this_server_never_gave_is_invalid_params(cursor: str) -> None:
    assert not is_agent_slug(cursor)
    with pytest.raises(MCPError) as refused:
        cursor_after(cursor)
    assert refused.value.code == INVALID_PARAMS
    assert refused.value.data["error"]["code"] == "invalid_request"


def test_the_mcp_page_names_the_resources_and_the_prompt() -> None:
    page = MCP_PAGE.read_text()
    for template in TEMPLATES:
        assert f"`{template.uri_template}`" in page
    assert f"`{PROMPT.name}`" in page


def test_a_crash_while_reading_is_logged_and_answered_with_no_detail(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def crash(*args: object) -> None:
        raise RuntimeError("secret detail")

    monkeypatch.setattr("web.mcp.agent_prompts._as_token", crash)
    reads = AgentPrompts(LensMCP(lambda: "cl_unused"))
    params = ReadResourceRequestParams(uri="lens://agents/wren/prompt")
    with (
        caplog.at_level(logging.ERROR, logger="web.mcp.agent_prompts"),
        pytest.raises(MCPError) as failed,
    ):
        run_async(reads.read_resource, cast(Context, None), params)
    assert failed.value.code == INTERNAL_ERROR
    assert failed.value.message == "An unexpected error occurred."
    assert failed.value.data == {
        "uri": "lens://agents/wren/prompt",
        "error": {"code": "internal_error", "message": "An unexpected error occurred."},
    }
    assert "secret detail" not in str(failed.value.data)
    assert "MCP read agent_prompt('wren',) failed" in caplog.text
    assert "secret detail" in caplog.text  # the traceback, for whoever runs the server
