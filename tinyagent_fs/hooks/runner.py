"""Runs hooks in order around a tool call: the first deny wins."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .decision import Decision, ToolCall, Verdict

if TYPE_CHECKING:
    from ..result import ToolResult

Replan = Callable[[ToolCall, Decision], Awaitable[ToolCall]]
"""Turns a MODIFY decision into the call that will now run (re-planned)."""


async def with_new_arguments(current: ToolCall, decision: Decision) -> ToolCall:
    """The replan of a call the toolkit does not plan itself (a wrapped or a framework's
    tool): the person's arguments; the same tool, risk and ids."""
    args = decision.modified_args if decision.modified_args is not None else current.args
    return replace(current, args=dict(args))


@dataclass(frozen=True)
class Review:
    """The outcome of the before-hooks: the call that runs (maybe modified) and why."""

    call: ToolCall
    decision: Decision
    modified_by: tuple[Decision, ...] = ()

    @property
    def allowed(self) -> bool:
        return self.decision.verdict in (Verdict.PROCEED, Verdict.MODIFY)


class HookRunner:
    """Asks each hook in turn.

    A DENY or ALTERNATIVE_RESPONSE ends the review. A MODIFY re-plans the call
    and the hooks after it review the modified call, so a policy placed after an
    interactive hook still applies to what a person edited.
    """

    def __init__(self, hooks: Sequence[Any] = ()) -> None:
        self.hooks = list(hooks)

    def add(self, hook: Any) -> None:
        self.hooks.append(hook)

    @property
    def read_diffs(self) -> bool:
        """Whether any hook may read ``ToolCall.diff`` (see ``Hook``)."""
        return any(getattr(hook, "reads_diff", True) for hook in self.hooks)

    async def before(self, call: ToolCall, replan: Replan | None = None) -> Review:
        modifications: list[Decision] = []
        last = Decision.proceed(decided_by="no hooks")
        for hook in self.hooks:
            method = getattr(hook, "before_tool_execution", None)
            if method is None:
                continue
            decision = _checked(await _resolve(method(call)), hook, call)
            decision = _named(decision, hook)
            if decision.verdict in (Verdict.DENY, Verdict.ALTERNATIVE_RESPONSE):
                return Review(call, decision, tuple(modifications))
            if decision.verdict is Verdict.MODIFY:
                if replan is None:
                    return Review(
                        call,
                        Decision.deny(
                            f"{decision.decided_by} asked to modify {call.tool}, "
                            "which cannot be modified",
                            decided_by=decision.decided_by,
                        ),
                    )
                call = await replan(call, decision)
                call = replace(call, previous_decisions=(*call.previous_decisions, decision))
                modifications.append(decision)
            last = decision
        final = modifications[-1] if modifications else last
        return Review(call, final, tuple(modifications))

    async def after(self, call: ToolCall, result: ToolResult) -> ToolResult:
        for hook in self.hooks:
            method = getattr(hook, "after_tool_execution", None)
            if method is None:
                continue
            replaced = await _resolve(method(call, result))
            if replaced is not None:
                result = replaced
        return result


async def _resolve(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


def _checked(answer: Any, hook: Any, call: ToolCall) -> Decision:
    """A hook's answer as a Decision: None proceeds, anything else that is not a
    Decision denies (a typo like ``{"proceed": False}`` must never let a change through)."""
    name = getattr(hook, "name", type(hook).__name__)
    if answer is None:
        return Decision.proceed(decided_by=name)
    if isinstance(answer, Decision):
        return answer
    return Decision.deny(
        f"hook {name} answered {call.tool} with a {type(answer).__name__}, not a Decision; "
        "the call is denied until the hook returns Decision.proceed/deny/modify/alternative",
        decided_by=name,
    )


def _named(decision: Decision, hook: Any) -> Decision:
    if decision.decided_by:
        return decision
    return replace(decision, decided_by=getattr(hook, "name", type(hook).__name__))
