"""The file tools as MCP describes them: ``tools/list`` entries and ``tools/call`` results.

Schemas are our own (``portable_schema``: no ``"null"`` types, which older
clients reject); MCP's hints come from each tool's risk; every result carries
``text`` for the model and ``structuredContent`` for programs, per RESULT_SCHEMA.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from ...result import ToolResult
from ...tools.schema_export import portable_schema
from ...tools.spec import ToolSpec

ADDS_ONLY = frozenset({"create_directory"})
"""Changing tools that can only add: everything else that changes may overwrite or remove."""

RESULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "ok": {"type": "boolean", "description": "Whether the call did what was asked."},
        "data": {"type": "object", "description": "The tool's result for programs."},
        "error": {
            "type": "object",
            "description": "Present only when ok is false.",
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "hint": {"type": "string"},
                "security_violation": {"type": "boolean"},
            },
            "required": ["code", "message"],
        },
    },
    "required": ["ok", "data"],
}

LIST_ROOTS_TOOL = "list_allowed_directories"
"""The server's own tool, named as the reference server names it: the folders served now."""


def tool_annotations(title: str, *, read_only: bool, destructive: bool, idempotent: bool) -> dict:
    """MCP's hints: a client that trusts them must never auto-run something that overwrites."""
    return {
        "title": title,
        "readOnlyHint": read_only,
        "destructiveHint": destructive,
        "idempotentHint": idempotent,
        "openWorldHint": False,
    }


def mcp_tool(spec: ToolSpec) -> dict[str, Any]:
    return {
        "name": spec.name,
        "title": spec.title,
        "description": spec.description,
        "inputSchema": portable_schema(spec.parameters),
        "outputSchema": copy.deepcopy(RESULT_SCHEMA),
        "annotations": tool_annotations(
            spec.title,
            read_only=spec.read_only,
            destructive=not spec.read_only and spec.name not in ADDS_ONLY,
            idempotent=spec.idempotent,
        ),
    }


def list_roots_tool() -> dict[str, Any]:
    title = "List allowed directories"
    return {
        "name": LIST_ROOTS_TOOL,
        "title": title,
        "description": (
            "List the folders these tools may read and write. Relative paths are resolved "
            "against the first one; give absolute paths for files in the others. The MCP "
            "client's roots can narrow the list while the session runs."
        ),
        "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False},
        "outputSchema": copy.deepcopy(RESULT_SCHEMA),
        "annotations": tool_annotations(title, read_only=True, destructive=False, idempotent=True),
    }


def tool_list(specs: Iterable[ToolSpec]) -> list[dict[str, Any]]:
    return [*(mcp_tool(spec) for spec in specs), list_roots_tool()]


def call_result(result: ToolResult) -> dict[str, Any]:
    """``text`` for the model; ok, data and (on failure) error for programs, per RESULT_SCHEMA."""
    structured: dict[str, Any] = {"ok": result.ok, "data": result.data}
    if result.error is not None:
        structured["error"] = result.error.to_dict()
    return {
        "content": [{"type": "text", "text": result.text}],
        "isError": not result.ok,
        "structuredContent": structured,
    }
