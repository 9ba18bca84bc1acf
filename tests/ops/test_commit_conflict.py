"""The commit's own check that every file still holds what the change was planned
against (the bytes an in-process caller passes), down to the last byte, whatever the
file's size, also while a commit of many files stages their new bytes meanwhile;
and the mode a rewritten file keeps."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from tinyagent_fs.errors import ErrorCode, ToolError
from tinyagent_fs.ops import commit as commit_module
from tinyagent_fs.ops.commit import COMPARE_BLOCK, OVERLAP_FROM, commit_changes

SMALL = b"one\ntwo\n"
LARGE = bytes(range(256)) * (COMPARE_BLOCK // 256 * 2 + 3)  # two full blocks and a bit
OVERLAP = {"checked first": False, "checked while staging": True}


@pytest.fixture(params=OVERLAP.values(), ids=OVERLAP.keys())
def overlap(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Whether even a one-file commit stages while it checks (as one of
    ``OVERLAP_FROM`` files does)."""
    if request.param:
        monkeypatch.setattr(commit_module, "OVERLAP_FROM", 1)
    return bool(request.param)


def change(path: Path, planned: bytes, new: bytes = b"new\n") -> dict[str, object]:
    return {
        "kind": "modify",
        "path": str(path),
        "expected_hash": "unused: the planned bytes are compared",
        "expected_bytes": planned,
        "new_bytes": new,
        "mode": None,
    }


def grow(path: Path) -> None:
    with open(path, "ab") as handle:
        handle.write(b"!")


def last_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))


def first_byte_of_second_block(path: Path) -> None:
    data = bytearray(path.read_bytes())
    if len(data) > COMPARE_BLOCK:
        data[COMPARE_BLOCK] ^= 1
    else:
        data[0] ^= 1
    path.write_bytes(bytes(data))


def shrink(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-1])


def symlink(path: Path) -> None:
    twin = path.with_name("twin")
    twin.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(twin)


CHANGES: dict[str, Callable[[Path], None]] = {
    "grown by a byte": grow,
    "last byte": last_byte,
    "second block": first_byte_of_second_block,
    "shrunk": shrink,
    "now a symlink": symlink,
}


@pytest.mark.parametrize("planned", [SMALL, LARGE], ids=["small", "large"])
@pytest.mark.parametrize("how", CHANGES.values(), ids=CHANGES.keys())
def test_a_file_changed_since_planning_is_a_conflict_and_left_alone(
    tmp_path: Path, planned: bytes, how: Callable[[Path], None], overlap: bool
) -> None:
    path = tmp_path / "file.bin"
    path.write_bytes(planned)
    how(path)
    before = path.read_bytes()
    with pytest.raises(ToolError) as caught:
        commit_changes("c0ffee000001", [change(path, planned, LARGE)])
    assert caught.value.code is ErrorCode.CONFLICT
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir() if ".tafs-" in p.name) == []


@pytest.mark.parametrize("planned", [SMALL, LARGE, b""], ids=["small", "large", "empty"])
def test_an_unchanged_file_is_rewritten_keeping_its_mode(
    tmp_path: Path, planned: bytes, overlap: bool
) -> None:
    path = tmp_path / "script.sh"
    path.write_bytes(planned)
    path.chmod(0o751)
    report = commit_changes("c0ffee000002", [change(path, planned)])
    assert report["files"] == 1
    assert path.read_bytes() == b"new\n"
    assert os.stat(path).st_mode & 0o777 == 0o751
    assert [p.name for p in tmp_path.iterdir()] == ["script.sh"]


@pytest.mark.parametrize("files", [1, OVERLAP_FROM - 1, OVERLAP_FROM])
def test_a_commit_of_many_files_stages_on_another_thread_while_this_one_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: int
) -> None:
    paths = [tmp_path / f"file{index}.bin" for index in range(files)]
    for path in paths:
        path.write_bytes(SMALL)
    checking: set[int] = set()
    staging: set[int] = set()
    holds, write_staged = commit_module._holds, commit_module._write_staged

    def checked(*args: object) -> object:
        checking.add(threading.get_ident())
        return holds(*args)  # type: ignore[arg-type]

    def staged(*args: object) -> object:
        staging.add(threading.get_ident())
        return write_staged(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(commit_module, "_holds", checked)
    monkeypatch.setattr(commit_module, "_write_staged", staged)
    commit_changes("c0ffee000003", [change(path, SMALL) for path in paths])
    assert all(path.read_bytes() == b"new\n" for path in paths)
    assert checking == {threading.get_ident()}
    assert (threading.get_ident() not in staging) is (files >= OVERLAP_FROM)


class NoThreads:
    def submit(self, *args: object) -> None:
        raise RuntimeError("can't start new thread")


def test_a_commit_without_a_staging_thread_checks_then_stages_on_this_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "file.bin"
    path.write_bytes(LARGE)
    monkeypatch.setattr(commit_module, "OVERLAP_FROM", 1)
    monkeypatch.setattr(commit_module, "_stagers", NoThreads())
    commit_changes("c0ffee000004", [change(path, LARGE, SMALL)])
    assert path.read_bytes() == SMALL
    grow(path)
    with pytest.raises(ToolError) as caught:
        commit_changes("c0ffee000005", [change(path, SMALL, LARGE)])
    assert caught.value.code is ErrorCode.CONFLICT
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.bin"]
