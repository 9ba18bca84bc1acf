"""Attacks through ``tinyagent-fs mcp`` on the wire: commands that outlive their call,
commands that reach past the client's roots, and input that breaks the reader.

Each test starts the real server with the Linux sandbox and speaks raw JSON-RPC
lines to it (``mcp_raw_client.RawServer``).
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from ..lifetime_support import (
    COMMAND,
    assert_gone_at_once,
    assert_marker_never_appears,
    wait_for,
)
from ..mcp_raw_client import RawServer
from ..sandbox_support import require_sandbox

pytestmark = require_sandbox()
KILLED = "the command was killed with every process it started"


def audited(audit_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (audit_dir / "audit.jsonl").read_text().splitlines()]


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid``: the sandbox worker and what its commands run
    (not the guardian that settles for a command if the server dies: it is no command's)."""
    parents: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_text()
                if b"settle_guardian" in Path(f"/proc/{name}/cmdline").read_bytes():
                    continue
            except OSError:
                continue
            parents[int(name)] = int(stat.rsplit(") ", 1)[1].split()[1])
    found, frontier = [], [pid]
    while frontier:
        below = [child for child, parent in parents.items() if parent in frontier]
        found += below
        frontier = below
    return found


def start_command(server: RawServer, root: Path) -> int:
    server.initialize()
    call = {"name": "run_command", "arguments": {"command": COMMAND, "timeout_s": 30}}
    return server.send_request("tools/call", call)


async def test_a_cancelled_command_is_killed_and_audited_so(tmp_path: Path) -> None:
    root, audit_dir = tmp_path / "root", tmp_path / "audit"
    root.mkdir()
    with RawServer([root], audit_dir, "--policy", "auto-approve") as server:
        ident = start_command(server, root)
        await wait_for(root / "started.txt")
        command = descendants(server.process.pid)
        assert len(command) >= 4, "the worker (two processes), the shell and sleep"
        cancel = {"requestId": ident, "reason": "the person pressed stop"}
        server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
        await assert_gone_at_once(command)
        assert server.request("ping")["result"] == {}  # and no answer to the command before it
        await assert_marker_never_appears(root)
        assert server.close() == 0

    [event] = [e for e in audited(audit_dir) if e["tool"] == "run_command"]
    assert event["outcome"] == "error"
    assert event["message"] == f"cancelled by the client before it ended; {KILLED}"


async def test_sigterm_to_the_server_kills_its_command_and_audits_it(tmp_path: Path) -> None:
    root, audit_dir = tmp_path / "root", tmp_path / "audit"
    root.mkdir()
    with RawServer([root], audit_dir, "--policy", "auto-approve") as server:
        start_command(server, root)
        await wait_for(root / "started.txt")
        command = descendants(server.process.pid)
        assert len(command) >= 4, "the worker (two processes), the shell and sleep"
        server.process.send_signal(signal.SIGTERM)
        await assert_gone_at_once(command)
        assert server.process.wait(timeout=10) == 0
        await assert_marker_never_appears(root)

    [event] = [e for e in audited(audit_dir) if e["tool"] == "run_command"]
    assert event["message"] == f"stopped with the server before it ended; {KILLED}"


def test_too_deep_nesting_is_a_parse_error_and_the_next_request_is_answered(
    tmp_path: Path,
) -> None:
    root, audit_dir = tmp_path / "root", tmp_path / "audit"
    root.mkdir()
    ping = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping"}).encode()
    with RawServer([root], audit_dir) as server:
        server.initialize()
        for deep in (b"[" * 100_000, b'{"a":' * 100_000, b"[" * 5_000 + b"]" * 5_000):
            server.write(deep + b"\n" + ping + b"\n")
            refused, answered = server.receive(), server.receive()
            assert refused["id"] is None and refused["error"]["code"] == -32700, refused
            assert answered == {"jsonrpc": "2.0", "id": 7, "result": {}}
        assert server.close() == 0


