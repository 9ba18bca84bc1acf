"""Nothing a command starts outlives its call: not the toolkit's death, nor a cancelled call.

Each test starts a command that would create a marker file a few seconds later,
ends its caller (SIGKILL or SIGTERM to the toolkit process, or a cancelled
call), then checks at once that no process of the worker's PID namespace is
left, and later that the marker never appeared.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import signal
import sys
from pathlib import Path

import pytest

from tinyagent_fs.policy import SandboxPolicy
from tinyagent_fs.providers.linux import LinuxSandboxProvider
from tinyagent_fs.tools.facade import FileTools

from ..lifetime_support import (
    COMMAND,
    assert_gone_at_once,
    assert_marker_never_appears,
    wait_for,
)
from ..sandbox_support import (
    git,
    is_running,
    namespace_pids,
    namespace_pids_of,
    require_sandbox,
    served_pid_of,
)

pytestmark = require_sandbox()
REPO = Path(__file__).resolve().parent.parent.parent

TOOLKIT = """\
import asyncio, sys
from pathlib import Path
from tinyagent_fs.policy import SandboxPolicy
from tinyagent_fs.providers.linux import LinuxSandboxProvider
from tinyagent_fs.tools.facade import FileTools

async def main():
    root = Path(sys.argv[1])
    provider = LinuxSandboxProvider(root, SandboxPolicy())
    tools = FileTools(root, provider=provider, audit=False, journal=False)
    await provider.call("stat_path", path=str(root))
    print(provider.worker_pid, flush=True)
    await tools.run_command(sys.argv[2], timeout_s=30)

asyncio.run(main())
"""
"""A toolkit with the Linux sandbox that runs one command through FileTools."""


async def start_toolkit(root: Path, command: str) -> tuple[asyncio.subprocess.Process, int]:
    """The toolkit process running ``command`` in ``root``, and its worker's pid."""
    toolkit = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        TOOLKIT,
        str(root),
        command,
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert toolkit.stdout is not None
    return toolkit, int((await toolkit.stdout.readline()).decode())


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill", "sigterm"])
async def test_a_command_dies_with_the_toolkit(tmp_path: Path, signum: int) -> None:
    root = tmp_path / "root"
    root.mkdir()
    toolkit, worker = await start_toolkit(root, COMMAND)
    await wait_for(root / "started.txt")
    inside = namespace_pids_of(served_pid_of(worker))
    assert len(inside) >= 3, "the worker, the shell and sleep should be running"
    toolkit.send_signal(signum)
    assert await toolkit.wait() == -signum
    await assert_gone_at_once([worker, *inside])
    await assert_marker_never_appears(root)


