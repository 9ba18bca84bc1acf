"""Durability with few flushes: one fsync per file and per directory, or, for a large
commit, one syncfs per file system; a failed flush rolls the commit back whole."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest

import tinyagent_fs._runtime.durable as durable
from tinyagent_fs._runtime.durable import SYNCFS_FROM
from tinyagent_fs.changes.changeset import content_hash
from tinyagent_fs.ops.commit import commit_changes

OLD, NEW = b"old\n", b"new content\n"


def tree(root: Path, files: int) -> list[Path]:
    paths = [root / f"d{i % 2}" / f"f{i:02}.txt" for i in range(files)]
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(OLD)
    return paths


def modify_all(paths: list[Path]) -> list[dict[str, object]]:
    return [
        {
            "kind": "modify",
            "path": str(path),
            "dest": None,
            "expected_hash": content_hash(OLD),
            "dest_expected_hash": content_hash(None),
            "new_bytes": NEW,
            "mode": None,
        }
        for path in paths
    ]


class Calls:
    """Counts the calls of a real function, or makes them fail with ``fail``."""

    def __init__(self, real: Callable[[int], None], fail: int | None = None) -> None:
        self.real, self.fail, self.count = real, fail, 0

    def __call__(self, fd: int) -> None:
        self.count += 1
        if self.fail is not None:
            raise OSError(self.fail, os.strerror(self.fail))
        self.real(fd)


@pytest.fixture
def flushes(monkeypatch: pytest.MonkeyPatch) -> tuple[Calls, Calls]:
    fsync, syncfs = Calls(os.fsync), Calls(durable.syncfs)
    monkeypatch.setattr(durable.os, "fsync", fsync)
    monkeypatch.setattr(durable, "syncfs", syncfs)
    return fsync, syncfs


def test_a_small_commit_fsyncs_each_file_and_each_directory(
    tmp_path: Path, flushes: tuple[Calls, Calls]
) -> None:
    fsync, syncfs = flushes
    paths = tree(tmp_path, SYNCFS_FROM - 1)
    commit_changes("a" * 12, modify_all(paths))
    assert [p.read_bytes() for p in paths] == [NEW] * len(paths)
    assert (fsync.count, syncfs.count) == (len(paths) + 2, 0)


@pytest.mark.skipif(not durable.syncfs_supported(), reason="syncfs(2) is Linux only")
def test_a_large_commit_flushes_its_files_with_one_syncfs(
    tmp_path: Path, flushes: tuple[Calls, Calls]
) -> None:
    fsync, syncfs = flushes
    paths = tree(tmp_path, 3 * SYNCFS_FROM)
    commit_changes("a" * 12, modify_all(paths))
    assert [p.read_bytes() for p in paths] == [NEW] * len(paths)
    assert (fsync.count, syncfs.count) == (2, 1)  # the files at once; two directories


@pytest.mark.skipif(not durable.syncfs_supported(), reason="syncfs(2) is Linux only")
def test_a_refused_syncfs_falls_back_to_one_fsync_per_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flushes: tuple[Calls, Calls]
) -> None:
    fsync, _ = flushes
    monkeypatch.setattr(durable, "syncfs", Calls(durable.syncfs, fail=errno.ENOSYS))
    paths = tree(tmp_path, 3 * SYNCFS_FROM)
    commit_changes("a" * 12, modify_all(paths))
    assert [p.read_bytes() for p in paths] == [NEW] * len(paths)
    assert fsync.count == len(paths) + 2


@pytest.mark.skipif(not durable.syncfs_supported(), reason="syncfs(2) is Linux only")
def test_a_failed_syncfs_rolls_the_whole_commit_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(durable, "syncfs", Calls(durable.syncfs, fail=errno.EIO))
    paths = tree(tmp_path, 3 * SYNCFS_FROM)
    with pytest.raises(OSError) as failed:
        commit_changes("a" * 12, modify_all(paths))
    assert failed.value.errno == errno.EIO
    assert [p.read_bytes() for p in paths] == [OLD] * len(paths)
    assert not [p for p in tmp_path.rglob("*") if ".tafs-" in p.name]
