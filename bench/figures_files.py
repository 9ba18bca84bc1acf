"""The small changes agents make most, through ``FileTools`` on one provider.

As an agent gets the toolkit: auto-approve hook, audit log on, undo journal on.
Every call really changes the file (two versions alternate), so neither side
can skip a write that would change nothing.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TypeVar

from baselines import git_apply, git_apply_synced, raw_atomic_write, raw_edit
from figure import Figure, Prepare, at_most, plain, source_lines, tool
from rounds import Side

from tinyagent_fs import FileTools, SandboxPolicy
from tinyagent_fs.audit.log import AuditLog
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.providers.base import Provider
from tinyagent_fs.providers.local import LocalProvider

SMALL = 4096
T = TypeVar("T")


def flip(first: T, second: T) -> Callable[[], T]:
    """Alternates two states, so every call changes the file and the next undoes it."""
    return itertools.cycle((first, second)).__next__


def make_provider(name: str, root: Path) -> Provider:
    if name == "linux":
        from tinyagent_fs.providers.linux import LinuxSandboxProvider

        return LinuxSandboxProvider(root, SandboxPolicy())
    return LocalProvider()


@asynccontextmanager
async def toolkit(root: Path, provider: str) -> AsyncIterator[FileTools]:
    fs = FileTools(
        root,
        provider=make_provider(provider, root),
        hooks=[AutoApprovePolicy()],
        audit=AuditLog(root.parent / f"{root.name}-audit"),
    )
    try:
        yield fs
    finally:
        await fs.close()


def small_text(tag: str) -> str:
    return (tag + "\n" + "".join(source_lines(80)))[:SMALL]


def write(provider: str, versions: tuple[str, str]) -> Prepare:
    @asynccontextmanager
    async def prepare(root: Path) -> AsyncIterator[tuple[Side, Side]]:
        root.mkdir()
        (root / "w.txt").write_text(versions[1])
        raw = root / "raw_w.txt"
        raw.write_text(versions[1])
        mine, theirs = flip(*versions), flip(*versions)
        async with toolkit(root, provider) as fs:
            yield (
                tool(fs, lambda: fs.write_file("w.txt", mine())),
                plain(lambda: raw_atomic_write(raw, theirs().encode())),
            )

    return prepare


def edit(provider: str) -> Prepare:
    @asynccontextmanager
    async def prepare(root: Path) -> AsyncIterator[tuple[Side, Side]]:
        root.mkdir()
        text = small_text("A")
        line = text.splitlines()[40]
        other = line + "  # edited"
        (root / "e.py").write_text(text)
        (root / "raw_e.py").write_text(text)
        mine, theirs = flip((line, other), (other, line)), flip((line, other), (other, line))
        async with toolkit(root, provider) as fs:
            yield (
                tool(fs, lambda: fs.edit_file("e.py", *mine())),
                plain(lambda: raw_edit(root / "raw_e.py", *theirs())),
            )

    return prepare


def git_diff(names: list[str], context: tuple[str, str], old: str, new: str, at: int) -> str:
    """A ``git diff`` of one changed line (one line of context each side) per file."""
    before, after = context
    return "".join(
        f"diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n"
        f"@@ -{at},3 +{at},3 @@\n {before}\n-{old}\n+{new}\n {after}\n"
        for name in names
    )


def patch(provider: str, files: int, synced: bool) -> Prepare:
    @asynccontextmanager
    async def prepare(root: Path) -> AsyncIterator[tuple[Side, Side]]:
        lines = source_lines(200)
        before, old, after = (line.rstrip("\n") for line in lines[99:102])
        new = old + "  # patched"
        names = [f"pkg/mod{i:02d}.py" for i in range(files)]
        raw_root = root.parent / f"{root.name}-raw"
        for folder in (root, raw_root):
            (folder / "pkg").mkdir(parents=True)
            for name in names:
                (folder / name).write_text("".join(lines))
        texts = (
            git_diff(names, (before, after), old, new, 100),
            git_diff(names, (before, after), new, old, 100),
        )
        patch_files = [root.parent / f"{root.name}-{way}.diff" for way in ("forward", "back")]
        for path, text in zip(patch_files, texts, strict=True):
            path.write_text(text)
        written = [raw_root / name for name in names]
        mine, theirs = flip(*texts), flip(*patch_files)
        if synced:
            baseline = plain(lambda: git_apply_synced(theirs(), raw_root, written))
        else:
            baseline = plain(lambda: git_apply(theirs(), raw_root))
        async with toolkit(root, provider) as fs:
            yield tool(fs, lambda: fs.apply_patch(mine())), baseline

    return prepare


def figures(provider: str) -> list[Figure]:
    body = "".join(source_lines(20_000))
    big = ("# version A\n" + body, "# version B\n" + body)
    out = [
        Figure(
            f"{provider}.write4k",
            f"write_file 4 KB, {provider}",
            raw_atomic_write,
            write(provider, (small_text("A"), small_text("B"))),
            at_most(2),
        ),
        Figure(
            f"{provider}.edit",
            f"edit_file one line of 4 KB, {provider}",
            raw_edit,
            edit(provider),
            at_most(2),
        ),
        Figure(
            f"{provider}.write1m",
            f"write_file 1 MB, {provider}",
            raw_atomic_write,
            write(provider, big),
            at_most(1.5),
            calls=7,
        ),
    ]
    for files in (1, 5, 50):
        word = "file" if files == 1 else "files"
        calls = 7 if files > 5 else 15
        out += [
            Figure(
                f"{provider}.patch{files}",
                f"apply_patch {files} {word}, {provider}",
                git_apply_synced,
                patch(provider, files, synced=True),
                at_most(2 if files > 5 else 1.5),
                calls=calls,
            ),
            Figure(
                f"{provider}.patch{files}-plain",
                "  the same against plain git apply",
                git_apply,
                patch(provider, files, synced=False),
                calls=calls,
            ),
        ]
    return out
