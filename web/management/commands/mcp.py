"""``manage.py mcp``: the MCP tools for agents (SPEC §12) and their prompts (§16), over
stdio or streamable HTTP."""

from __future__ import annotations

import os
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connections

from lens.api_tokens import find_token
from lens.serving.telemetry import start_tracing
from web.mcp import MCP_PATH

# web.mcp.tools (and with it the SDK, slow to import) loads only to serve.
TOKEN_VARIABLE = "LENS_TOKEN"


def host_and_port(address: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8001`` for IPv6; port 0 picks a free one)."""
    host, _, port = address.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not host or not port.isdigit() or int(port) > 65535:
        raise CommandError(f"--http takes HOST:PORT, e.g. 127.0.0.1:8001, not {address!r}")
    return host, int(port)


class Command(BaseCommand):
    help = (
        "Serve the MCP tools for agents, and their composed prompts as resources and a "
        "prompt. Over stdio (the default) for the team of the API "
        f"token in ${TOKEN_VARIABLE}; with --http HOST:PORT, over streamable HTTP at "
        f"{MCP_PATH}, where every request needs 'Authorization: Bearer <token>'."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--http",
            metavar="HOST:PORT",
            help=f"serve streamable HTTP at http://HOST:PORT{MCP_PATH} instead of stdio",
        )

    def handle(self, *args: Any, http: str | None, **options: Any) -> None:
        # The tools' own spans (lens.compose, memory.save...) when OTEL_* asks for traces.
        start_tracing(django=False)
        if http is not None:
            host, port = host_and_port(http)
            from web.mcp.tools import serve_http

            serve_http(host, port, announce=self._announce)
            return
        raw = os.environ.get(TOKEN_VARIABLE, "").strip()
        if not raw:
            raise CommandError(
                f"{TOKEN_VARIABLE} is not set: issue a token with `manage.py issue_token "
                f"<team>` and pass it in {TOKEN_VARIABLE}."
            )
        token = find_token(raw)
        if token is None:
            raise CommandError(
                f"{TOKEN_VARIABLE} is not a valid API token (unknown or revoked); issue one "
                "with `manage.py issue_token <team>`."
            )
        # stdout carries the protocol from here on: this line goes to stderr.
        self.stderr.write(f"MCP server on stdio for team {token.team.slug} ({token.prefix}…)")
        connections.close_all()  # the tools use their own thread's connection
        from web.mcp.tools import serve_stdio

        serve_stdio(raw)

    def _announce(self, url: str) -> None:
        self.stderr.write(f"MCP server on {url} (streamable HTTP; Authorization: Bearer <token>)")
