"""run_command through FileTools: reviewed as dangerous, confined on Linux, audited."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tinyagent_fs import FileTools, SandboxPolicy
from tinyagent_fs.audit.log import AuditLog
from tinyagent_fs.hooks import AutoApprovePolicy, Decision, RiskBasedPolicy

from ..conftest import audit_events, make_provider


@pytest.fixture
async def fs(project: Path, provider_name: str, audit: AuditLog) -> AsyncIterator[FileTools]:
    """The shared toolkit, opted in to unconfined commands where there is no kernel sandbox
    (LocalProvider refuses run_command otherwise: test_escape_local_provider.py)."""
    tools = FileTools(
        project,
        SandboxPolicy(allow_unconfined_commands=provider_name == "local"),
        provider=make_provider(provider_name, project),
        hooks=[AutoApprovePolicy()],
        audit=audit,
    )
    yield tools
    await tools.close()


async def test_command_output_exit_code_and_duration(fs: FileTools) -> None:
    result = await fs.run_command("echo out; echo err >&2; exit 3")
    assert result.ok, result.text
    assert result.data["exit_code"] == 3
    assert result.data["stdout"] == "out\n" and result.data["stderr"] == "err\n"
    assert result.text.startswith("exit code 3 after")


async def test_command_runs_in_workdir_inside_root(fs: FileTools, project: Path) -> None:
    result = await fs.run_command("pwd", workdir="src")
    assert result.data["stdout"].strip() == str(project.resolve() / "src")
    outside = await fs.run_command("pwd", workdir="..")
    assert outside.error.code == "PATH_OUTSIDE_ROOT"


async def test_command_timeout_kills_it(fs: FileTools) -> None:
    result = await fs.run_command("sleep 30", timeout_s=1)
    assert result.data["timed_out"] is True
    assert "timed out" in result.text


async def test_long_output_is_capped_with_a_marker(fs: FileTools) -> None:
    result = await fs.run_command("seq 1 5000")
    assert result.data["stdout_truncated"] is True
    assert len(result.data["stdout"]) < 9000
    assert "5000" in result.data["stdout"]  # the end is kept


async def test_risk_based_policy_always_asks_for_commands(project: Path, audit) -> None:
    asked = []

    class Person:
        def before_tool_execution(self, call):
            asked.append(call.tool)
            return Decision.deny("no shell today", "person")

    policy = RiskBasedPolicy(approver=Person())
    fs = FileTools(project, hooks=[policy], audit=audit)
    result = await fs.run_command("touch made-by-command")
    assert result.error.code == "DENIED_BY_HOOK" and "no shell today" in result.text
    assert asked == ["run_command"]
    assert not (project / "made-by-command").exists()
    assert audit_events(audit)[-1]["decision"] == "deny"
    await fs.close()


async def test_sandboxed_command_cannot_write_outside_or_reach_network(
    project: Path, tmp_path: Path, audit
) -> None:
    fs = FileTools(project, hooks=[AutoApprovePolicy()], audit=audit)
    assert fs.provider.kernel_enforced
    outside = tmp_path / "outside.txt"
    result = await fs.run_command(f"echo escaped > {outside}")
    assert result.data["exit_code"] != 0
    assert not outside.exists()
    net = await fs.run_command(
        "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", 9), 2)'"
    )
    assert net.data["exit_code"] != 0
    assert "Operation not permitted" in net.data["stderr"] or "Permission" in net.data["stderr"]
    await fs.close()


@pytest.mark.parametrize("workdir", ["README.md", "missing", "docs/guide.md/x"])
async def test_a_workdir_that_is_not_a_folder_runs_nothing(
    fs: FileTools, project: Path, workdir: str
) -> None:
    result = await fs.run_command("touch ran", workdir=workdir)
    assert result.error.code == "NOT_A_DIRECTORY", result.text
    assert result.error.message == f"workdir {workdir} is not a directory"
    assert not list(project.rglob("ran"))
