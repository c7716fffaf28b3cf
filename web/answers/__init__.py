"""What the JSON API and the MCP tools both answer with: the pydantic models of their
input and answers, and the functions that build an answer from an operation's result.

One home for both, so a tool answers byte for byte what its endpoint answers: the
routes (``web/api``) and the MCP tools (``web/mcp``) import from here, never from each
other.
"""
