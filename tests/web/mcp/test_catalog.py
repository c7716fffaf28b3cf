"""The tool catalogue as a model and a reader see it, without a server process: every
tool named on the manual's MCP page (docs/mcp.md), descriptions that guide without
leaking where a memory goes, and the arguments refused before any tool runs.
"""

from __future__ import annotations

import json
import logging
import re

import pytest
from mcp_types import CallToolResult, Tool

from tests.event_loops import run_async
from tests.web.mcp.harness import ROOT, TOOL_NAMES
from web.mcp import descriptions
from web.mcp.calls import refused_arguments
from web.mcp.tools import LensMCP

MCP_PAGE = ROOT / "docs" / "mcp.md"


def catalogue() -> list[Tool]:
    return run_async(LensMCP(lambda: None).list_tools)


def unnamed_tools(page: str, names: set[str]) -> set[str]:
    """The tools the page never names (in backticks, as code)."""
    return {name for name in names if f"`{name}`" not in page}


def test_every_tool_is_named_on_the_mcp_page() -> None:
    names = {tool.name for tool in catalogue()}
    assert names == TOOL_NAMES
    assert unnamed_tools(MCP_PAGE.read_text(), names) == set()


def test_the_mcp_page_check_catches_a_missing_tool() -> None:
    page = "Tools: `memory_save`, `memory_search`, `memory_recall`, `kv_store`."
    assert unnamed_tools(page, TOOL_NAMES) == {"kv_bootstrap"}


def test_the_mcp_page_says_how_to_register_the_server() -> None:
    page = MCP_PAGE.read_text()
    assert "LENS_TOKEN=" in page
    assert "manage.py mcp" in page
    assert "http://127.0.0.1:8001/mcp" in page
    assert "Authorization: Bearer" in page


# Words that would tell a model where (or whether) a saved memory ends up.
LEAKS = re.compile(r"rout|section|approv|compos|promot|placement|prompt|guarded|queue", re.I)


def test_memory_save_never_speaks_of_where_a_memory_goes() -> None:
    (save,) = [tool for tool in catalogue() if tool.name == "memory_save"]
    texts = [save.description or ""] + [
        str(schema.get("description", "")) for schema in save.input_schema["properties"].values()
    ]
    for text in texts:
        assert not LEAKS.search(text), text
    description = save.description or ""
    for field in ("kind", "content", "tags", "label", "supersedes"):
        assert f"`{field}`" in description
    assert "supersede it or use a different label" in description


def test_each_description_says_what_it_returns_and_its_limits() -> None:
    by_name = {tool.name: tool.description or "" for tool in catalogue()}
    for name, text in by_name.items():
        assert "Returns" in text, name
    kv = by_name["kv_store"]
    for needle in (
        "36,000",
        "`if_version: 0`",
        "`key_not_found`",
        "`version_conflict`",
        "`current_version`",
        "`payload_too_large`",
        "`invalid_key`",
        "1-256",
        "`must.`",
    ):
        assert needle in kv, needle
    assert "10,000" in by_name["memory_save"]
    assert "40,000" in by_name["kv_bootstrap"]
    assert "`omitted`" in by_name["kv_bootstrap"]
    assert "kv_bootstrap" in descriptions.INSTRUCTIONS


PARAMETERS = frozenset({"agent", "kind", "content", "tags", "label", "supersedes"})


@pytest.mark.parametrize(
    ("arguments", "code", "loc"),
    [
        ({"content": "a\ud800b"}, "invalid_content", "content"),
        ({"content": "a\x00b"}, "invalid_content", "content"),
        ({"tags": ["ok", "b\x00"]}, "invalid_tags", "tags.1"),
        ({"agent": "\udfff"}, "invalid_request", "agent"),
        ({"payload": "x"}, "invalid_request", "payload"),
    ],
)
def test_unstorable_text_and_unknown_parameters_are_refused_before_any_tool_runs(
    arguments: dict[str, object], code: str, loc: str
) -> None:
    refused = refused_arguments(arguments, PARAMETERS)
    assert refused is not None
    envelope = refused.envelope()["error"]
    assert envelope["code"] == code
    assert envelope["errors"][0]["loc"] == loc


def test_storable_arguments_pass() -> None:
    arguments = {"agent": "wren", "content": "Café ☕", "tags": ["a"], "label": None}
    assert refused_arguments(arguments, PARAMETERS) is None


def call_in_process(name: str, arguments: dict[str, object]) -> dict[str, object]:
    result = run_async(LensMCP(lambda: "cl_unused").call_tool, name, arguments)
    assert isinstance(result, CallToolResult)
    assert result.is_error
    (content,) = result.content
    assert content.type == "text"
    body: dict[str, object] = json.loads(content.text)
    return body


def test_an_unknown_tool_is_answered_with_the_envelope() -> None:
    error = call_in_process("memory_delete", {})["error"]
    assert isinstance(error, dict)
    assert error["code"] == "invalid_request"
    assert "memory_save" in error["message"]


def test_a_crash_is_logged_and_answered_with_the_envelope_and_no_detail(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def crash(*args: object) -> None:
        raise RuntimeError("secret detail")

    monkeypatch.setattr("web.mcp.tools.run_operation", crash)
    with caplog.at_level(logging.ERROR, logger="web.mcp.tools"):
        body = call_in_process("kv_bootstrap", {})
    assert body == {"error": {"code": "internal_error", "message": "An unexpected error occurred."}}
    assert "MCP tool 'kv_bootstrap' failed" in caplog.text
