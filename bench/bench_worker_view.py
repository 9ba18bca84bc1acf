"""What the worker's own filesystem view costs at start-up, on a large tree.

Run: ``.venv/bin/python bench/bench_worker_view.py [--rounds N] [--files N]``.
The toolkit walks every root before a worker starts, to plan the secret masks
(``sandbox.secret_masks``) and to note the code-running files it protects
(``sandbox.code_files``), and again around every command; so start-up and each
command grow with the tree. Figures are medians over ``rounds`` fresh workers;
the ratios are against baselines measured in the same run: the same on an empty
root, and a bare ``os.scandir`` walk of the same tree in this process. Results go to stdout and to
bench/results/worker_view.txt.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

from tinyagent_fs.policy import SandboxPolicy
from tinyagent_fs.providers.linux import LinuxSandboxProvider

RESULTS = Path(__file__).parent / "results" / "worker_view.txt"


def make_tree(root: Path, files: int) -> None:
    """``files`` files in 100-file directories two levels deep, one secret per directory."""
    for index in range(files):
        folder = root / f"d{index // 1000:02}" / f"s{index // 100 % 10}"
        if index % 100 == 0:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / ".env").write_bytes(b"SECRET=1\n")
        (folder / f"f{index:05}.py").write_bytes(b"x = 1\n")


async def start_once(root: Path) -> tuple[float, float, dict]:
    """Seconds to the first answer of a new worker, then of one ``true`` command."""
    provider = LinuxSandboxProvider(root, SandboxPolicy())
    started = time.perf_counter()
    try:
        await provider.call("stat_path", path=str(root))
        first = time.perf_counter() - started
        report = provider.report
        started = time.perf_counter()
        await provider.call("run_command", command="true", workdir=str(root), timeout_s=10)
        return first, time.perf_counter() - started, report
    finally:
        await provider.close()


def scandir_walk(root: Path) -> float:
    started = time.perf_counter()
    pending = [str(root)]
    while pending:
        for entry in os.scandir(pending.pop()):
            if entry.is_dir(follow_symlinks=False):
                pending.append(entry.path)
    return time.perf_counter() - started


async def measure(rounds: int, files: int) -> list[str]:
    with tempfile.TemporaryDirectory() as empty_dir, tempfile.TemporaryDirectory() as tree_dir:
        empty, tree = Path(empty_dir), Path(tree_dir)
        make_tree(tree, files)
        empty_runs = [await start_once(empty) for _ in range(rounds)]
        tree_runs = [await start_once(tree) for _ in range(rounds)]
        walk = statistics.median(scandir_walk(tree) for _ in range(rounds))
    empty_start = statistics.median(first for first, _, _ in empty_runs)
    tree_start = statistics.median(first for first, _, _ in tree_runs)
    empty_command = statistics.median(command for _, command, _ in empty_runs)
    tree_command = statistics.median(command for _, command, _ in tree_runs)
    mask = statistics.median(report["masks"]["seconds"] for _, _, report in tree_runs)
    report = tree_runs[-1][2]["masks"]
    return [
        f"machine: {platform.machine()} {platform.release()}, {os.cpu_count()} cpus; "
        f"median of {rounds} fresh workers",
        f"tree: {files} files, {report['entries_walked']} entries walked, "
        f"{len(report['masked'])} secrets masked, {len(report['failed'])} failed",
        f"start-up, empty root: {empty_start * 1000:.1f} ms (baseline)",
        f"start-up, {files}-file root: {tree_start * 1000:.1f} ms "
        f"({tree_start / empty_start:.2f}x the empty root)",
        f"run_command true, empty root: {empty_command * 1000:.1f} ms (baseline)",
        f"run_command true, {files}-file root: {tree_command * 1000:.1f} ms "
        f"({tree_command / empty_command:.2f}x the empty root)",
        f"masks, planned in the toolkit and mounted: {mask * 1000:.1f} ms "
        f"({mask / walk:.2f}x a bare scandir walk of {walk * 1000:.1f} ms in this process)",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--files", type=int, default=20_000)
    args = parser.parse_args()
    lines = asyncio.run(measure(args.rounds, args.files))
    text = "\n".join(lines) + "\n"
    print(text, end="")
    RESULTS.write_text(text)


if __name__ == "__main__":
    main()
