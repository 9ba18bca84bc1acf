"""``git diff`` patches of files with CRLF and mixed line endings: apply_patch writes
byte for byte what ``git apply`` writes from the same patch."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tinyagent_fs import FileTools
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.providers import LocalProvider

BEFORE = {
    "crlf.txt": b"one\r\ntwo\r\nthree\r\n",
    "mixed.txt": b"one\r\ntwo\nthree\r\nfour\n",
    "lf.txt": b"alpha\nbeta\n",
}
AFTER = {
    "crlf.txt": b"one\r\nTWO\r\nadded\r\nthree\r\n",
    "mixed.txt": b"one\r\nTWO\nnew lf\nthree\r\nnew crlf\r\nfour\n",
    "lf.txt": b"alpha\r\nbeta\r\n",  # LF -> CRLF
    "new-crlf.txt": b"fresh\r\nfile\r\n",
}


def git(cwd: Path, *args: str) -> bytes:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=True)
    return done.stdout


def write(root: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        (root / name).write_bytes(data)


def contents(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(root.iterdir()) if p.is_file()}


@pytest.fixture
def repo_patch(tmp_path: Path) -> str:
    if shutil.which("git") is None:
        pytest.fail("git is needed to make and apply the reference patch (apt-get install git)")
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "core.autocrlf", "false")
    write(repo, BEFORE)
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "before")
    write(repo, AFTER)
    git(repo, "add", "-A")
    return git(repo, "diff", "--cached", "--no-color").decode()


async def test_line_endings_come_out_as_git_apply_writes_them(
    tmp_path: Path, repo_patch: str
) -> None:
    by_git = tmp_path / "by-git"
    by_git.mkdir()
    write(by_git, BEFORE)
    (by_git / "p.diff").write_text(repo_patch, newline="")
    git(by_git, "apply", "p.diff")
    (by_git / "p.diff").unlink()
    ours = tmp_path / "ours"
    ours.mkdir()
    write(ours, BEFORE)
    async with FileTools(
        ours, provider=LocalProvider(), hooks=[AutoApprovePolicy()], audit=False
    ) as fs:
        result = await fs.apply_patch(repo_patch)
        assert result.ok, result.text
    assert contents(by_git) == AFTER  # the reference itself
    assert contents(ours) == contents(by_git)
