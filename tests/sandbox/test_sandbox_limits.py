"""Per-command limits in the sandbox: processes, CPU time, file size, memory.

Each test runs the command that the limit exists for (a fork bomb, a busy
loop, a large write, a large allocation) and checks both that it was stopped
and that the result says which limit stopped it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from tinyagent_fs.policy import SandboxPolicy
from tinyagent_fs.providers.linux import LinuxSandboxProvider

from ..sandbox_support import require_sandbox

pytestmark = require_sandbox()


async def _limited(tmp_path: Path, **policy: int) -> LinuxSandboxProvider:
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    return LinuxSandboxProvider(root, SandboxPolicy(**policy))  # type: ignore[arg-type]


async def _command(provider: LinuxSandboxProvider, command: str, timeout_s: float) -> dict:
    return await provider.call(
        "run_command", command=command, workdir=str(provider.root), timeout_s=timeout_s
    )


async def test_a_fork_bomb_ends_and_the_toolkit_stays_responsive(tmp_path: Path) -> None:
    provider = await _limited(tmp_path, max_command_processes=64)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.05)
            ticks += 1

    ticking = asyncio.ensure_future(ticker())
    try:
        started = time.monotonic()
        await _command(provider, "true", 10)
        if provider._slot.cgroup is None and os.getuid() == 0:
            pytest.skip("no writable pids cgroup, and RLIMIT_NPROC does not bind root")
        result = await _command(provider, "bomb() { bomb | bomb & }; bomb; sleep 2", 4)
        elapsed = time.monotonic() - started
        assert result["limit_exceeded"] == "processes", result
        assert "processes limit (64)" in result["limit_message"]
        assert ticks >= elapsed / 0.05 / 4, (ticks, elapsed)
        assert (await _command(provider, "echo alive", 10))["stdout"] == "alive\n"
    finally:
        ticking.cancel()
        await provider.close()


async def test_cpu_time_limit_stops_a_busy_command(tmp_path: Path) -> None:
    provider = await _limited(tmp_path, max_command_cpu_s=1)
    try:
        result = await _command(provider, f"{sys.executable} -c 'while True: pass'", 30)
    finally:
        await provider.close()
    assert result["timed_out"] is False
    assert result["limit_exceeded"] == "cpu_time", result
    assert result["exit_code"] == 128 + signal.SIGXCPU
    assert "cpu_time limit" in result["limit_message"]


async def test_file_size_limit_stops_a_large_write(tmp_path: Path) -> None:
    provider = await _limited(tmp_path, max_command_file_bytes=4096)
    try:
        result = await _command(provider, "head -c 100000 /dev/zero > big.bin", 20)
    finally:
        await provider.close()
    assert result["limit_exceeded"] == "file_size", result
    assert (provider.root / "big.bin").stat().st_size <= 4096


async def test_memory_limit_refuses_a_large_allocation(tmp_path: Path) -> None:
    provider = await _limited(tmp_path, max_command_memory_bytes=512 * 1024**2)
    try:
        result = await _command(
            provider, f"{sys.executable} -c 'x = bytearray(2 * 1024**3); print(len(x))'", 20
        )
        fits = await _command(provider, f"{sys.executable} -c 'print(len(bytearray(10**6)))'", 20)
    finally:
        await provider.close()
    assert result["exit_code"] != 0 and "MemoryError" in result["stderr"], result
    assert result["limit_exceeded"] == "memory"
    assert "memory limit" in result["limit_message"]
    assert "limit_exceeded" not in fits
    assert fits["stdout"] == "1000000\n"


async def test_a_command_cannot_set_its_limits_again(tmp_path: Path) -> None:
    provider = await _limited(tmp_path, max_command_cpu_s=50, max_command_file_bytes=10**6)
    try:
        result = await _command(
            provider,
            "ulimit -St 40 || echo cpu-refused; ulimit -Sf 100 || echo fsize-refused;"
            " ulimit -n 64 && echo nofile-ok; ulimit -Ht",
            20,
        )
    finally:
        await provider.close()
    assert result["stdout"].split() == ["cpu-refused", "fsize-refused", "nofile-ok", "51"], result
