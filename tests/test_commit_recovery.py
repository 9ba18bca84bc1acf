"""A multi-file commit killed mid-way: every file old or new, and after recovery
the tree is consistent (the interrupted change entirely undone) with no leftovers."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tinyagent_fs import FileTools, SandboxPolicy
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.providers import LocalProvider
from tinyagent_fs.providers.linux import LinuxSandboxProvider

FILES = 40

MOVER = textwrap.dedent(
    """
    import asyncio, sys
    from tinyagent_fs import FileTools
    from tinyagent_fs.hooks import AutoApprovePolicy
    from tinyagent_fs.providers import LocalProvider

    async def main():
        # In-process commits: the SIGKILL lands inside the commit itself.
        fs = FileTools(sys.argv[1], provider=LocalProvider(), hooks=[AutoApprovePolicy()],
                       audit=False)
        print("ready", flush=True)
        while True:
            for src, dst in (("a", "b"), ("b", "a")):
                result = await fs.move_path(src, dst)
                assert result.ok, result.text

    asyncio.run(main())
    """
)


def content(i: int) -> bytes:
    return (f"file {i}\n" * 4000).encode()


def where_files_are(root: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            found.setdefault(path.name, []).append(path.parent.name)
    return found


def test_killed_multi_file_commit_recovers_to_a_consistent_tree(project: Path) -> None:
    (project / "a").mkdir()
    for i in range(FILES):
        (project / "a" / f"f{i:02}.txt").write_bytes(content(i))
    recovered = 0
    for attempt in range(8):
        child = subprocess.Popen(
            [sys.executable, "-c", MOVER, str(project)], stdout=subprocess.PIPE, text=True
        )
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        time.sleep(0.05 + 0.031 * attempt)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        child.stdout.close()
        for i in range(FILES):  # before recovery: each file whole, wherever it is
            for folder in ("a", "b"):
                path = project / folder / f"f{i:02}.txt"
                if path.exists():
                    assert path.read_bytes() == content(i)
        recovered += asyncio.run(_recover(project))
        places = where_files_are(project)
        names = {f"f{i:02}.txt" for i in range(FILES)}
        assert set(places) == names | {"README.md", "core.py", "guide.md", "__init__.py", ".env"}, (
            f"leftovers after kill {attempt}: {places}"
        )
        folders = {tuple(places[name]) for name in names}
        assert folders in ({("a",)}, {("b",)}), f"torn tree after kill {attempt}: {folders}"
        for name in names:
            folder = places[name][0]
            assert (project / folder / name).read_bytes() == content(int(name[1:3]))
    assert recovered > 0, "no kill landed inside a commit: the test proved nothing"


async def test_worker_killed_mid_commit_leaves_a_consistent_tree(project: Path) -> None:
    (project / "a").mkdir()
    for i in range(FILES):
        (project / "a" / f"f{i:02}.txt").write_bytes(content(i))
    provider = LinuxSandboxProvider(project.resolve(), SandboxPolicy())
    fs = FileTools(project, provider=provider, hooks=[AutoApprovePolicy()], audit=False)
    outcomes = []
    for attempt in range(6):
        src, dst = ("a", "b") if not (project / "b").exists() else ("b", "a")
        task = asyncio.create_task(fs.move_path(src, dst))
        await asyncio.sleep(0.01 + 0.015 * attempt)
        if provider.worker_pid is not None:
            os.kill(provider.worker_pid, signal.SIGKILL)
        result = await task
        outcomes.append(result.ok or result.error.code)
        places = where_files_are(project)
        folders = {tuple(places[f"f{i:02}.txt"]) for i in range(FILES)}
        assert folders in ({("a",)}, {("b",)}), f"torn tree after kill {attempt}: {folders}"
        assert not [p for p in project.rglob("*") if ".tafs-" in p.name]
    await fs.close()
    assert "SANDBOX_FAILURE" in outcomes, f"no kill landed inside a call: {outcomes}"


async def _recover(project: Path) -> int:
    fs = FileTools(project, provider=LocalProvider(), hooks=[AutoApprovePolicy()], audit=False)
    assert (await fs.file_exists("a")).ok  # the first call runs recovery
    await fs.close()
    return len(fs.recovered_changes)
