"""``git diff`` patches of files with CRLF and mixed line endings: apply_patch writes
byte for byte what ``git apply`` writes from the same patch."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import make_provider
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


MODES_BEFORE = {
    "tool.sh": (b"#!/bin/sh\necho hi\n", 0o755),
    "plain.txt": (b"plain\n", 0o644),
    "run.py": (b"print(1)\n", 0o755),
    "old.sh": (b"cleanup old build output\nrm -rf build dist\n", 0o755),
}


def write_modes(root: Path, files: dict[str, tuple[bytes, int]]) -> None:
    for name, (data, mode) in files.items():
        (root / name).write_bytes(data)
        (root / name).chmod(mode)


def files_and_modes(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        p.name: (p.read_bytes(), p.stat().st_mode & 0o777)
        for p in sorted(root.iterdir())
        if p.is_file()
    }


async def test_file_modes_come_out_as_git_apply_sets_them(
    tmp_path: Path, provider_name: str
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    write_modes(repo, MODES_BEFORE)
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "before")
    (repo / "plain.txt").chmod(0o755)  # mode only
    (repo / "run.py").chmod(0o644)  # mode only, the other way
    git(repo, "mv", "tool.sh", "renamed.sh")  # rename of an executable, content kept
    (repo / "new.sh").write_bytes(b"set -eu\nmake test && make bench\nexit 0\n")
    (repo / "new.sh").chmod(0o755)  # new file mode 100755
    (repo / "old.sh").unlink()  # deleted file mode 100755
    git(repo, "add", "-A")
    patch = git(repo, "diff", "--cached", "-M", "--no-color").decode()
    assert "new mode 100755" in patch and "new file mode 100755" in patch
    assert "rename from tool.sh" in patch
    results = {}
    for name in ("by-git", "ours"):
        tree = tmp_path / name
        tree.mkdir()
        write_modes(tree, MODES_BEFORE)
        results[name] = tree
    (tmp_path / "p.diff").write_text(patch, newline="")
    git(results["by-git"], "apply", str(tmp_path / "p.diff"))
    provider = make_provider(provider_name, results["ours"])
    async with FileTools(
        results["ours"], provider=provider, hooks=[AutoApprovePolicy()], audit=False
    ) as fs:
        result = await fs.apply_patch(patch)
        assert result.ok, result.text
    expected = files_and_modes(results["by-git"])
    assert expected["plain.txt"][1] == 0o755 and expected["renamed.sh"][1] == 0o755
    assert files_and_modes(results["ours"]) == expected
