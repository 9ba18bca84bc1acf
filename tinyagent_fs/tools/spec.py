"""ToolSpec: a tool's face to the model (name, description, schema, risk), its code,
and what the pipeline, hooks and integrations must know of it (paths, trust, review)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from ..hooks.decision import Risk, ToolCall

if TYPE_CHECKING:
    from ..changes.changeset import ChangeSet
    from ..result import ToolResult
    from .context import ToolContext
    from .plan import Plan

Runner = Callable[["ToolContext", dict[str, Any]], Awaitable["ToolResult"]]
Planner = Callable[["ToolContext", dict[str, Any]], Awaitable["Plan"]]


class PathIntent(str, Enum):
    """What a call does at a path: the guard refuses write-denied paths only for writes."""

    READ = "read"
    WRITE = "write"


@dataclass(frozen=True)
class NamedPath:
    """One path a call names: the argument it came from, and what the call does there."""

    argument: str
    path: str
    intent: PathIntent


@dataclass(frozen=True)
class ToolSpec:
    """Exactly one of ``run`` (reads, commands) or ``plan`` (file changes) is set.

    Planned tools go through review with their ChangeSet and are committed by the
    pipeline; run tools are reviewed on their arguments and then run.

    ``path_arguments`` names every argument that holds a path (a string, or a list
    of strings) and what the call does there; the guard checks each before review.
    ``never_trusted`` says why the call always asks a person (empty: trust given
    for the session may let it through). ``command_argument`` names the argument
    holding the command a tool runs, shown for review with its environment.
    ``change_argument`` names the argument that picks a recorded change: such a
    call works in the folder whose journal holds it, not where a path lies.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    risk: Risk
    run: Runner | None = None
    plan: Planner | None = None
    idempotent: bool = False
    path_arguments: Mapping[str, PathIntent] = field(default_factory=dict)
    never_trusted: str = ""
    command_argument: str | None = None
    change_argument: str | None = None

    @property
    def read_only(self) -> bool:
        return self.risk is Risk.READ

    @property
    def title(self) -> str:
        """A human label for tool pickers: ``read_many_files`` -> ``Read many files``."""
        return self.name.replace("_", " ").capitalize()

    def paths(self, args: Mapping[str, Any]) -> list[NamedPath]:
        """Every path ``args`` name, in declaration order (a list argument names several)."""
        found: list[NamedPath] = []
        for argument, intent in self.path_arguments.items():
            value = args.get(argument)
            values = value if isinstance(value, list) else [value]
            found += [NamedPath(argument, v, intent) for v in values if isinstance(v, str)]
        return found

    def review_call(
        self,
        args: dict[str, Any],
        *,
        changeset: ChangeSet | None = None,
        diff: str = "",
        call_id: str = "",
        session_id: str = "",
    ) -> ToolCall:
        """The call as hooks see it, carrying what they may know of this tool (hooks
        and UI never import tools, so they never look a tool up by name)."""
        command = self.command_argument
        return ToolCall(
            self.name,
            args,
            self.risk,
            changeset=changeset,
            diff=diff,
            call_id=call_id,
            session_id=session_id,
            paths=tuple(named.path for named in self.paths(args)),
            never_trusted=self.never_trusted,
            command_arguments=() if command is None else (command, "env"),
        )


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
