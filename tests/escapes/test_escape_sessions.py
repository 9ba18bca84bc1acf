"""An interactive session outlives neither its toolkit nor its walls.

A toolkit process starts a session, then is killed (SIGKILL, SIGTERM): every
process of the session is gone at once, and a hook the session planted is
quarantined by the guardian as it would be after a command.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from ..lifetime_support import assert_gone_at_once, wait_for
from ..sandbox_support import namespace_pids_of, require_sandbox, served_pid_of

pytestmark = require_sandbox()
REPO = Path(__file__).resolve().parent.parent.parent

TOOLKIT = """\
import asyncio, sys
from pathlib import Path
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.policy import SandboxPolicy
from tinyagent_fs.providers.linux import LinuxSandboxProvider
from tinyagent_fs.tools.facade import FileTools

async def main():
    root = Path(sys.argv[1])
    provider = LinuxSandboxProvider(root, SandboxPolicy())
    tools = FileTools(root, provider=provider, hooks=[AutoApprovePolicy()], audit=False,
                      journal=False)
    result = await tools.exec_command(sys.argv[2], yield_time_ms=100)
    assert result.ok, result.text
    while sys.argv[3:] and not (root / "started.txt").exists():
        await asyncio.sleep(0.02)
    for command in sys.argv[3:]:
        ran = await tools.run_command(command)
        assert ran.ok, ran.text
    print(provider.worker_pid, flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""


async def start_toolkit(
    root: Path, command: str, *then: str
) -> tuple[asyncio.subprocess.Process, int]:
    """A toolkit that starts the session ``command``, then runs the commands ``then``."""
    toolkit = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        TOOLKIT,
        str(root),
        command,
        *then,
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert toolkit.stdout is not None
    return toolkit, int((await toolkit.stdout.readline()).decode())


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill", "sigterm"])
async def test_a_session_dies_with_the_toolkit(tmp_path: Path, signum: int) -> None:
    root = tmp_path / "root"
    root.mkdir()
    toolkit, worker = await start_toolkit(root, "echo up > started.txt; sleep 300")
    await wait_for(root / "started.txt")
    inside = namespace_pids_of(served_pid_of(worker))
    assert len(inside) >= 3, "the worker, the session's host and sleep (bash execs it)"
    toolkit.send_signal(signum)
    assert await toolkit.wait() == -signum
    await assert_gone_at_once([worker, *inside])


PLANT_AND_WAIT = (
    "git init -q . && printf '#!/bin/sh\\ntouch \"$0.ran\"\\n' > .git/hooks/pre-commit"
    " && chmod +x .git/hooks/pre-commit && echo started > started.txt && sleep 300"
)


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill", "sigterm"])
@pytest.mark.parametrize("then", [(), ("echo a command after the session started",)])
async def test_a_hook_planted_by_a_session_is_quarantined_when_the_toolkit_dies(
    tmp_path: Path, signum: int, then: tuple[str, ...]
) -> None:
    """With a command after the session planted it, that command's walk finds a new
    repository: the worker is replaced, which ends the session, and its after-walk
    quarantines the hook before the command runs."""
    root = tmp_path / "root"
    root.mkdir()
    toolkit, _ = await start_toolkit(root, PLANT_AND_WAIT, *then)
    await wait_for(root / "started.txt")
    hook = root / ".git/hooks/pre-commit"
    assert hook.exists() != bool(then)
    toolkit.send_signal(signum)
    assert await toolkit.wait() == -signum
    deadline = asyncio.get_running_loop().time() + 15
    while hook.exists():
        assert asyncio.get_running_loop().time() < deadline, "the planted hook survived"
        await asyncio.sleep(0.05)
    assert (root / ".git/hooks/pre-commit.quarantined").stat().st_mode & 0o777 == 0o600
