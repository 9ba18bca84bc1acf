"""ToolSpec: a tool's face to the model (name, description, schema, risk) and its code."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..hooks.decision import Risk

if TYPE_CHECKING:
    from ..result import ToolResult
    from .context import ToolContext
    from .plan import Plan

Runner = Callable[["ToolContext", dict[str, Any]], Awaitable["ToolResult"]]
Planner = Callable[["ToolContext", dict[str, Any]], Awaitable["Plan"]]


@dataclass(frozen=True)
class ToolSpec:
    """Exactly one of ``run`` (reads, commands) or ``plan`` (file changes) is set.

    Planned tools go through review with their ChangeSet and are committed by the
    pipeline; run tools are reviewed on their arguments and then run.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    risk: Risk
    run: Runner | None = None
    plan: Planner | None = None
    idempotent: bool = False

    @property
    def read_only(self) -> bool:
        return self.risk is Risk.READ

    @property
    def title(self) -> str:
        """A human label for tool pickers: ``read_many_files`` -> ``Read many files``."""
        return self.name.replace("_", " ").capitalize()


def schema(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


def string(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **extra}


def integer(description: str, default: int | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "integer", "description": description, **extra}
    if default is not None:
        out["default"] = default
    return out


def boolean(description: str, default: bool) -> dict[str, Any]:
    return {"type": "boolean", "description": description, "default": default}
