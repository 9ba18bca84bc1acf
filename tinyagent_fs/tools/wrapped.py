"""Put any callable tool (shell, Python, MCP) under the same hooks and audit as ours."""

from __future__ import annotations

import functools
import inspect
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ..audit.log import AuditLog
from ..hooks.decision import Decision, Risk, ToolCall, Verdict
from ..hooks.runner import HookRunner, with_new_arguments
from ..result import ToolResult
from .call_record import CallOutcome, audit_event, denial_text


def wrap_tool(
    func: Callable[..., Any],
    hooks: Sequence[Any] | HookRunner,
    *,
    name: str | None = None,
    risk: Risk = Risk.EXECUTE,
    audit: AuditLog | None = None,
) -> Callable[..., Awaitable[Any]]:
    """An async version of ``func`` that asks the hooks first and records the call.

    Keyword arguments are what hooks see and may modify. A denied call returns the
    denial as a string, which is what agent loops pass back to the model; an
    alternative response is returned in place of the function's result.
    """
    runner = hooks if isinstance(hooks, HookRunner) else HookRunner(hooks)
    tool_name = name or func.__name__

    @functools.wraps(func)
    async def guarded(**kwargs: Any) -> Any:
        started = time.perf_counter()
        call = ToolCall(tool_name, dict(kwargs), risk, call_id=uuid.uuid4().hex[:12])
        review = await runner.before(call, with_new_arguments)
        verdict = review.decision.verdict
        outcome, value = "ok", None
        if verdict is Verdict.DENY:
            outcome = "denied"
            value = denial_text(review.decision)
        elif verdict is Verdict.ALTERNATIVE_RESPONSE:
            value = review.decision.response
        else:
            try:
                value = func(**review.call.args)
                if inspect.isawaitable(value):
                    value = await value
            except Exception as exc:
                outcome = "error"
                _record(audit, review.call, review.decision, outcome, started, str(exc))
                raise
            after = await runner.after(review.call, ToolResult.success(str(value), {}))
            if after.text != str(value):
                value = after.text
        _record(audit, review.call, review.decision, outcome, started, str(value)[:200])
        return value

    return guarded


def _record(
    audit: AuditLog | None,
    call: ToolCall,
    decision: Decision,
    outcome: str,
    started: float,
    message: str,
) -> None:
    if audit is None:
        return
    audit.record(
        audit_event(
            CallOutcome(
                tool=call.tool,
                arguments=call.args,
                started=started,
                provider="wrapped",
                decision=decision,
                outcome=outcome,
                message=message,
            )
        )
    )
