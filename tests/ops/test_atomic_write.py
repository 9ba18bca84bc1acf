"""A write killed at any moment leaves the old file or the new one, never a mix."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

SIZE = 2 * 1024 * 1024

WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from tinyagent_fs import FileTools
    from tinyagent_fs.hooks import AutoApprovePolicy
    from tinyagent_fs.providers import LocalProvider

    async def main():
        # In-process commits: the SIGKILL lands inside the write itself.
        fs = FileTools(sys.argv[1], provider=LocalProvider(), hooks=[AutoApprovePolicy()],
                       audit=False)
        print("ready", flush=True)
        i = 0
        while True:
            fill = "ab"[i % 2]
            result = await fs.write_file("big.txt", fill * {size})
            assert result.ok, result.text
            i += 1

    asyncio.run(main())
    """
).format(size=SIZE)


def test_sigkill_during_writes_never_leaves_a_partial_file(project: Path) -> None:
    target = project / "big.txt"
    target.write_text("o" * SIZE)
    for attempt in range(12):
        child = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(project)], stdout=subprocess.PIPE, text=True
        )
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        time.sleep(0.05 + 0.037 * attempt)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        child.stdout.close()
        data = target.read_bytes()
        assert len(data) == SIZE, f"partial file of {len(data)} bytes after kill {attempt}"
        assert data in (b"a" * SIZE, b"b" * SIZE, b"o" * SIZE)
