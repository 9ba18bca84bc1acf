"""A sandboxed ``true`` on a started worker, on a 20,000-file root: what the toolkit's
walks around each command (code-running files, secret masks) cost.

Run with the package to measure on the path (this tree's, or an exported earlier
commit's for an A/B): ``PYTHONPATH=. .venv/bin/python bench/bench_command_tree.py``.
Prints the median of ``--runs`` commands.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from figures_sandbox import make_tree

from tinyagent_fs.policy import SandboxPolicy
from tinyagent_fs.providers.linux import LinuxSandboxProvider


async def measure(files: int, runs: int) -> float:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        make_tree(root, files)
        provider = LinuxSandboxProvider(root, SandboxPolicy())
        try:
            await provider.call("stat_path", path=str(root))
            times = []
            for _ in range(runs):
                started = time.perf_counter()
                await provider.call("run_command", command="true", workdir=folder, timeout_s=10)
                times.append(time.perf_counter() - started)
            return statistics.median(times)
        finally:
            await provider.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    seconds = asyncio.run(measure(args.files, args.runs))
    print(
        f"run_command true on a started worker, {args.files}-file root: "
        f"{seconds * 1000:.1f} ms (median of {args.runs})"
    )


if __name__ == "__main__":
    main()
