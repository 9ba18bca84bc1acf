"""The commit's own check that every file still holds what the change was planned
against (the bytes an in-process caller passes), down to the last byte, whatever the
file's size; and the mode a rewritten file keeps."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tinyagent_fs.errors import ErrorCode, ToolError
from tinyagent_fs.ops.commit import COMPARE_BLOCK, commit_changes

SMALL = b"one\ntwo\n"
LARGE = bytes(range(256)) * (COMPARE_BLOCK // 256 * 2 + 3)  # two full blocks and a bit


def change(path: Path, planned: bytes) -> dict[str, object]:
    return {
        "kind": "modify",
        "path": str(path),
        "expected_hash": "unused: the planned bytes are compared",
        "expected_bytes": planned,
        "new_bytes": b"new\n",
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
    tmp_path: Path, planned: bytes, how: Callable[[Path], None]
) -> None:
    path = tmp_path / "file.bin"
    path.write_bytes(planned)
    how(path)
    before = path.read_bytes()
    with pytest.raises(ToolError) as caught:
        commit_changes("c0ffee000001", [change(path, planned)])
    assert caught.value.code is ErrorCode.CONFLICT
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir() if ".tafs-" in p.name) == []


@pytest.mark.parametrize("planned", [SMALL, LARGE, b""], ids=["small", "large", "empty"])
def test_an_unchanged_file_is_rewritten_keeping_its_mode(tmp_path: Path, planned: bytes) -> None:
    path = tmp_path / "script.sh"
    path.write_bytes(planned)
    path.chmod(0o751)
    report = commit_changes("c0ffee000002", [change(path, planned)])
    assert report["files"] == 1
    assert path.read_bytes() == b"new\n"
    assert os.stat(path).st_mode & 0o777 == 0o751
    assert [p.name for p in tmp_path.iterdir()] == ["script.sh"]
