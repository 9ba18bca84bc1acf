"""Attacks on the worker's start-up, on the toolkit process, and on the sandbox's own lifetime.

Each test performs the attack and checks its effect where it would show: a
marker file outside the root, the toolkit's own limits and priority, /proc
for a process that should be gone, the secret's bytes in an error result.
"""

from __future__ import annotations

import asyncio
import os
import resource
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import charset_normalizer
import pyseccomp
import pytest

from tinyagent_fs.errors import ErrorCode, ToolError
from tinyagent_fs.policy import SandboxPolicy
from tinyagent_fs.providers.linux import LinuxSandboxProvider

from ..sandbox_support import (
    SECRET,
    Sandbox,
    namespace_pids,
    namespace_pids_of,
    open_sandbox,
    require_sandbox,
    served_pid,
    served_pid_of,
    worker_pids,
)

pytestmark = require_sandbox()
DEPENDENCIES = (pyseccomp, charset_normalizer)
"""Imported here so the toolkit resolves them from the real install, as an application would."""


@pytest.fixture
async def sandbox(tmp_path: Path) -> AsyncIterator[Sandbox]:
    async for opened in open_sandbox(tmp_path):
        yield opened


def _dead(pid: int) -> bool:
    """Gone, or a zombie waiting for a parent outside the sandbox (init) to reap it."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def _planted_code(marker: Path) -> str:
    return f"open({str(marker)!r}, 'w').write('ran')\n"


PLANTS = {
    "pyseccomp.py": "pyseccomp.py",
    "charset_normalizer package": "charset_normalizer/__init__.py",
    "sitecustomize.py": "sitecustomize.py",
    "usercustomize.py": "usercustomize.py",
    ".pth file": "zz-evil.pth",
}


@pytest.mark.parametrize("plant", sorted(PLANTS))
async def test_code_planted_in_the_root_and_cwd_never_runs(
    plant: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    root, cwd = tmp_path / "root", tmp_path / "cwd"
    for where in (root, cwd):
        target = where / PLANTS[plant]
        target.parent.mkdir(parents=True, exist_ok=True)
        code = _planted_code(markers / f"{where.name}-{target.name}")
        target.write_text(f"import os; exec({code!r})\n" if plant == ".pth file" else code)
    monkeypatch.chdir(cwd)
    monkeypatch.syspath_prepend(str(cwd))
    monkeypatch.syspath_prepend(str(root))
    provider = LinuxSandboxProvider(root, SandboxPolicy())
    try:
        result = await provider.call(
            "run_command", command="echo ok", workdir=str(root.resolve()), timeout_s=20
        )
        assert result["stdout"] == "ok\n"
        await provider.close()
        result = await provider.call(
            "run_command", command="echo again", workdir=str(root.resolve()), timeout_s=20
        )
        assert result["stdout"] == "again\n"
    finally:
        await provider.close()
    assert list(markers.iterdir()) == []


async def test_a_dependency_under_a_writable_root_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    site = Path(pyseccomp.__file__).resolve().parent
    provider = LinuxSandboxProvider(root, SandboxPolicy(), writable_roots=[site])
    try:
        with pytest.raises(ToolError) as caught:
            await provider.call("stat_path", path=str(root))
    finally:
        await provider.close()
    assert caught.value.code is ErrorCode.SANDBOX_FAILURE
    assert str(site) in caught.value.message
    assert "refusing to start" in caught.value.message
    assert provider.worker_pid is None


async def test_worker_stderr_log_cannot_be_swapped_for_a_symlink(sandbox: Sandbox) -> None:
    victim = sandbox.outside / "victim.txt"
    victim.write_bytes(b"victim\n")
    names = ("worker-stderr.log", "stderr.log", "worker.log")
    links = " ".join(f"ln -sf {sandbox.secret} $TMPDIR/{name};" for name in names)
    await sandbox.run(links + f" ln -sf {victim} $TMPDIR/append.log")
    call = asyncio.ensure_future(sandbox.run("sleep 5"))
    await asyncio.sleep(0.5)
    pid = sandbox.provider.worker_pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(ToolError) as caught:
        await call
    assert caught.value.code is ErrorCode.SANDBOX_FAILURE
    assert SECRET.decode().strip() not in str(caught.value.details)
    assert (await sandbox.run("echo fresh"))["stdout"] == "fresh\n"
    assert victim.read_bytes() == b"victim\n"
    assert sandbox.secret.read_bytes() == SECRET


async def test_commands_cannot_change_the_toolkits_resource_limits(sandbox: Sandbox) -> None:
    toolkit = os.getpid()
    before = resource.getrlimit(resource.RLIMIT_FSIZE)
    result = await sandbox.run(f"prlimit --pid {toolkit} --fsize=0:0")
    assert result["exit_code"] != 0
    script = (
        "import os, resource\n"
        "try:\n"
        f"    resource.prlimit({toolkit}, resource.RLIMIT_FSIZE, (0, 0))\n"
        "    print('changed')\n"
        "except OSError as exc:\n"
        "    print('refused', exc.errno)\n"
    )
    (sandbox.root / "limit.py").write_text(script)
    result = await sandbox.run(f"{sys.executable} -I limit.py")
    assert result["stdout"].startswith("refused"), result
    assert resource.getrlimit(resource.RLIMIT_FSIZE) == before
    log = sandbox.outside / "audit.log"
    log.write_bytes(b"x" * 10_000)
    assert log.stat().st_size == 10_000
    own = await sandbox.run("ulimit -n 64 && echo ulimit-ok")
    assert "ulimit-ok" in own["stdout"], own


async def test_commands_cannot_renice_or_pin_the_toolkit(sandbox: Sandbox) -> None:
    toolkit = os.getpid()
    nice_before = os.getpriority(os.PRIO_PROCESS, toolkit)
    target = 18 if nice_before == 19 else 19
    affinity_before = os.sched_getaffinity(toolkit)
    result = await sandbox.run(
        f"renice -n {target} -p {toolkit}; renice -n {target} -u root; taskset -p 1 {toolkit}"
    )
    assert result["exit_code"] != 0
    script = (
        "import os\n"
        "for name, call in [\n"
        f"    ('user', lambda: os.setpriority(os.PRIO_USER, 0, {target})),\n"
        f"    ('pgrp', lambda: os.setpriority(os.PRIO_PGRP, 0, {target})),\n"
        f"    ('pid', lambda: os.setpriority(os.PRIO_PROCESS, {toolkit}, {target})),\n"
        f"    ('affinity', lambda: os.sched_setaffinity({toolkit}, {{0}})),\n"
        "]:\n"
        "    try:\n"
        "        call()\n"
        "        print(name, 'changed')\n"
        "    except OSError:\n"
        "        print(name, 'refused')\n"
        "os.setpriority(os.PRIO_PROCESS, 0, 19)\n"
        "print('self', os.getpriority(os.PRIO_PROCESS, 0))\n"
    )
    (sandbox.root / "nice.py").write_text(script)
    result = await sandbox.run(f"{sys.executable} -I nice.py")
    lines = result["stdout"].splitlines()
    assert lines[:4] == ["user refused", "pgrp refused", "pid refused", "affinity refused"], result
    assert lines[4] == "self 19", result
    assert os.getpriority(os.PRIO_PROCESS, toolkit) == nice_before
    assert os.sched_getaffinity(toolkit) == affinity_before


@pytest.mark.parametrize(
    "launch",
    [
        "setsid sleep 300 >/dev/null 2>&1 & echo $!",
        "nohup sleep 300 >/dev/null 2>&1 & echo $!",
        "(setsid sh -c 'sleep 300 & echo $!' >pid.txt &); sleep 0.3; cat pid.txt",
    ],
    ids=["setsid", "nohup", "double-fork"],
)
async def test_processes_a_command_leaves_are_gone_when_the_call_returns(
    sandbox: Sandbox, launch: str
) -> None:
    result = await sandbox.run(launch)
    assert int(result["stdout"].split()[-1]) > 1, result
    alive = namespace_pids(sandbox.provider)
    assert alive == worker_pids(sandbox.provider), f"{alive} outlived the command"


async def test_processes_left_by_a_timed_out_command_are_gone(sandbox: Sandbox) -> None:
    result = await sandbox.run(
        "setsid sleep 300 >/dev/null 2>&1 & echo $! > pid.txt; sleep 60", timeout_s=1
    )
    assert result["timed_out"] is True
    assert int((sandbox.root / "pid.txt").read_text()) > 1
    alive = namespace_pids(sandbox.provider)
    assert alive == worker_pids(sandbox.provider), f"{alive} outlived the command"


async def test_a_killed_worker_leaves_nothing_behind_after_close(sandbox: Sandbox) -> None:
    call = asyncio.ensure_future(
        sandbox.run("setsid sleep 300 >/dev/null 2>&1 & echo $! > pid.txt; sleep 30")
    )
    pid_file = sandbox.root / "pid.txt"
    deadline = time.monotonic() + 10
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    inside = namespace_pids(sandbox.provider)
    assert len(inside) >= 3, "the worker, sleep 30 and the daemon should be running"
    os.kill(sandbox.provider.worker_pid or 0, signal.SIGKILL)
    with pytest.raises(ToolError):
        await call
    await sandbox.provider.close()
    assert all(_dead(pid) for pid in inside)


async def test_a_stopped_worker_fails_fast_and_is_replaced(sandbox: Sandbox) -> None:
    provider = sandbox.provider
    path = str(sandbox.root / "inside.txt")
    assert await provider.call("read_bytes", path=path, max_bytes=100) == b"inside\n"
    outer = provider.worker_pid
    stopped = served_pid(provider)
    os.kill(stopped, signal.SIGSTOP)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticking = asyncio.ensure_future(ticker())
    started = time.monotonic()
    try:
        with pytest.raises(ToolError) as caught:
            await provider.call("read_bytes", path=path, max_bytes=100)
    finally:
        ticking.cancel()
    elapsed = time.monotonic() - started
    assert caught.value.code is ErrorCode.SANDBOX_FAILURE
    assert "stopped" in caught.value.message
    assert elapsed < 5.0
    assert ticks >= elapsed / 0.01 / 4, (ticks, elapsed)
    assert _dead(stopped)
    assert await provider.call("read_bytes", path=path, max_bytes=100) == b"inside\n"
    assert provider.worker_pid not in (None, outer)


TOOLKIT = """\
import asyncio, sys
from pathlib import Path
from tinyagent_fs.policy import SandboxPolicy
from tinyagent_fs.providers.linux import LinuxSandboxProvider

