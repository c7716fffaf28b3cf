"""The agent-facing operations as Model Context Protocol tools (SPEC §12), and each
agent's composed prompt as resources and a prompt (SPEC §16).

``operations`` does each tool's and read's work synchronously with the ORM, through the
same functions and answer models as the JSON API; ``tools`` declares the tools for the
official ``mcp`` SDK, runs each call on a pool thread and turns domain errors into tool
errors; ``agent_prompts`` serves the resources and the prompt on the same pool, its
refusals as JSON-RPC errors; ``calls`` is what both share (who calls, the arguments
refused up front); ``stdio`` answers unreadable stdio lines; ``descriptions`` is what a
model reads about each. ``manage.py mcp`` serves it.
"""

from __future__ import annotations

MCP_PATH = "/mcp"  # where streamable HTTP serves the tools