def test_an_absolute_path_with_a_nul_byte_gets_the_tools_null_byte_error(tmp_path: Path) -> None:
    root, audit_dir = tmp_path / "root", tmp_path / "audit"
    root.mkdir()
    (root / "inside.txt").write_text("inside\n")
    call = {"name": "read_file", "arguments": {"path": f"{root.resolve()}\x00/etc/passwd"}}
    with RawServer([root], audit_dir) as server:
        server.initialize()
        answer = server.request("tools/call", call)
        assert server.close() == 0

    assert "error" not in answer, answer
    result = answer["result"]
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["code"] == "NULL_BYTE", result
    assert "root:x:0:0" not in json.dumps(answer)


def answer_roots(server: RawServer, *folders: Path) -> None:
    question = server.receive()
    assert question["method"] == "roots/list"
    listed = {"roots": [{"uri": folder.resolve().as_uri()} for folder in folders]}
    server.send({"jsonrpc": "2.0", "id": question["id"], "result": listed})


@pytest.mark.parametrize("when", ["at_start", "mid_session"])
def test_a_command_cannot_reach_past_the_clients_narrowed_roots(tmp_path: Path, when: str) -> None:
    """Served: A and B; the client's roots narrow that to A/sub, at once or after a command
    ran with both. The command runs in A/sub."""
    a, b, audit_dir = tmp_path / "A", tmp_path / "B", tmp_path / "audit"
    (a / "sub").mkdir(parents=True)
    b.mkdir()
    (a / "a-secret.txt").write_text("SECRET-OF-A\n")
    (b / "b-secret.txt").write_text("SECRET-OF-B\n")
    attack = (
        f"cat {a}/a-secret.txt {b}/b-secret.txt; echo x > {a}/planted; echo x > {b}/planted;"
        " echo x > inside; echo done"
    )
    call = {"name": "run_command", "arguments": {"command": attack}}
    with RawServer([a, b], audit_dir, "--policy", "auto-approve") as server:
        server.initialize(capabilities={"roots": {}})
        if when == "mid_session":
            answer_roots(server, a, b)
            wide = {"name": "run_command", "arguments": {"command": f"cat {b}/b-secret.txt"}}
            assert "SECRET-OF-B" in json.dumps(server.request("tools/call", wide))
            server.send({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
        answer_roots(server, a / "sub")
        answer = server.request("tools/call", call)
        assert server.close() == 0

    shown = json.dumps(answer)
    assert "done" in shown, shown
    assert (a / "sub" / "inside").exists(), "the command ran in the narrowed root"
    assert "SECRET-OF-A" not in shown and "SECRET-OF-B" not in shown, shown
    assert not (a / "planted").exists() and not (b / "planted").exists()


def test_narrowing_below_a_tinyagentignore_does_not_lift_its_denials(tmp_path: Path) -> None:
    """The person's A/.tinyagentignore denies files in A/sub: a client narrowing its roots
    to A/sub is not served there (a served folder reads only its own ignore file)."""
    a, audit_dir = tmp_path / "A", tmp_path / "audit"
    (a / "sub" / "private").mkdir(parents=True)
    (a / ".tinyagentignore").write_text("*.secret\nsub/private/\n")
    (a / "sub" / "x.secret").write_text("TOPSECRET1\n")
    (a / "sub" / "private" / "p.txt").write_text("TOPSECRET2\n")
    calls = [
        {"name": "read_file", "arguments": {"path": "x.secret"}},
        {"name": "read_file", "arguments": {"path": "private/p.txt"}},
        {"name": "grep", "arguments": {"pattern": "TOPSECRET"}},
        {"name": "run_command", "arguments": {"command": "cat x.secret private/p.txt"}},
    ]
    with RawServer([a], audit_dir, "--policy", "auto-approve") as server:
        server.initialize(capabilities={"roots": {"listChanged": True}})
        answer_roots(server, a / "sub")
        answers = [server.request("tools/call", call) for call in calls]
        assert server.close() == 0
    shown = json.dumps(answers)
    assert "TOPSECRET" not in shown, shown
    assert all(answer["result"]["isError"] for answer in answers), shown
