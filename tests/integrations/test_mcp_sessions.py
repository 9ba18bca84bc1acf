"""Interactive sessions over MCP: listed with descriptions that say when to use them,
driven across calls, audited."""

from __future__ import annotations

from pathlib import Path

from ..mcp_sdk import connect, events
from ..sandbox_support import require_sandbox

pytestmark = require_sandbox()


async def test_a_repl_is_driven_over_mcp(project: Path, isolated_audit_dir: Path) -> None:
    async with connect(project, isolated_audit_dir, "auto-approve") as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        started = await client.call_tool(
            "exec_command", {"cmd": "python3 -q", "yield_time_ms": 1500}
        )
        sid = started.structured_content["data"]["session_id"]
        typed = await client.call_tool(
            "write_stdin", {"session_id": sid, "chars": "print(6 * 7)\n", "yield_time_ms": 500}
        )
        closed = await client.call_tool("close_session", {"session_id": sid})

    assert "instead of run_command" in listed["exec_command"].description
    assert "Ctrl-C" in listed["write_stdin"].description
    assert not started.is_error and ">>>" in started.content[0].text
    assert "42" in typed.content[0].text
    assert closed.structured_content["data"]["ended"] == "closed"
    logged = [(e["tool"], e["outcome"]) for e in events(isolated_audit_dir)]
    assert logged == [("exec_command", "ok"), ("write_stdin", "ok"), ("close_session", "ok")]
