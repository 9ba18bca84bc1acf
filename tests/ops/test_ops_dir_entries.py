"""dir_entries: a directory's entries kept while its ctime says unchanged, never longer."""

from __future__ import annotations

import errno
import os
import time
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path

import pytest

from tinyagent_fs.ops import dir_entries
from tinyagent_fs.ops.dir_entries import DIRECTORY, FILE, SYMLINK, read_entries

STILL_FOR = dir_entries.RACY_NS / 1e9 + 0.05
"""Seconds after its last change from which a directory's entries are kept."""


@pytest.fixture(autouse=True)
def nothing_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dir_entries, "_kept", OrderedDict())
    monkeypatch.setattr(dir_entries, "_kept_bytes", 0)


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the directory reads (each ``os.scandir``), to tell a kept answer from a read."""
    calls: list[int] = []
    real = os.scandir

    def counted(fd: int) -> Iterator[os.DirEntry[str]]:
        calls.append(fd)
        return real(fd)

    monkeypatch.setattr(dir_entries.os, "scandir", counted)
    return calls


def entries(path: Path) -> tuple[list[str], list[str]]:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        return read_entries(fd)
    finally:
        os.close(fd)


def still_folder(path: Path, names: list[str]) -> Path:
    path.mkdir()
    for name in names:
        (path / name).write_text(name)
    time.sleep(STILL_FOR)
    return path


def test_names_sorted_by_code_point_with_their_kinds(tmp_path: Path) -> None:
    (tmp_path / "b.txt").write_text("b")
    (tmp_path / "B").mkdir()
    (tmp_path / "a-link").symlink_to("b.txt")
    assert entries(tmp_path) == (["B", "a-link", "b.txt"], [DIRECTORY, SYMLINK, FILE])


def test_an_unchanged_still_folder_is_read_once(tmp_path: Path, scans: list[int]) -> None:
    folder = still_folder(tmp_path / "f", ["one", "two"])
    assert entries(folder) == entries(folder) == (["one", "two"], [FILE, FILE])
    assert len(scans) == 1


def test_every_kind_of_change_is_seen_at_once(tmp_path: Path, scans: list[int]) -> None:
    folder = still_folder(tmp_path / "f", ["one", "two"])
    entries(folder)
    (folder / "three").write_text("3")
    assert entries(folder)[0] == ["one", "three", "two"]
    (folder / "one").unlink()
    assert entries(folder)[0] == ["three", "two"]
    (folder / "two").rename(folder / "zwei")
    assert entries(folder)[0] == ["three", "zwei"]
    (folder / "three").unlink()
    (folder / "three").mkdir()  # same name, another kind
    assert entries(folder) == (["three", "zwei"], [DIRECTORY, FILE])


def test_a_forged_mtime_does_not_hide_a_change(tmp_path: Path) -> None:
    """``utimes`` can put the mtime back; the ctime it cannot, and it is what is compared."""
    folder = still_folder(tmp_path / "f", ["one"])
    before = os.stat(folder)
    entries(folder)
    (folder / "planted").write_text("x")
    os.utime(folder, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(folder).st_mtime_ns == before.st_mtime_ns
    assert entries(folder)[0] == ["one", "planted"]


def test_a_folder_changed_within_the_racy_margin_is_read_every_time(
    tmp_path: Path, scans: list[int]
) -> None:
    """Its ctime may be the tick a later change also gets, so it is not kept."""
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "one").write_text("1")
    entries(folder)
    entries(folder)
    assert len(scans) == 2
    assert not dir_entries._kept


def test_what_the_caller_changes_is_not_what_is_kept(tmp_path: Path) -> None:
    folder = still_folder(tmp_path / "f", ["one", "two"])
    names, kinds = entries(folder)
    del names[0], kinds[0]
    assert entries(folder) == (["one", "two"], [FILE, FILE])


def test_the_least_recently_used_folder_is_dropped_past_the_bound(
    tmp_path: Path, scans: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dir_entries, "MAX_DIRECTORIES", 2)
    first, second, third = (tmp_path / name for name in ("a", "b", "c"))
    for folder in (first, second, third):
        folder.mkdir()
        (folder / "x").write_text("x")
    time.sleep(STILL_FOR)
    for folder in (first, second, first, third):  # "second" is the least recently used
        entries(folder)
    assert len(scans) == 3
    entries(first)
    entries(third)
    assert len(scans) == 3
    entries(second)
    assert len(scans) == 4


def test_what_is_kept_is_bounded_in_bytes(
    tmp_path: Path, scans: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counted as Python holds the names: long or non-ASCII names weigh more."""
    small = still_folder(tmp_path / "small", ["1", "2"])
    big = still_folder(tmp_path / "big", ["\u20ac" * 80 + str(i) for i in range(4)])
    entries(small)
    monkeypatch.setattr(dir_entries, "MAX_BYTES", dir_entries._kept_bytes + 100)
    entries(big)  # larger than the bound on its own: never kept
    entries(big)
    entries(small)
    assert len(scans) == 3
    assert len(dir_entries._kept) == 1


def test_a_failed_read_is_not_kept_as_an_empty_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Out of descriptors for a moment, the folder reads as empty this once only."""
    folder = still_folder(tmp_path / "f", ["one", "two"])
    real = os.scandir

    def out_of_descriptors(fd: int) -> Iterator[os.DirEntry[str]]:
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(dir_entries.os, "scandir", out_of_descriptors)
    assert entries(folder) == ([], [])
    monkeypatch.setattr(dir_entries.os, "scandir", real)
    assert entries(folder) == (["one", "two"], [FILE, FILE])


def test_a_kind_that_could_not_be_told_is_not_kept(
    tmp_path: Path, scans: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry whose lstat failed is shown as OTHER this once, then read again."""
    folder = still_folder(tmp_path / "f", [])
    (folder / "sub").mkdir()
    time.sleep(STILL_FOR)
    real = dir_entries._kind
    monkeypatch.setattr(dir_entries, "_kind", lambda entry: None)
    assert entries(folder) == (["sub"], [dir_entries.OTHER])
    monkeypatch.setattr(dir_entries, "_kind", real)
    assert entries(folder) == (["sub"], [DIRECTORY])
    assert len(scans) == 2


@pytest.mark.parametrize(
    ("changed_before_read_s", "tick_ns", "kept"),
    [
        (0.05, 1, False),  # a fine clock, changed within RACY_NS
        (0.2, 1, True),
        (1.0, 10**9, False),  # whole seconds: a later change that second keeps the ctime
        (2.5, 2 * 10**9, False),  # FAT's two seconds
        (3.5, 10**9, True),
        (0.5, 10**6, False),  # milliseconds: taken as coarse
    ],
)
def test_a_ctime_is_trusted_only_past_its_file_systems_tick(
    changed_before_read_s: float, tick_ns: int, kept: bool
) -> None:
    began = 1_800_000_000 * 10**9 + 999_000_123
    ctime = (began - int(changed_before_read_s * 1e9)) // tick_ns * tick_ns
    assert dir_entries._still_long_enough(ctime, began) is kept


def test_a_folder_that_cannot_be_read_has_no_entries(tmp_path: Path) -> None:
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    os.close(fd)
    assert read_entries(fd) == ([], [])
