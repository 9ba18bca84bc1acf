"""Adapters to agent frameworks: TinyAgent, MCP, and TinyAgent's tool names.

Nothing is imported here on purpose: ``tinyagent`` and ``mcp`` are optional
extras, so each adapter loads its framework only when that adapter is imported.
"""
