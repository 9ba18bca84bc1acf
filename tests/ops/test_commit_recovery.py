"""A multi-file commit killed mid-way: every file old or new, and after recovery
the tree is consistent with no leftovers: the interrupted change entirely undone,
or, when it was killed while dropping its backups (every file already new),
entirely done."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from tinyagent_fs import FileTools, SandboxPolicy
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.providers import LocalProvider
from tinyagent_fs.providers.linux import LinuxSandboxProvider

FILES = 40
EVERY_NTH_STEP = 9

MOVER = textwrap.dedent(
    """
    import asyncio, os, sys, time
    from tinyagent_fs import FileTools
    from tinyagent_fs.hooks import AutoApprovePolicy
    from tinyagent_fs.providers import LocalProvider

    root, stop_at = os.path.realpath(sys.argv[1]), int(sys.argv[2])
    steps = 0

    def counted(name):
        real = getattr(os, name)

        def step(*args, **kwargs):
            global steps
            # A link's source is only read (the undo journal links old files out of
            # the project): what a call changes is its destination. A path may be
            # relative to a folder's descriptor (dir_fd, src_dir_fd, dst_dir_fd).
            folders = (kwargs.get("src_dir_fd", kwargs.get("dir_fd")), kwargs.get("dst_dir_fd"))
            named = list(zip(args[:2], folders))
            changed = named[1:2] if name == "link" else named
            inside = (
                os.path.realpath(os.path.join(
                    "" if fd is None else f"/proc/self/fd/{fd}", os.path.dirname(str(arg))
                ))
                for arg, fd in changed
            )
            if any(folder == root or folder.startswith(root + "/") for folder in inside):
                steps += 1
                if steps == stop_at:  # tell the parent where we are, then wait for the kill
                    print("step", steps, name, args[0], flush=True)
                    time.sleep(600)
            return real(*args, **kwargs)

        return step

    for name in ("replace", "rename", "link", "unlink", "mkdir", "rmdir"):
        setattr(os, name, counted(name))

    async def main():
        # In-process commits, so the kill lands inside the commit itself.
        fs = FileTools(root, provider=LocalProvider(), hooks=[AutoApprovePolicy()], audit=False)
        result = await fs.move_path("a", "b")
        assert result.ok, result.text
        print("done", steps, flush=True)

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


def fresh_tree(project: Path) -> None:
    for folder in ("a", "b"):
        shutil.rmtree(project / folder, ignore_errors=True)
    (project / "a").mkdir()
    for i in range(FILES):
        (project / "a" / f"f{i:02}.txt").write_bytes(content(i))


def run_mover(project: Path, stop_at: int) -> str:
    """The mover's first line: where it stopped (then it is killed there), or "done N"."""
    child = subprocess.Popen(
        [sys.executable, "-c", MOVER, str(project), str(stop_at)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    line = child.stdout.readline().strip()
    if line.startswith("step"):
        os.kill(child.pid, signal.SIGKILL)
    assert child.wait(timeout=60) in (0, -signal.SIGKILL), line
    child.stdout.close()
    return line


def test_killed_multi_file_commit_recovers_to_a_consistent_tree(project: Path) -> None:
    """Kill the commit at chosen filesystem steps (the child proves it got there);
    each time recovery must find the interrupted change and undo it whole."""
    fresh_tree(project)
    finished = run_mover(project, stop_at=10**9)
    assert finished.startswith("done"), finished
    total = int(finished.split()[1])
    assert total >= FILES, f"a {FILES}-file move took only {total} filesystem steps"
    stops = sorted({1, 2, total // 2, total - 1, total, *range(3, total, EVERY_NTH_STEP)})
    names = {f"f{i:02}.txt" for i in range(FILES)}
    for stop_at in stops:
        fresh_tree(project)
        shutil.rmtree(os.environ["TINYAGENT_FS_JOURNAL_DIR"], ignore_errors=True)
        where = run_mover(project, stop_at)
        assert where.startswith(f"step {stop_at} "), f"kill at {stop_at} missed: {where!r}"
        for i in range(FILES):  # before recovery: each file whole, wherever it is
            for folder in ("a", "b"):
                path = project / folder / f"f{i:02}.txt"
                if path.exists():
                    assert path.read_bytes() == content(i), f"torn file after {where}"
        recovered = asyncio.run(_recover(project))
        assert recovered == 1, f"recovery did not find the commit killed at {where}"
        places = where_files_are(project)
        assert set(places) == names | {"README.md", "core.py", "guide.md", "__init__.py", ".env"}, (
            f"leftovers after the kill at {where}: {places}"
        )
        _, _, call, path = where.split()
        landed = call in ("unlink", "rmdir") and path.endswith(".bak")
        folder = "b" if landed else "a"
        assert {tuple(places[name]) for name in names} == {(folder,)}, f"torn after {where}"
        for name in names:
            assert (project / folder / name).read_bytes() == content(int(name[1:3]))
        if landed:  # completed, so recorded as committed: undo takes it back
            assert asyncio.run(_undo(project)), (
                f"the change completed after {where} is not undoable"
            )
            assert {tuple(where_files_are(project)[name]) for name in names} == {("a",)}


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


async def _undo(project: Path) -> bool:
    fs = FileTools(project, provider=LocalProvider(), hooks=[AutoApprovePolicy()], audit=False)
    result = await fs.undo()
    await fs.close()
    return result.ok


async def _recover(project: Path) -> int:
    fs = FileTools(project, provider=LocalProvider(), hooks=[AutoApprovePolicy()], audit=False)
    assert (await fs.file_exists("a")).ok  # the first call runs recovery
    await fs.close()
    return len(fs.recovered_changes)
