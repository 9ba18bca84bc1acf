"""What the kernel sandbox adds: a command, and a new toolkit's first call.

Both through ``FileTools`` on the Linux sandbox as an agent gets it
(auto-approve hook, audit log, undo journal).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from baselines import bare_interpreter, unsandboxed_shell_true, unsandboxed_true
from figure import Figure, Kind, Prepare, Target, plain, tool
from figures_files import toolkit
from rounds import Side

from tinyagent_fs import FileTools
from tinyagent_fs.audit.log import AuditLog
from tinyagent_fs.hooks import AutoApprovePolicy

TREE_FILES = 20_000


def make_tree(root: Path, files: int) -> None:
    """``files`` files in 100-file folders two levels deep, one secret per folder."""
    for index in range(files):
        folder = root / f"d{index // 1000:02}" / f"s{index // 100 % 10}"
        if index % 100 == 0:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / ".env").write_bytes(b"SECRET=1\n")
        (folder / f"f{index:05}.py").write_bytes(b"x = 1\n")


def command(baseline: Callable[[], None]) -> Prepare:
    """``run_command("true")`` on the sandbox against ``baseline``."""

    @asynccontextmanager
    async def prepare(root: Path) -> AsyncIterator[tuple[Side, Side]]:
        root.mkdir()
        (root / "README.md").write_text("a small project\n")
        async with toolkit(root, "linux") as fs:
            yield tool(fs, lambda: fs.run_command("true")), plain(baseline)

    return prepare


def first_call(files: int) -> Prepare:
    """``FileTools(root)`` (the default provider: the sandbox) to the result of its first
    call, a listing of the root; closing it is untimed."""

    @asynccontextmanager
    async def prepare(root: Path) -> AsyncIterator[tuple[Side, Side]]:
        root.mkdir()
        make_tree(root, files)
        audit = root.parent / f"{root.name}-audit"

        async def side() -> float:
            began = time.perf_counter()
            fs = FileTools(root, hooks=[AutoApprovePolicy()], audit=AuditLog(audit))
            try:
                result = await fs.list_directory(".")
                elapsed = time.perf_counter() - began
            finally:
                await fs.close()
            if not result.ok:
                raise SystemExit(f"first call failed: {result.text}")
            return elapsed

        yield side, plain(bare_interpreter)

    return prepare


def figures() -> list[Figure]:
    return [
        Figure(
            "sandbox.command",
            "run_command true, linux",
            unsandboxed_shell_true,
            command(unsandboxed_shell_true),
            Target("<= +3 ms", Kind.OVERHEAD, 3e-3),
        ),
        Figure(
            "sandbox.command-plain",
            "  the same against true without a shell",
            unsandboxed_true,
            command(unsandboxed_true),
        ),
        Figure(
            "sandbox.start-empty",
            "new toolkit to its first result, empty root",
            bare_interpreter,
            first_call(0),
            Target("< 100 ms", Kind.ABSOLUTE, 0.100),
            calls=3,
        ),
        Figure(
            "sandbox.start-20k",
            f"new toolkit to its first result, {TREE_FILES:,}-file root",
            bare_interpreter,
            first_call(TREE_FILES),
            Target("< 150 ms", Kind.ABSOLUTE, 0.150),
            calls=3,
        ),
    ]
