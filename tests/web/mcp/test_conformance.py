"""The official MCP conformance suite (``@modelcontextprotocol/conformance``, pinned in
package.json; ``make axe`` installs it) against ``manage.py mcp --http``: every server
scenario that applies to any server, whatever its tools, passes.

The suite's other server scenarios call fixtures a server under test must implement
(``test_simple_prompt``, ``test://static-text``, a tool that samples, …), which this
server does not have. The suite's client sends no header of its own, so it connects
through ``bearer_proxy``, which adds our token: the server checks it as any client's.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.web.mcp.bearer_proxy import bearer_proxy
from tests.web.mcp.harness import ROOT, TIMEOUT, Raws, World

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

CONFORMANCE = ROOT / "node_modules" / ".bin" / "conformance"
SCENARIOS = [
    "server-initialize",
    "ping",
    "tools-list",
    "resources-list",
    "prompts-list",
    "logging-set-level",
    "completion-complete",
]


def run_scenario(url: str, scenario: str, out: Path) -> tuple[int, list[dict[str, Any]], str]:
    """The suite's exit status, the checks it wrote and what it printed."""
    assert CONFORMANCE.is_file(), "the conformance suite is missing: run `make axe`"
    done = subprocess.run(
        [str(CONFORMANCE), "server", "--url", url, "--scenario", scenario, "-o", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    (written,) = out.glob(f"server-{scenario}-*/checks.json")
    checks: list[dict[str, Any]] = json.loads(written.read_text())
    return done.returncode, checks, done.stdout + done.stderr


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_scenario_passes(
    http_url: str, raws: Raws, world: World, scenario: str, tmp_path: Path
) -> None:
    with bearer_proxy(http_url, raws.ours) as url:
        status, checks, printed = run_scenario(url, scenario, tmp_path)
    assert [(check["id"], check["status"]) for check in checks] == [(scenario, "SUCCESS")], printed
    assert status == 0, printed


def test_without_the_token_the_suite_fails(http_url: str, world: World, tmp_path: Path) -> None:
    """The run above can fail: straight to the server, with no token, it is refused."""
    status, checks, printed = run_scenario(http_url, "ping", tmp_path)
    assert [(check["id"], check["status"]) for check in checks] == [("ping", "FAILURE")]
    assert "invalid_token" in checks[0]["errorMessage"], printed  # the 401's body
    assert status != 0