async def test_a_cancelled_command_is_killed_before_the_cancel_returns(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    provider = LinuxSandboxProvider(root, SandboxPolicy())
    tools = FileTools(root, provider=provider, audit=False, journal=False)
    try:
        call = asyncio.ensure_future(tools.run_command(COMMAND, timeout_s=30))
        await wait_for(root / "started.txt")
        inside = namespace_pids(provider)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert not [pid for pid in inside if is_running(pid)], "cancel returned, command alive"
        await assert_marker_never_appears(root)
        after = await tools.run_command("echo next")
        assert after.ok and "next" in after.text, after.text
    finally:
        await provider.close()


async def test_closing_the_provider_kills_a_running_command(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    provider = LinuxSandboxProvider(root, SandboxPolicy())
    tools = FileTools(root, provider=provider, audit=False, journal=False)
    call = asyncio.ensure_future(tools.run_command(COMMAND, timeout_s=30))
    await wait_for(root / "started.txt")
    inside = namespace_pids(provider)
    await provider.close()
    assert not [pid for pid in inside if is_running(pid)], "close returned, command alive"
    result = await call
    assert not result.ok and result.error is not None
    assert result.error.code == "SANDBOX_FAILURE", result.text
    await assert_marker_never_appears(root)


PLANT_AND_WAIT = (
    "git init -q . && printf '#!/bin/sh\\ntouch \"$0.ran\"\\n' > .git/hooks/pre-commit"
    " && chmod +x .git/hooks/pre-commit && echo started > started.txt && sleep 30"
)
"""A command that plants a hook, then keeps running until its toolkit is killed."""


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill", "sigterm"])
async def test_a_hook_planted_before_the_toolkit_died_is_quarantined(
    tmp_path: Path, signum: int
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    toolkit, _ = await start_toolkit(root, PLANT_AND_WAIT)
    await wait_for(root / "started.txt")
    assert (root / ".git/hooks/pre-commit").exists()
    toolkit.send_signal(signum)
    assert await toolkit.wait() == -signum
    hooks = root / ".git" / "hooks"
    deadline = asyncio.get_running_loop().time() + 15
    while (hooks / "pre-commit").exists():
        assert asyncio.get_running_loop().time() < deadline, "the planted hook survived"
        await asyncio.sleep(0.05)
    aside = hooks / "pre-commit.quarantined"
    assert aside.stat().st_mode & 0o777 == 0o600
    git(
        root,
        "-c",
        "user.name=p",
        "-c",
        "user.email=p@x",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "x",
    )
    assert not list(hooks.glob("*.ran")), "the person's git ran the planted hook"


async def test_the_guardian_is_out_of_the_commands_reach_and_replaced_when_killed(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    provider = LinuxSandboxProvider(root, SandboxPolicy())
    tools = FileTools(root, provider=provider, audit=False, journal=False)
    try:
        assert (await tools.run_command("true")).ok
        guardian = provider._guardian._process
        assert guardian is not None and guardian.poll() is None
        pipe = os.fstat(provider._guardian._pipe)  # type: ignore[arg-type]
        worker = provider.worker_pid
        reachable = []
        for pid in [worker, *namespace_pids(provider)]:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    info = fd.stat()
                    reachable.append((info.st_dev, info.st_ino))
        assert (pipe.st_dev, pipe.st_ino) not in reachable, "the worker holds the guardian's pipe"
        guardian.kill()
        guardian.wait()
        assert (await tools.run_command("true")).ok
        again = provider._guardian._process
        assert again is not None and again is not guardian and again.poll() is None
    finally:
        await provider.close()
    assert again.poll() is not None, "the guardian outlived the provider"


UNSEARCHABLE = """\
import asyncio, json, os, sys
from pathlib import Path
from tinyagent_fs.policy import SandboxPolicy
from tinyagent_fs.providers.linux import LinuxSandboxProvider
from tinyagent_fs.tools.facade import FileTools

async def main():
    root = Path(sys.argv[1])
    provider = LinuxSandboxProvider(root, SandboxPolicy())
    tools = FileTools(root, provider=provider, audit=False, journal=False)
    outcomes = []
    try:
        planted = await tools.run_command(
            "mkdir -p n/.git/hooks d/x && printf '#!/bin/sh\\\\n' > n/.git/hooks/pre-commit"
            " && chmod +x n/.git/hooks/pre-commit && chmod 0600 d"
        )
        outcomes.append(planted.error.code if planted.error else "ok")
        os.chmod(root / "d", 0o700)  # the person follows the hint
        after = await tools.run_command("true")
        outcomes.append(after.error.code if after.error else "ok")
    finally:
        await provider.close()
    print(json.dumps(outcomes))

asyncio.run(main())
"""
"""A toolkit that runs as a user who cannot search others' 0600 folders (root without
its DAC capabilities): the after-walk fails on a folder the command made unsearchable."""


async def test_a_hook_planted_beside_an_unsearchable_folder_is_quarantined_once_it_is_fixed(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    done = await asyncio.create_subprocess_exec(
        "capsh",
        "--drop=cap_dac_override,cap_dac_read_search",
        "--",
        "-c",
        f"exec {shlex.quote(sys.executable)} -c {shlex.quote(UNSEARCHABLE)} {root}",
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    out, _ = await done.communicate()
    assert json.loads(out.decode().strip().splitlines()[-1]) == ["SANDBOX_FAILURE", "ok"]
    hooks = root / "n" / ".git" / "hooks"
    assert not (hooks / "pre-commit").exists(), "the planted hook was taken for the person's"
    assert (hooks / "pre-commit.quarantined").exists()
