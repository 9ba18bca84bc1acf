"""Patches made by GNU ``diff -ruN`` apply as ``patch -p1`` applies them: a side whose
timestamp is the epoch is a file that does not exist (created or deleted)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tinyagent_fs import FileTools
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.providers import LocalProvider


def tree(root: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


OLD = {
    "keep.txt": b"same\n",
    "change.txt": b"one\ntwo\nthree\n",
    "gone.txt": b"delete me\nplease\n",
    "sub/gone-too.txt": b"x\n",
}
NEW = {
    "keep.txt": b"same\n",
    "change.txt": b"one\nTWO\nthree\n",
    "new.txt": b"brand new\n",
    "sub/deeper/new-too.txt": b"y\r\nz\r\n",
}


@pytest.fixture
def gnu_patch(tmp_path: Path) -> str:
    if shutil.which("diff") is None:
        pytest.fail("GNU diff is needed to make the patches (apt-get install diffutils)")
    tree(tmp_path / "a", OLD)
    tree(tmp_path / "b", NEW)
    made = subprocess.run(
        ["diff", "-ruN", "a", "b"], cwd=tmp_path, capture_output=True, check=False
    )
    assert made.returncode == 1, made.stderr
    patch = made.stdout.decode()
    assert "1970-01-01 00:00:00" in patch  # what this test is about: no /dev/null
    assert "/dev/null" not in patch
    return patch


async def test_diff_ruN_creates_and_deletes_files_like_patch_p1(
    tmp_path: Path, gnu_patch: str
) -> None:
    project = tmp_path / "project"
    tree(project, OLD)
    async with FileTools(
        project, provider=LocalProvider(), hooks=[AutoApprovePolicy()], audit=False
    ) as fs:
        result = await fs.apply_patch(gnu_patch)
        assert result.ok, result.text
    assert snapshot(project) == NEW
    assert not (project / "gone.txt").exists()


@pytest.mark.parametrize(
    "stamp",
    [
        "1970-01-01 00:00:00.000000000 +0000",
        "1970-01-01 01:00:00.000000000 +0100",
        "1969-12-31 16:00:00 -0800",
        "Thu Jan  1 00:00:00 1970",
    ],
)
async def test_any_spelling_of_the_epoch_marks_a_missing_side(tmp_path: Path, stamp: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    patch = (
        f"--- a/made.txt\t{stamp}\n+++ b/made.txt\t2026-11-23 08:00:00.000000000 +0000\n"
        "@@ -0,0 +1 @@\n+made\n"
    )
    async with FileTools(
        project, provider=LocalProvider(), hooks=[AutoApprovePolicy()], audit=False
    ) as fs:
        result = await fs.apply_patch(patch)
        assert result.ok, result.text
    assert (project / "made.txt").read_bytes() == b"made\n"


async def test_a_real_timestamp_is_not_the_epoch(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    patch = (
        "--- a/made.txt\t1970-01-01 00:00:01 +0000\n+++ b/made.txt\t2026-11-23 08:00:00 +0000\n"
        "@@ -0,0 +1 @@\n+made\n"
    )
    async with FileTools(
        project, provider=LocalProvider(), hooks=[AutoApprovePolicy()], audit=False
    ) as fs:
        result = await fs.apply_patch(patch)
    assert not result.ok
    assert not (project / "made.txt").exists()
