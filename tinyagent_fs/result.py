"""ToolResult: what every tool call returns, success or failure."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .errors import ErrorInfo, ToolError


@dataclass(frozen=True)
class ToolResult:
    """``text`` is what the model sees; ``data`` is for programs (JSON-serialisable)."""

    ok: bool
    text: str
    data: dict[str, Any] = field(default_factory=dict)
    error: ErrorInfo | None = None

    @classmethod
    def success(cls, text: str, data: dict[str, Any] | None = None) -> ToolResult:
        return cls(ok=True, text=text, data=data or {})

    @classmethod
    def failure(cls, error: ToolError, data: dict[str, Any] | None = None) -> ToolResult:
        text = f"Error [{error.code.value}]: {error.message}"
        if error.hint:
            text += f"\nHint: {error.hint}"
        return cls(ok=False, text=text, data=data or dict(error.details), error=error.info())

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "text": self.text,
            "data": self.data,
            "error": self.error.to_dict() if self.error else None,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)
