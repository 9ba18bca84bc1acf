"""Several places to approve at once: the first answer wins, the others are withdrawn.

``FirstAnswer(WebApprovalHook(), TerminalHook())`` puts each change to the
sidebar and the terminal together. An approver answers through ``answer(call)``
(or ``before_tool_execution``), sync or async; one that cannot ask anyone raises
``NoAnswer`` and the race goes on without it. When one answers, every other is
told through ``withdraw(call, decision)`` (if it has one) and its task is
cancelled: the web approver then withdraws its proposal (the sidebar row goes),
the terminal stops its prompt and says who answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Sequence
from typing import Any

from .decision import Decision, NoAnswer, Risk, ToolCall

DECIDED_BY = "first-answer"
WITHDRAW_WAIT_S = 5.0


class FirstAnswer:
    """Races approvers on every mutating call; reads pass without a question."""

    name = DECIDED_BY

    def __init__(self, *approvers: Any) -> None:
        if not approvers:
            raise ValueError("FirstAnswer needs at least one approver")
        self.approvers: Sequence[Any] = approvers

    async def before_tool_execution(self, call: ToolCall) -> Decision:
        if call.risk is Risk.READ:
            return Decision.proceed(decided_by=DECIDED_BY)
        tasks = {
            asyncio.ensure_future(_ask(approver, call)): approver for approver in self.approvers
        }
        failures: list[str] = []
        try:
            while tasks:
                done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    tasks.pop(task)
                    error = task.exception()
                    if isinstance(error, NoAnswer):
                        failures.append(str(error))
                    elif error is not None:
                        failures.append(f"{type(error).__name__}: {error}")
                    else:
                        decision: Decision = task.result()
                        await _withdraw(tasks, call, decision)
                        tasks.clear()
                        return decision
        finally:
            if tasks:  # we were cancelled: nobody answered
                await _withdraw(tasks, call, None)
        return Decision.deny(
            f"{call.tool} needs a person's approval and nobody could be asked: "
            + "; ".join(failures),
            decided_by=DECIDED_BY,
        )


def _method(approver: Any) -> Any:
    return getattr(approver, "answer", None) or approver.before_tool_execution


def _is_async(approver: Any) -> bool:
    return inspect.iscoroutinefunction(_method(approver))


async def _ask(approver: Any, call: ToolCall) -> Decision:
    method = _method(approver)
    if inspect.iscoroutinefunction(method):
        answer: Decision = await method(call)
        return answer
    # A blocking approver (a terminal prompt) runs on a thread; it stops on ``withdraw``.
    return await asyncio.to_thread(method, call)  # type: ignore[no-any-return]


async def _withdraw(
    losers: dict[asyncio.Future[Decision], Any], call: ToolCall, winner: Decision | None
) -> None:
    for task, approver in losers.items():
        withdraw = getattr(approver, "withdraw", None)
        if withdraw is not None:
            withdraw(call, winner)
        if withdraw is None or _is_async(approver):
            task.cancel()  # a blocking approver's thread ends by its withdraw instead
    if losers:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait(list(losers), timeout=WITHDRAW_WAIT_S)
        for task in losers:
            if task.done() and not task.cancelled():
                task.exception()  # retrieved: a loser's failure is not news
