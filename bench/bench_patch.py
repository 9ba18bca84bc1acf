"""apply_patch on a real multi-file patch, side by side with ``git apply``.

Run: ``PYTHONPATH=. .venv/bin/python bench/bench_patch.py [--files 870] [--rounds 7]
[--providers local linux] [--output bench/results/patch.txt] [--workdir /dev/shm]
[--profile [tottime]]``.

The patch is ``git diff -M`` between two trees built from the standard library
(``patch_corpus``): edits, renames, mode changes, new and deleted files, CRLF
and latin-1 files; 870 modules give about 500 file sections. Every round
applies it to a fresh copy of the old tree with ``git apply`` (the wall time of
the subprocess) and with ``FileTools.apply_patch`` as an agent gets it (audit
log on, undo journal on, auto-approve hook) on each provider, in an order that
rotates from round to round so all see the same load; each result must equal
the new tree byte for byte, modes included. The sandboxed provider runs twice:
with a new worker every round (what a session's first patch costs) and with one
worker kept from round to round (every later patch of a session). ``git apply``
does not fsync; apply_patch does. Two plain-Python rows show what fsync itself
costs here. ``--workdir /dev/shm`` builds the trees on a tmpfs, where creating a
file costs nothing and what is left is each contender's CPU.

``--profile`` prints where one LocalProvider apply_patch spends its time
(cProfile, by cumulative or own time) instead of benchmarking.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import os
import platform
import pstats
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from bench_tools import mount_type, p90, write_table
from patch_corpus import build_trees, git_patch, section_count, snapshot

from tinyagent_fs import FileTools, SandboxPolicy
from tinyagent_fs.audit.log import AuditLog
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.journal.undo_journal import JOURNAL_ENV
from tinyagent_fs.providers.base import Provider
from tinyagent_fs.providers.local import LocalProvider

try:
    from tinyagent_fs.providers.linux import LinuxSandboxProvider
except ImportError:
    LinuxSandboxProvider = None  # type: ignore[assignment,misc]

SEED = 1
TARGET_RATIO = 2.0
GIT_APPLY = "git apply (no fsync)"


@dataclass(frozen=True)
class Run:
    """One timed run: wall-clock seconds, and CPU seconds of every process doing the
    work (the wall time of an fsync is mostly waiting; CPU time shows the work
    itself, and is far steadier on a machine whose disk others share)."""

    wall: float
    cpu: float


Timed = Callable[[Path], Awaitable[Run]]


class Corpus:
    """The trees, the patch and the expected result, built once per run."""

    def __init__(self, workdir: Path, files: int) -> None:
        self.workdir = workdir
        self.old, new = build_trees(workdir / "trees", SEED, files)
        self.patch = git_patch(self.old, new, workdir / "git")
        self.patch_file = workdir / "corpus.diff"
        self.patch_file.write_bytes(self.patch.encode("utf-8", "surrogateescape"))
        self.expected = snapshot(new)
        self.sections = section_count(self.patch)
        self._copies = 0

    def fresh_copy(self) -> Path:
        """A copy of the old tree at rest: written back to disk, like a project
        nobody just wrote 870 files into, so a contender that flushes the file
        system pays for its own writes only (the previous run's removal included)."""
        self._copies += 1
        target = self.workdir / "runs" / f"copy{self._copies:04}"
        shutil.copytree(self.old, target, symlinks=True)
        os.sync()
        return target

    def check(self, who: str, tree: Path) -> None:
        if snapshot(tree) != self.expected:
            raise SystemExit(f"{who} did not produce the new tree byte for byte (modes included)")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def worker_cpu(fs: FileTools) -> float:
    """CPU seconds of the sandbox worker's processes so far (0 for other providers)."""
    pid = getattr(fs.provider, "worker_pid", None)
    if pid is None:
        return 0.0
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return sum(
            int(Path(f"/proc/{each}/schedstat").read_text().split()[0]) / 1e9
            for each in [str(pid), *children]
        )
    except (OSError, ValueError):
        return 0.0


async def time_git_apply(corpus: Corpus, tree: Path) -> Run:
    cpu_before, started = children_cpu(), time.perf_counter()
    done = subprocess.run(
        ["git", "apply", str(corpus.patch_file)], cwd=tree, capture_output=True, check=False
    )
    run = Run(time.perf_counter() - started, children_cpu() - cpu_before)
    if done.returncode != 0:
        raise SystemExit(f"git apply failed: {done.stderr.decode(errors='replace')}")
    return run


def make_provider(name: str, root: Path) -> Provider:
    if name == "linux":
        assert LinuxSandboxProvider is not None
        return LinuxSandboxProvider(root.resolve(), SandboxPolicy())
    return LocalProvider()


def toolkit(corpus: Corpus, provider: str, tree: Path) -> FileTools:
    return FileTools(
        tree,
        provider=make_provider(provider, tree),
        hooks=[AutoApprovePolicy()],
        audit=AuditLog(corpus.workdir / "audit"),
    )


async def timed_apply(fs: FileTools, patch: str) -> Run:
    """One apply_patch; the toolkit is set up (worker started, journal checked for
    interrupted commits) by a first call outside the timing."""
    await fs.file_exists(".")
    fs.new_round()
    cpu_before = time.process_time() + worker_cpu(fs)
    started = time.perf_counter()
    result = await fs.apply_patch(patch)
    run = Run(time.perf_counter() - started, time.process_time() + worker_cpu(fs) - cpu_before)
    if not result.ok:
        raise SystemExit(f"apply_patch failed: {result.text[:2000]}")
    return run


async def time_apply_patch(corpus: Corpus, provider: str, tree: Path) -> Run:
    fs = toolkit(corpus, provider, tree)
    try:
        return await timed_apply(fs, corpus.patch)
    finally:
        await fs.close()


async def time_plain_writes(corpus: Corpus, tree: Path, fsync: bool) -> Run:
    """Write the new tree's changed files as temp siblings and rename them in: the
    floor under any atomic apply, with or without one fsync per file."""
    changed = [
        (tree / name, data)
        for name, (data, _) in corpus.expected.items()
        if not (tree / name).is_file() or (tree / name).read_bytes() != data
    ]
    cpu_before, started = time.process_time(), time.perf_counter()
    for path, data in changed:
        path.parent.mkdir(parents=True, exist_ok=True)
        staged = path.with_name(f".{path.name}.tmp")
        with open(staged, "wb") as handle:
            handle.write(data)
            if fsync:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(staged, path)
    return Run(time.perf_counter() - started, time.process_time() - cpu_before)


class KeptWorker:
    """apply_patch as a session sees it after its first call: one sandbox worker kept
    from round to round (a toolkit starts its worker once and keeps it; a new worker
    pays its start and its first page faults, some 2,700 on its first patch). The
    worker's root is one folder kept for the whole run; each round moves the fresh
    copy's entries into it, applies the patch with a new toolkit on the kept
    provider (a new read state, as for a model that has read nothing), and moves the
    entries back so the result is checked and removed like any other."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self.root = corpus.workdir / "kept-worker"
        self.root.mkdir()
        self.provider: Provider | None = None

    async def timed(self, tree: Path) -> Run:
        _move_entries(tree, self.root)
        if self.provider is None:
            self.provider = make_provider("linux", self.root)
        fs = FileTools(
            self.root,
            provider=self.provider,
            hooks=[AutoApprovePolicy()],
            audit=AuditLog(self.corpus.workdir / "audit"),
        )
        try:
            return await timed_apply(fs, self.corpus.patch)
        finally:
            if fs.journal is not None:
                fs.journal.settle()
            _move_entries(self.root, tree)

    async def close(self) -> None:
        if self.provider is not None:
            await self.provider.close()


def _move_entries(source: Path, target: Path) -> None:
    for entry in os.listdir(source):
        os.rename(source / entry, target / entry)


def contenders(
    corpus: Corpus, providers: list[str], kept: KeptWorker | None
) -> dict[str, tuple[Timed, bool]]:
    """name -> (timed run on a fresh tree, whether its result must be the new tree)."""
    table: dict[str, tuple[Timed, bool]] = {
        GIT_APPLY: (lambda tree: time_git_apply(corpus, tree), True)
    }
    for provider in providers:
        label = f"apply_patch, {provider}" + (", new worker" if provider == "linux" else "")
        table[label] = (lambda tree, p=provider: time_apply_patch(corpus, p, tree), True)
    if kept is not None:
        table["apply_patch, linux, worker kept"] = (kept.timed, True)
    table["plain Python write+rename, fsync each"] = (
        lambda tree: time_plain_writes(corpus, tree, fsync=True),
        False,
    )
    table["plain Python write+rename, no fsync"] = (
        lambda tree: time_plain_writes(corpus, tree, fsync=False),
        False,
    )
    return table


async def measure(corpus: Corpus, providers: list[str], rounds: int) -> dict[str, list[Run]]:
    """The runs of each contender; round 0 is a warm-up and not kept."""
    kept = KeptWorker(corpus) if "linux" in providers else None
    table = contenders(corpus, providers, kept)
    names = list(table)
    runs: dict[str, list[Run]] = {name: [] for name in names}
    try:
        await _rounds(corpus, table, runs, rounds)
    finally:
        if kept is not None:
            await kept.close()
    return runs


async def _rounds(
    corpus: Corpus, table: dict[str, tuple[Timed, bool]], runs: dict[str, list[Run]], rounds: int
) -> None:
    names = list(table)
    for index in range(rounds + 1):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            timed, checked = table[name]
            tree = corpus.fresh_copy()
            gc.collect()
            run = await timed(tree)
            if checked:
                corpus.check(name, tree)
            if index:
                runs[name].append(run)
            shutil.rmtree(tree)
        print(f"round {index}/{rounds} done", file=sys.stderr, flush=True)


def table_lines(runs: dict[str, list[Run]], sections: int) -> list[str]:
    def median(name: str, field: str) -> float:
        return statistics.median(getattr(run, field) for run in runs[name])

    wall_base, cpu_base = median(GIT_APPLY, "wall"), median(GIT_APPLY, "cpu")
    lines = [
        f"{'':<40} {'wall':>10} {'p90':>10} {'per file':>10} {'x git':>7} {'cpu':>10} {'x git':>7}",
    ]
    for name in runs:
        wall, cpu = median(name, "wall"), median(name, "cpu")
        lines.append(
            f"{name:<40} {wall * 1e3:>7.1f} ms {p90([r.wall for r in runs[name]]) * 1e3:>7.1f} ms "
            f"{wall * 1e3 / sections:>7.3f} ms {wall / wall_base:>6.2f}x"
            f" {cpu * 1e3:>7.1f} ms {cpu / cpu_base:>6.2f}x"
        )
    for name in runs:
        if name.startswith("apply_patch"):
            ratio = median(name, "wall") / wall_base
            verdict = "PASS" if ratio <= TARGET_RATIO else "MISS"
            lines.append(
                f"target {name} <= {TARGET_RATIO:g}x git apply (wall): {ratio:.2f}x {verdict}"
            )
    return lines


def header(workdir: Path, corpus: Corpus, rounds: int) -> list[str]:
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    git = subprocess.run(["git", "--version"], capture_output=True, text=True, check=False)
    return [
        f"# command: {shlex.join(getattr(sys, 'orig_argv', [sys.executable, *sys.argv]))}",
        f"# date: {datetime.now(timezone.utc).isoformat(timespec='seconds')}",
        f"# python: {platform.python_implementation()} {platform.python_version()}; "
        f"{git.stdout.strip()}",
        f"# cpus: {os.cpu_count()} (usable: {affinity}); kernel: {platform.system()} "
        f"{platform.release()} {platform.machine()}; file system: {mount_type(workdir)}",
        f"# patch: git diff -M of a standard-library tree, {corpus.sections} files, "
        f"{len(corpus.patch.encode('utf-8', 'surrogateescape')) / 1e6:.2f} MB",
        "# apply_patch: audit log on, undo journal on, auto-approve; each run on a fresh "
        f"copy of the old tree; medians of {rounds} rounds after one warm-up, contenders in "
        "rotating order; cpu = CPU time of every process doing the work (the sandbox worker "
        "included)",
    ]


async def profile_once(corpus: Corpus, sort: str) -> None:
    tree = corpus.fresh_copy()
    fs = toolkit(corpus, "local", tree)
    await fs.file_exists(".")
    profiler = cProfile.Profile()
    profiler.enable()
    result = await fs.apply_patch(corpus.patch)
    profiler.disable()
    await fs.close()
    if not result.ok:
        raise SystemExit(f"apply_patch failed: {result.text[:2000]}")
    corpus.check("apply_patch", tree)
    pstats.Stats(profiler).sort_stats(sort).print_stats(40)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=870, help="modules in the old tree")
    parser.add_argument("--rounds", type=int, default=7)
    available = ["local"] + (["linux"] if LinuxSandboxProvider is not None else [])
    parser.add_argument("--providers", nargs="+", choices=available, default=available)
    parser.add_argument("--output", type=Path, help="also write the table here, with a header")
    parser.add_argument(
        "--workdir",
        type=Path,
        help="build the trees beneath this folder (default: the system's temp folder); "
        "a tmpfs such as /dev/shm takes the file system's create cost out",
    )
    parser.add_argument(
        "--profile",
        nargs="?",
        const="cumulative",
        choices=["cumulative", "tottime"],
        help="instead of timing, profile one local apply_patch (sorted by this)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tinyagent-bench-patch-", dir=args.workdir) as tmp:
        workdir = Path(tmp)
        os.environ[JOURNAL_ENV] = str(workdir / "journal")
        corpus = Corpus(workdir, args.files)
        if args.profile:
            asyncio.run(profile_once(corpus, args.profile))
            return 0
        head = header(workdir, corpus, args.rounds)
        print("\n".join(head), flush=True)
        runs = asyncio.run(measure(corpus, args.providers, args.rounds))
    rows = table_lines(runs, corpus.sections)
    print("\n".join(rows), flush=True)
    write_table(args.output, head, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
