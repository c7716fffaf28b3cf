"""The agent-facing operations as Model Context Protocol tools (SPEC §12).

``operations`` does each tool's work synchronously with the ORM, through the same
functions and answer models as the JSON API; ``tools`` declares the tools for the
official ``mcp`` SDK, runs each call on a pool thread and turns domain errors into tool
errors; ``stdio`` answers unreadable stdio lines; ``descriptions`` is what a model reads
about each tool. ``manage.py mcp`` serves it.
"""

from __future__ import annotations

MCP_PATH = "/mcp"  # where streamable HTTP serves the tools
