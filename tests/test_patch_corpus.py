"""A real-world corpus: trees built from the Python standard library on this machine,
changed the way real releases change (edits, new and deleted files, renames, mode
changes, CRLF and latin-1 files), diffed with ``diff -ruN`` and ``git diff -M``,
applied with apply_patch and compared byte for byte, modes included, with the new
tree and with what ``git apply`` makes of the same patch.

A sample runs in the normal suite; ``TINYAGENT_FS_CORPUS_FILES`` makes it larger.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

from tinyagent_fs import FileTools
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.policy import SandboxPolicy
from tinyagent_fs.providers import LocalProvider

FILES = int(os.environ.get("TINYAGENT_FS_CORPUS_FILES", "120"))
SEEDS = (1, 2)


def stdlib_sources(count: int, rng: random.Random) -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    sources = sorted(
        p
        for p in root.rglob("*.py")
        if 200 < p.stat().st_size < 60_000
        and "site-packages" not in p.parts
        and not any(part.startswith("test") for part in p.relative_to(root).parts[:-1])
    )
    if len(sources) < count:
        pytest.fail(f"the standard library at {root} has only {len(sources)} usable modules")
    return rng.sample(sources, count)


def build_trees(base: Path, seed: int) -> tuple[Path, Path]:
    """Old and new trees: the new one is the old one after a "release"."""
    rng = random.Random(seed)
    old, new = base / "old", base / "new"
    for index, source in enumerate(stdlib_sources(FILES, rng)):
        folder = f"pkg{index % 7}"
        data = source.read_bytes()
        if index % 11 == 0:
            data = data.replace(b"\n", b"\r\n")  # a CRLF file
        if index % 13 == 0:
            data = data.decode("utf-8").encode("latin-1", "replace") + b"# caf\xe9 \xa0\n"
        target = old / folder / f"m{index:04}_{source.name}"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        target.chmod(0o755 if index % 9 == 0 else 0o644)
    shutil.copytree(old, new, symlinks=True)
    files = sorted(p for p in new.rglob("*") if p.is_file())
    for path in files:
        action = rng.random()
        if action < 0.35:
            edit_lines(path, rng)
        elif action < 0.40:
            path.unlink()
        elif action < 0.46:
            renamed = path.with_name("renamed_" + path.name)
            os.replace(path, renamed)
            if rng.random() < 0.5:
                edit_lines(renamed, rng)
        elif action < 0.50:
            path.chmod(path.stat().st_mode ^ 0o111)
    for index in range(FILES // 10):
        added = new / f"pkg{index % 7}" / f"added_{index}.py"
        added.write_bytes(f"# new module {index}\nVALUE = {index}\n".encode())
        if index % 3 == 0:
            added.chmod(0o755)
    return old, new


def edit_lines(path: Path, rng: random.Random) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    if not lines:
        return
    ending = b"\r\n" if lines[0].endswith(b"\r\n") else b"\n"
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(lines))
        choice = rng.random()
        if choice < 0.4:
            lines[at] = b"# changed: " + lines[at].lstrip()
        elif choice < 0.7:
            lines.insert(at, b"# inserted line" + ending)
        elif len(lines) > 1:
            del lines[at]
    if rng.random() < 0.1 and lines:
        lines[-1] = lines[-1].rstrip(b"\r\n")  # the new version lost its final newline
    path.write_bytes(b"".join(lines))


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mode & 0o777)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def run(args: list[str], cwd: Path, ok: tuple[int, ...] = (0,)) -> bytes:
    done = subprocess.run(args, cwd=cwd, capture_output=True, check=False)
    assert done.returncode in ok, done.stderr.decode(errors="replace")
    return done.stdout


def git_patch(old: Path, new: Path, work: Path) -> str:
    repo = work / "repo"
    shutil.copytree(old, repo, symlinks=True)
    run(["git", "init", "-q"], repo)
    run(["git", "config", "core.autocrlf", "false"], repo)
    run(["git", "add", "-A"], repo)
    run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "old"], repo)
    for path in repo.iterdir():
        if path.name != ".git":
            shutil.rmtree(path)
    for path in new.iterdir():
        shutil.copytree(path, repo / path.name, symlinks=True)
    run(["git", "add", "-A"], repo)
    return run(["git", "diff", "--cached", "-M", "--no-color"], repo).decode(
        "utf-8", "surrogateescape"
    )


async def apply_ours(old: Path, patch: str, where: Path) -> dict[str, tuple[bytes, int]]:
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
    old, new = build_trees(tmp_path, seed)
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
    old, new = build_trees(tmp_path, seed)
    patch = run(["diff", "-ruN", "old", "new"], tmp_path, ok=(1,)).decode(
        "utf-8", "surrogateescape"
    )
    ours = await apply_ours(old, patch, tmp_path / "ours")
    expected = snapshot(new)
    # diff -ruN carries no modes: a file keeps its mode, a new one gets the default.
    assert {name: data for name, (data, _) in ours.items()} == {
        name: data for name, (data, _) in expected.items()
    }