async def main():
    root = Path(sys.argv[1])
    provider = LinuxSandboxProvider(root, SandboxPolicy())
    await provider.call("stat_path", path=str(root))
    print(provider.worker_pid, provider._slot.cgroup.path, flush=True)
    await provider.call("run_command", command=sys.argv[2], workdir=str(root), timeout_s=30)

asyncio.run(main())
"""
"""A toolkit that starts a worker, reports it, runs one command and exits without close()."""


@pytest.mark.parametrize("ending", ["exit", "sigkill"])
async def test_nothing_stays_after_the_toolkit_ends(tmp_path: Path, ending: str) -> None:
    root = tmp_path / "root"
    root.mkdir()
    command = "setsid sleep 300 >/dev/null 2>&1 & echo $! > pid.txt; sleep 2"
    toolkit = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        TOOLKIT,
        str(root),
        command,
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent.parent)},
    )
    assert toolkit.stdout is not None
    worker, cgroup = (await toolkit.stdout.readline()).decode().split()
    pid_file = root / "pid.txt"
    deadline = time.monotonic() + 10
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    inside = namespace_pids_of(served_pid_of(int(worker)))
    assert len(inside) >= 3, "the worker, sleep 2 and the daemon should be running"
    if ending == "sigkill":
        toolkit.kill()
    assert await toolkit.wait() == (-signal.SIGKILL if ending == "sigkill" else 0)
    deadline = time.monotonic() + 10
    gone = [int(worker), *inside]
    while not all(_dead(pid) for pid in gone) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert all(_dead(pid) for pid in gone)
    if ending == "exit":
        assert not Path(cgroup).exists()
    else:
        provider = LinuxSandboxProvider(root, SandboxPolicy())
        await provider.call("run_command", command="true", workdir=str(root), timeout_s=10)
        await provider.close()
        assert not Path(cgroup).exists(), "a dead toolkit's empty cgroup was not cleaned up"


async def test_commands_may_still_tune_themselves(sandbox: Sandbox) -> None:
    result = await sandbox.run(
        "echo base $(nice); nice -n 5 sh -c 'echo nice $(nice)'; ionice -c 3 echo ionice-ok;"
        " taskset -c 0 echo taskset-ok; ulimit -n 100 && echo nofile-ok"
    )
    base = int(result["stdout"].split()[1])
    assert result["stderr"] == "", result
    assert result["stdout"].split("\n")[1:5] == [
        f"nice {min(base + 5, 19)}",
        "ionice-ok",
        "taskset-ok",
        "nofile-ok",
    ], result
