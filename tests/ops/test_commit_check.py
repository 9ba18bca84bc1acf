"""The commit's check that a file still holds what the change was planned against:
a file the same process just wrote, with the digest the planner gave, is compared
with those bytes instead of hashed; a file changed since is a CONFLICT either way."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tinyagent_fs.errors import ErrorCode, ToolError
from tinyagent_fs.ops import commit
from tinyagent_fs.ops.commit import commit_changes


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def modify(path: Path, old: bytes, new: bytes) -> list[dict[str, object]]:
    return [
        {
            "kind": "modify",
            "path": str(path),
            "dest": None,
            "expected_hash": sha(old),
            "dest_expected_hash": "missing",
            "new_bytes": new,
            "new_hash": sha(new),
            "mode": None,
        }
    ]


def test_a_file_just_written_is_compared_not_hashed_and_a_change_since_is_a_conflict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "file.txt"
    first, second, third = b"1" * 4096, b"2" * 4096, b"3" * 4096
    path.write_bytes(first)
    commit_changes("a" * 12, modify(path, first, second))
    hashed: list[str] = []
    real = commit._current_hash

    def counted(name: str) -> str:
        hashed.append(name)
        return real(name)

    monkeypatch.setattr(commit, "_current_hash", counted)
    commit_changes("b" * 12, modify(path, second, third))
    assert hashed == [] and path.read_bytes() == third
    path.write_bytes(b"X" * 4096)  # someone else, same size
    with pytest.raises(ToolError) as refused:
        commit_changes("c" * 12, modify(path, third, first))
    assert refused.value.code is ErrorCode.CONFLICT
    assert path.read_bytes() == b"X" * 4096
    assert hashed == []  # compared with the bytes written, which differ
    with pytest.raises(ToolError) as other:  # planned against bytes it did not write
        commit_changes("d" * 12, modify(path, second, first))
    assert other.value.code is ErrorCode.CONFLICT
    assert hashed == [str(path)]


@pytest.mark.parametrize("size", [0, 1, 4096, commit.HASH_BLOCK - 1, commit.HASH_BLOCK, 3_000_001])
def test_a_file_is_hashed_whole_at_every_size(tmp_path: Path, size: int) -> None:
    """The hash that checks a file no bytes were planned with (a sandbox worker's
    check): whole files, across block boundaries, one byte of difference seen."""
    path = tmp_path / "file.bin"
    data = bytes(index % 251 for index in range(size))
    path.write_bytes(data)
    assert commit._current_hash(str(path)) == sha(data)
    if size:
        path.write_bytes(data[:-1] + bytes([(data[-1] + 1) % 256]))
        assert commit._current_hash(str(path)) != sha(data)
