"""wrap_tool: any callable under the same hooks and audit as the file tools."""

from __future__ import annotations

from tinyagent_fs.audit.log import AuditLog
from tinyagent_fs.hooks import Decision, DenyAllPolicy, Risk, ToolCall
from tinyagent_fs.tools.wrapped import wrap_tool

from ..conftest import audit_events


class Scripted:
    def __init__(self, decision: Decision) -> None:
        self.decision = decision
        self.seen: list[ToolCall] = []

    def before_tool_execution(self, call: ToolCall) -> Decision:
        self.seen.append(call)
        return self.decision


def shell(command: str) -> str:
    return f"ran {command}"


async def async_lookup(key: str) -> str:
    return f"value of {key}"


async def test_wrapped_sync_tool_runs_when_approved_and_is_audited(audit: AuditLog) -> None:
    hook = Scripted(Decision.proceed("person"))
    guarded = wrap_tool(shell, [hook], audit=audit)
    assert await guarded(command="ls") == "ran ls"
    assert hook.seen[0].tool == "shell" and hook.seen[0].risk is Risk.EXECUTE
    event = audit_events(audit)[-1]
    assert (event["tool"], event["outcome"], event["decided_by"]) == ("shell", "ok", "person")


async def test_wrapped_tool_denied_returns_the_reason_and_does_not_run(audit: AuditLog) -> None:
    ran = []

    def dangerous(path: str) -> str:
        ran.append(path)
        return "deleted"

    guarded = wrap_tool(dangerous, [DenyAllPolicy()], audit=audit, risk=Risk.DESTRUCTIVE)
    answer = await guarded(path="/")
    assert answer.startswith("Denied:") and ran == []
    assert audit_events(audit)[-1]["outcome"] == "denied"


async def test_wrapped_tool_runs_with_modified_arguments(audit: AuditLog) -> None:
    hook = Scripted(Decision.modify(args={"command": "ls -l"}, decided_by="person"))
    guarded = wrap_tool(shell, [hook], audit=audit)
    assert await guarded(command="rm -rf build") == "ran ls -l"


async def test_wrapped_async_tool_and_alternative_response(audit: AuditLog) -> None:
    assert await wrap_tool(async_lookup, [], audit=audit)(key="k") == "value of k"
    cached = wrap_tool(async_lookup, [Scripted(Decision.alternative("cached"))], audit=audit)
    assert await cached(key="k") == "cached"
