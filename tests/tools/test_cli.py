"""The command line as a user runs it: a real subprocess, JSON out, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tinyagent_fs", *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        cwd=cwd,
        timeout=60,
    )


def test_call_prints_one_json_result_and_exits_zero(project: Path) -> None:
    done = run_cli("call", "read_file", "--root", str(project), "--args", '{"path": "README.md"}')
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert set(result) == {"ok", "text", "data", "error"}
    assert result["ok"] is True and "# Sample" in result["text"]


def test_failed_tool_exits_one_with_the_error(project: Path) -> None:
    done = run_cli("call", "read_file", "--root", str(project), "--args", '{"path": "../x"}')
    assert done.returncode == 1
    assert json.loads(done.stdout)["error"]["code"] == "PATH_OUTSIDE_ROOT"


def test_usage_errors_exit_two(project: Path) -> None:
    assert run_cli("call", "read_file", "--root", str(project), "--args", "{bad").returncode == 2
    assert run_cli("call", "no_such_tool", "--root", str(project)).returncode == 2
    assert run_cli("call", "read_file", "--root", str(project / "missing")).returncode == 2


def test_risk_based_without_terminal_denies_and_says_how_to_allow(project: Path) -> None:
    args = json.dumps({"path": "a.txt", "content": "x"})
    done = run_cli("call", "write_file", "--root", str(project), "--args", args)
    assert done.returncode == 1
    result = json.loads(done.stdout)
    assert result["error"]["code"] == "DENIED_BY_HOOK"
    assert "--policy auto-approve" in result["text"]
    assert not (project / "a.txt").exists()


def test_auto_approve_policy_writes(project: Path) -> None:
    args = json.dumps({"path": "a.txt", "content": "x"})
    done = run_cli(
        "call", "write_file", "--root", str(project), "--args", args, "--policy", "auto-approve"
    )
    assert done.returncode == 0, done.stdout
    assert (project / "a.txt").read_text() == "x"


def test_schemas_command_prints_openai_schemas() -> None:
    done = run_cli("schemas", "--format", "openai")
    schemas = json.loads(done.stdout)
    assert {s["function"]["name"] for s in schemas} >= {"read_file", "grep", "edit_file"}


def test_audit_tail_shows_the_calls_just_made(project: Path) -> None:
    run_cli("call", "read_file", "--root", str(project), "--args", '{"path": "README.md"}')
    run_cli("call", "read_file", "--root", str(project), "--args", '{"path": ".env"}')
    done = run_cli("audit", "tail", "-n", "2")
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 2
    assert "read_file" in lines[0] and "ok" in lines[0]
    assert "DENIED_PATTERN" in lines[1] and "SECURITY" in lines[1]
