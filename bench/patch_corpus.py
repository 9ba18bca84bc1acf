"""Real-world patches: trees built from the Python standard library on this machine,
changed the way real releases change (edits, new and deleted files, renames, mode
changes, CRLF and latin-1 files), diffed with ``git diff -M`` or ``diff -ruN``.

Shared by the patch corpus test (correctness against ``git apply``) and the patch
benchmark (speed against ``git apply``), so both measure the same kind of patch.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sysconfig
from pathlib import Path

Snapshot = dict[str, tuple[bytes, int]]
"""relative path -> (bytes, permission bits) of every file of a tree."""


class CorpusError(RuntimeError):
    """The machine cannot build the corpus (no standard library sources, no git)."""


def stdlib_sources(count: int, rng: random.Random) -> list[Path]:
    """``count`` modules of the standard library; when it has fewer usable modules
    than that, the sample is repeated (each copy lands under its own name)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    sources = sorted(
        p
        for p in root.rglob("*.py")
        if 200 < p.stat().st_size < 60_000
        and "site-packages" not in p.parts
        and not any(part.startswith("test") for part in p.relative_to(root).parts[:-1])
    )
    if not sources:
        raise CorpusError(f"the standard library at {root} has no usable modules")
    picked = rng.sample(sources, min(count, len(sources)))
    return [picked[index % len(picked)] for index in range(count)]


def build_trees(base: Path, seed: int, files: int) -> tuple[Path, Path]:
    """Old and new trees of ``files`` modules: the new one is the old one after a
    "release". About 60% of ``files`` end up as sections of a patch between them."""
    rng = random.Random(seed)
    old, new = base / "old", base / "new"
    for index, source in enumerate(stdlib_sources(files, rng)):
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
    for path in sorted(p for p in new.rglob("*") if p.is_file()):
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
    for index in range(files // 10):
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


def snapshot(root: Path) -> Snapshot:
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mode & 0o777)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def run(args: list[str], cwd: Path, ok: tuple[int, ...] = (0,)) -> bytes:
    done = subprocess.run(args, cwd=cwd, capture_output=True, check=False)
    if done.returncode not in ok:
        raise CorpusError(f"{args[0]} failed: {done.stderr.decode(errors='replace')}")
    return done.stdout


def git_patch(old: Path, new: Path, work: Path) -> str:
    """``git diff -M`` from ``old`` to ``new``, non-UTF-8 bytes as surrogate escapes."""
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


def gnu_patch(base: Path) -> str:
    """``diff -ruN old new`` of the trees ``build_trees`` made under ``base``."""
    return run(["diff", "-ruN", "old", "new"], base, ok=(1,)).decode("utf-8", "surrogateescape")


def section_count(patch: str) -> int:
    """How many files a ``git diff`` patch changes."""
    return sum(1 for line in patch.splitlines() if line.startswith("diff --git "))
