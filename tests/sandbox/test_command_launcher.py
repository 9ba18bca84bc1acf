"""The worker's command launcher: commands start from one process that holds their
limits and lock (no Python code between fork and exec), and a command that takes the
launcher down is ended with a coded error, never left running without its limits."""

from __future__ import annotations

from pathlib import Path

import pytest

from tinyagent_fs.errors import ErrorCode, ToolError
from tinyagent_fs.policy import SandboxPolicy
from tinyagent_fs.providers.linux import LinuxSandboxProvider

from ..sandbox_support import require_sandbox

pytestmark = require_sandbox()

LIMITS = "ulimit -H -t; ulimit -H -f"


async def _command(provider: LinuxSandboxProvider, command: str, timeout_s: float = 10) -> dict:
    return await provider.call(
        "run_command", command=command, workdir=str(provider.root), timeout_s=timeout_s
    )


async def _provider(tmp_path: Path) -> LinuxSandboxProvider:
    root = tmp_path / "root"
    root.mkdir()
    policy = SandboxPolicy(max_command_cpu_s=50, max_command_file_bytes=1024 * 1024)
    provider = LinuxSandboxProvider(root, policy)
    await _command(provider, "true")  # the first may differ in limits (no cgroup yet)
    return provider


async def test_commands_start_from_one_launcher_that_holds_their_limits(tmp_path: Path) -> None:
    provider = await _provider(tmp_path)
    try:
        parents = set()
        for _ in range(3):
            raise_cpu = "ulimit -H -t 10 || echo locked"
            result = await _command(provider, f"echo $PPID; {LIMITS}; {raise_cpu}")
            parent, cpu, blocks, locked = result["stdout"].split()
            parents.add(parent)
            assert (cpu, blocks, locked) == ("51", "1024", "locked"), result
        assert len(parents) == 1 and parents != {"1"}, parents  # not forked from the worker
    finally:
        await provider.close()


@pytest.mark.parametrize("how", ["KILL", "STOP"])
async def test_a_command_that_takes_down_its_launcher_is_ended(tmp_path: Path, how: str) -> None:
    provider = await _provider(tmp_path)
    try:
        with pytest.raises(ToolError) as raised:
            await _command(provider, f"sleep 30 & echo $! > left.pid; kill -{how} $PPID", 2)
        assert raised.value.code is ErrorCode.SANDBOX_FAILURE
        assert raised.value.details["cause"] == "launcher_lost"
        after = await _command(provider, f"kill -0 $(cat left.pid) || echo gone; {LIMITS}")
        assert after["stdout"].split() == ["gone", "51", "1024"], after  # a new launcher
    finally:
        await provider.close()


async def test_a_small_memory_limit_keeps_the_old_path(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    provider = LinuxSandboxProvider(root, SandboxPolicy(max_command_memory_bytes=256 * 1024**2))
    try:
        for _ in range(2):
            result = await _command(provider, "echo $PPID; ulimit -H -v")
            assert result["stdout"].split() == ["1", str(256 * 1024)], result
    finally:
        await provider.close()
