"""A real-world corpus (``bench/patch_corpus.py``: trees built from the standard
library, changed as releases change them), diffed with ``diff -ruN`` and
``git diff -M``, applied with apply_patch and compared byte for byte, modes
included, with the new tree and with what ``git apply`` makes of the same patch.

A sample runs in the normal suite; ``TINYAGENT_FS_CORPUS_FILES`` makes it larger.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from bench.patch_corpus import Snapshot, build_trees, git_patch, gnu_patch, run, snapshot
from tinyagent_fs import FileTools
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.policy import SandboxPolicy
from tinyagent_fs.providers import LocalProvider

FILES = int(os.environ.get("TINYAGENT_FS_CORPUS_FILES", "120"))
SEEDS = (1, 2)


async def apply_ours(old: Path, patch: str, where: Path) -> Snapshot:
    shutil.copytree(old, where, symlinks=True)
    policy = SandboxPolicy(max_file_bytes=16 * 1024 * 1024)
    async with FileTools(
        where, policy=policy, provider=LocalProvider(), hooks=[AutoApprovePolicy()], audit=False
    ) as fs:
        fs.new_round()
        result = await fs.apply_patch(patch)
        assert result.ok, result.text[:2000]
    return snapshot(where)


def requires(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.fail(f"{tool} is needed for the patch corpus (apt-get install {tool})")


@pytest.mark.parametrize("seed", SEEDS)
async def test_git_diff_corpus_matches_the_new_tree_and_git_apply(
    tmp_path: Path, seed: int
) -> None:
    requires("git")
    old, new = build_trees(tmp_path, seed, FILES)
    patch = git_patch(old, new, tmp_path)
    assert "rename from" in patch and "new mode" in patch and "new file mode" in patch
    ours = await apply_ours(old, patch, tmp_path / "ours")
    by_git = tmp_path / "by-git"
    shutil.copytree(old, by_git, symlinks=True)
    (tmp_path / "p.diff").write_bytes(patch.encode("utf-8", "surrogateescape"))
    run(["git", "apply", str(tmp_path / "p.diff")], by_git)
    assert ours == snapshot(by_git)
    assert ours == snapshot(new)


@pytest.mark.parametrize("seed", SEEDS)
async def test_gnu_diff_corpus_matches_the_new_tree(tmp_path: Path, seed: int) -> None:
    requires("diff")
    old, new = build_trees(tmp_path, seed, FILES)
    ours = await apply_ours(old, gnu_patch(tmp_path), tmp_path / "ours")
    expected = snapshot(new)
    # diff -ruN carries no modes: a file keeps its mode, a new one gets the default.
    assert {name: data for name, (data, _) in ours.items()} == {
        name: data for name, (data, _) in expected.items()
    }
