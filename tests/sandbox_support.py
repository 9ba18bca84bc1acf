"""Shared by the sandbox tests: a root, a place outside it, and a loud failure where
the machine cannot run the kernel sandbox (skip only when asked to)."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tinyagent_fs.policy import SandboxPolicy
from tinyagent_fs.providers.linux import LinuxSandboxProvider
from tinyagent_fs.result import ToolResult
from tinyagent_fs.tools.facade import FileTools

ALLOW_NO_SANDBOX = "TINYAGENT_FS_ALLOW_NO_SANDBOX"
SECRET = b"TOP-SECRET-OUTSIDE-THE-ROOT\n"
OPEN_FDS_PROBE = """\
import os


def is_open(fd):
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


print([fd for fd in range(3, 256) if is_open(fd)])
"""
"""A script printing the descriptors above stderr it was started with."""


def require_sandbox() -> pytest.MarkDecorator:
    """Mark tests that need the kernel sandbox (``-m "not sandbox"`` leaves them out);
    where it cannot run they fail saying why, or skip if asked (see conftest)."""
    return pytest.mark.sandbox


def check_sandbox() -> None:
    """Fail (or skip, when allowed) a test that needs the sandbox this machine lacks."""
    supported, reason = LinuxSandboxProvider.available()
    if supported:
        return
    if os.environ.get(ALLOW_NO_SANDBOX) == "1":
        pytest.skip(reason)
    pytest.fail(
        f"the kernel sandbox cannot run on this machine: {reason}. "
        f"Set {ALLOW_NO_SANDBOX}=1 to skip these tests instead.",
        pytrace=False,
    )


@dataclass
class Sandbox:
    root: Path
    outside: Path
    provider: LinuxSandboxProvider

    @property
    def secret(self) -> Path:
        return self.outside / "secret.txt"

    async def run(self, command: str, timeout_s: float = 20.0) -> dict:
        return await self.provider.call(
            "run_command", command=command, workdir=str(self.root), timeout_s=timeout_s
        )


async def open_sandbox(tmp_path: Path, **provider_kwargs: object) -> AsyncIterator[Sandbox]:
    """A root with a file, an outside directory with a secret, and a provider on the root."""
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    root.mkdir(exist_ok=True)
    outside.mkdir(exist_ok=True)
    (root / "inside.txt").write_bytes(b"inside\n")
    (outside / "secret.txt").write_bytes(SECRET)
    provider = LinuxSandboxProvider(root, SandboxPolicy(), **provider_kwargs)  # type: ignore[arg-type]
    try:
        yield Sandbox(root.resolve(), outside.resolve(), provider)
    finally:
        await provider.close()


def served_pid(provider: LinuxSandboxProvider) -> int:
    """The host pid of the process serving requests: PID 1 of the worker's PID namespace.

    ``provider.worker_pid`` is the process the provider started; it only waits
    for this child, which it forked after entering the namespaces.
    """
    outer = provider.worker_pid
    assert outer is not None, "the worker is not running"
    return served_pid_of(outer)


def served_pid_of(outer: int) -> int:
    """The serving child of the worker process ``outer`` (host pid)."""
    children = [pid for pid in _host_pids() if _parent_of(pid) == outer]
    assert len(children) == 1, children
    return children[0]


def worker_pids(provider: LinuxSandboxProvider) -> list[int]:
    """Host pids of the worker's own processes: the served one and its command launcher
    (a fork of it: same command line, its child) once a command was run."""
    served = served_pid(provider)
    cmdline = Path(f"/proc/{served}/cmdline").read_bytes()
    launchers = []
    for pid in _host_pids():
        if _parent_of(pid) == served and is_running(pid):
            with contextlib.suppress(OSError):
                if Path(f"/proc/{pid}/cmdline").read_bytes() == cmdline:
                    launchers.append(pid)
    return sorted([served, *launchers])


def namespace_pids(provider: LinuxSandboxProvider) -> list[int]:
    """Host pids of every live process in the worker's PID namespace, the worker included."""
    return namespace_pids_of(served_pid(provider))


def namespace_pids_of(served: int) -> list[int]:
    """Host pids of every live process in the PID namespace of the host pid ``served``."""
    namespace = os.readlink(f"/proc/{served}/ns/pid")
    found = []
    for pid in _host_pids():
        try:
            same = os.readlink(f"/proc/{pid}/ns/pid") == namespace
        except OSError:
            continue
        if same and is_running(pid):
            found.append(pid)
    return found


def is_running(pid: int) -> bool:
    """Alive and not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


def _host_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _parent_of(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """git run by the person, outside the sandbox: what a planted hook or config would hijack."""
    return subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=a", "-c", "user.email=a@b", *args],
        capture_output=True,
        text=True,
        check=False,
    )


async def run_ok(tools: FileTools, command: str) -> ToolResult:
    """A command the agent runs through the file tools, which must succeed."""
    result = await tools.run_command(command)
    assert result.ok, result.text
    assert result.data["exit_code"] == 0, result.data
    return result


def quarantined(result: ToolResult) -> list[str]:
    """The paths a command's result says were moved aside."""
    return [entry["path"] for entry in result.data["protected_paths_quarantined"]]
