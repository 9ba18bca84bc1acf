"""The hook protocol: what a hook is shown and what it may answer."""

from __future__ import annotations

import shlex
from collections.abc import Awaitable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..changes.changeset import ChangeSet

if TYPE_CHECKING:
    from ..result import ToolResult


class Risk(str, Enum):
    """How much a call can hurt, as the risk-based policy sees it."""

    READ = "read"
    WRITE = "write"
    DESTRUCTIVE = "destructive"
    EXECUTE = "execute"


class Verdict(str, Enum):
    PROCEED = "proceed"
    DENY = "deny"
    MODIFY = "modify"
    ALTERNATIVE_RESPONSE = "alternative_response"


@dataclass(frozen=True)
class Decision:
    """A hook's answer.

    ``modified_args`` re-plans the call with new arguments; ``modified_content``
    (path relative to the root -> new text) replaces the planned new content of
    those files. ``response`` is the text the model sees for an alternative
    response. ``decided_by`` names who decided (a hook name, "user", a policy).
    """

    verdict: Verdict
    message: str = ""
    modified_args: dict[str, Any] | None = None
    modified_content: dict[str, str] | None = None
    response: str | None = None
    decided_by: str = ""

    @classmethod
    def proceed(cls, decided_by: str = "") -> Decision:
        return cls(Verdict.PROCEED, decided_by=decided_by)

    @classmethod
    def deny(cls, message: str, decided_by: str = "") -> Decision:
        return cls(Verdict.DENY, message=message, decided_by=decided_by)

    @classmethod
    def modify(
        cls,
        *,
        args: dict[str, Any] | None = None,
        content: dict[str, str] | None = None,
        message: str = "",
        decided_by: str = "",
    ) -> Decision:
        return cls(
            Verdict.MODIFY,
            message=message,
            modified_args=args,
            modified_content=content,
            decided_by=decided_by,
        )

    @classmethod
    def alternative(cls, response: str, decided_by: str = "") -> Decision:
        return cls(Verdict.ALTERNATIVE_RESPONSE, response=response, decided_by=decided_by)


class NoAnswer(Exception):
    """An approver that cannot ask anyone (server gone, input closed): not a decision.

    Raised by an approver's ``answer(call)``; ``FirstAnswer`` then waits for the others.
    """


@dataclass(frozen=True)
class ToolCall:
    """What a hook sees before a tool runs.

    The pipeline builds it from the tool's spec (``ToolSpec.review_call``), so hooks
    and approval surfaces learn what they need here instead of by the tool's name:
    ``paths`` the call names, why it is ``never_trusted`` (empty: trust given for
    the session may let it through), and ``command_line``, the command it runs with
    its environment as a shell would show it, which covers ``command_arguments``.
    """

    tool: str
    args: dict[str, Any]
    risk: Risk
    changeset: ChangeSet | None = None
    diff: str = ""
    call_id: str = ""
    session_id: str = ""
    previous_decisions: tuple[Decision, ...] = field(default=())
    paths: tuple[str, ...] = ()
    never_trusted: str = ""
    command_arguments: tuple[str, ...] = ()
    """The argument holding the command this call runs, then ``env``; empty for a
    call that runs none."""

    @property
    def mutating(self) -> bool:
        return self.risk is not Risk.READ

    @property
    def command_line(self) -> str | None:
        """The command this call runs as a shell would show it, its environment first
        (``NAME='value' ... command``); None for a call that runs no command. Made from
        ``args``, so a person's edited arguments show as they will run.

        Shown whole wherever a person approves a command: a variable can carry code
        (``BASH_FUNC_ls%%``, ``LD_PRELOAD``) as well as the command can."""
        if not self.command_arguments:
            return None
        env = self.args.get("env") or {}
        if isinstance(env, dict):
            prefix = "".join(f"{key}={shlex.quote(str(value))} " for key, value in env.items())
        else:
            prefix = f"env={env!r} "
        return prefix + str(self.args.get(self.command_arguments[0], ""))


@runtime_checkable
class Hook(Protocol):
    """Anything with these two methods (sync or async) can review tool calls.

    Either method may be missing on a concrete hook; the runner treats a missing
    ``before_tool_execution`` as "proceed" and a missing ``after_tool_execution``
    as "keep the result". A hook that never reads ``ToolCall.diff`` may say so
    with ``reads_diff = False``: when no hook reads it, the diff is left empty for
    review and computed later, while the commit's disk writes are under way.
    """

    def before_tool_execution(self, call: ToolCall) -> Decision | Awaitable[Decision]: ...

    def after_tool_execution(
        self, call: ToolCall, result: ToolResult
    ) -> ToolResult | Awaitable[ToolResult | None] | None: ...
