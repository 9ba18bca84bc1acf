"""A large commit fsyncs its staged files together: still every one of them, all
before the first rename, and a failed fsync still rolls the whole commit back."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

from tinyagent_fs import FileTools
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.ops.durable import TOGETHER_FROM, fsync_together
from tinyagent_fs.providers import LocalProvider

FILES = TOGETHER_FROM * 2


def tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def make_files(root: Path) -> str:
    sections = []
    for index in range(FILES):
        (root / f"f{index:02}.txt").write_text(f"old {index}\n")
        sections.append(f"--- a/f{index:02}.txt\n+++ b/f{index:02}.txt\n@@ -1 +1 @@\n")
        sections.append(f"-old {index}\n+new {index}\n")
    return "".join(sections)


class StagedFiles:
    """Watches the real calls on staged temp files: which were fsynced, which renamed,
    in what order; ``fail_fsync_of`` makes one staged file's fsync fail with EIO."""

    def __init__(self, fail_fsync_of: str | None = None) -> None:
        self.fail_fsync_of = fail_fsync_of
        self.events: list[tuple[str, str]] = []
        self.names: dict[int, str] = {}
        self.lock = threading.Lock()

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        real_open, real_fsync, real_replace = os.open, os.fsync, os.replace

        def opened(path, flags, *args, **kwargs):  # type: ignore[no-untyped-def]
            fd = real_open(path, flags, *args, **kwargs)
            with self.lock:
                self.names[fd] = os.path.basename(os.fsdecode(path))
            return fd

        def fsynced(fd):  # type: ignore[no-untyped-def]
            name = self.names.get(fd, "")
            if ".tafs-" in name:
                self.events.append(("fsync", name))
                if self.fail_fsync_of and name.startswith(f".{self.fail_fsync_of}"):
                    raise OSError(errno.EIO, os.strerror(errno.EIO))
            return real_fsync(fd)

        def replaced(src, dst, **kwargs):  # type: ignore[no-untyped-def]
            name = os.path.basename(os.fsdecode(src))
            if ".tafs-" in name and name.endswith(".tmp"):
                self.events.append(("rename", name))
            return real_replace(src, dst, **kwargs)

        monkeypatch.setattr(os, "open", opened)
        monkeypatch.setattr(os, "fsync", fsynced)
        monkeypatch.setattr(os, "replace", replaced)


async def apply(root: Path, patch: str, watch: StagedFiles, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    async with FileTools(
        root, provider=LocalProvider(), hooks=[AutoApprovePolicy()], audit=False, journal=False
    ) as fs:
        watch.install(monkeypatch)
        try:
            return await fs.apply_patch(patch)
        finally:
            monkeypatch.undo()


async def test_every_staged_file_is_fsynced_before_the_first_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    patch = make_files(tmp_path)
    watch = StagedFiles()
    result = await apply(tmp_path, patch, watch, monkeypatch)
    assert result.ok, result.text
    kinds = [kind for kind, _ in watch.events]
    first_rename = kinds.index("rename")
    synced = {name for kind, name in watch.events[:first_rename] if kind == "fsync"}
    renamed = {name for kind, name in watch.events if kind == "rename"}
    assert len(renamed) == FILES
    assert renamed <= synced, f"renamed before its fsync: {sorted(renamed - synced)}"
    assert tree(tmp_path)["f07.txt"] == b"new 7\n"


async def test_a_failed_fsync_in_the_batch_rolls_the_whole_commit_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    patch = make_files(tmp_path)
    before = tree(tmp_path)
    watch = StagedFiles(fail_fsync_of="f05.txt")
    result = await apply(tmp_path, patch, watch, monkeypatch)
    assert result.error is not None and result.error.code == "IO_ERROR", result.text
    assert ("fsync", ".f05.txt") in [(kind, name[:8]) for kind, name in watch.events]
    assert not any(kind == "rename" for kind, _ in watch.events)
    assert tree(tmp_path) == before
    assert not [p for p in tmp_path.iterdir() if ".tafs-" in p.name]


def test_fsync_together_waits_for_every_file_and_raises_the_first_error(tmp_path: Path) -> None:
    paths = [tmp_path / f"f{index}" for index in range(TOGETHER_FROM)]
    for path in paths[:3]:
        path.write_bytes(b"x")
    with pytest.raises(FileNotFoundError) as raised:
        fsync_together([str(path) for path in paths])
    assert raised.value.filename == str(paths[3])
    fsync_together([str(path) for path in paths[:3]])
